//! The one place that decides what a failure means, and so what the sink does about it.
//!
//! | class | examples | action |
//! |---|---|---|
//! | bad data | anything [`bench_schemas::decode`](fn@bench_schemas::decode) rejects | one `dead_letters` row, then `Term` |
//! | refused event | `implausible_ts`, `subject_mismatch`, `conflict` ([`crate::admission`]) | one `dead_letters` row, then `Term` |
//! | refused data | an insert fails with a code of [`RULES`] that blames the rows ([`Meaning::Data`]) | split the insert until the refused row stands alone, then retry that row alone: only a row refused [`Confirmation::attempts`] times in a row, with the same error, over at least [`Confirmation::over`], is dead-lettered (`rejected_by_clickhouse`) and terminated |
//! | insert limit | too many partitions for one insert ([`Meaning::InsertLimit`]) | split; the halves pass |
//! | transient | everything else: the transport, a peer replica, ZooKeeper, the server's state, HTTP-level failures, NATS reconnects | no ack, retry with capped exponential backoff, stop pulling meanwhile |
//!
//! An error earns "data" only when it names a data problem, and a row is dead-lettered
//! only when that error repeats for the row alone, spread in time: one ClickHouse code can
//! mean two things (32 is a RowBinary row shorter than its columns, or a remote replica
//! that died while a Distributed insert waited for it), and an error that comes from a
//! peer says nothing about the row. Anything not known to be about the data is transient:
//! retrying a healthy row costs time, dead-lettering it would cost the event. The writer
//! and the consumer ask here and never match on error types themselves.

use std::time::Duration;

use bench_schemas::DecodeError;

/// `dead_letters.error_class` of a row ClickHouse refused (the other classes are
/// [`DecodeError::class`]).
pub const REJECTED_BY_CLICKHOUSE: &str = "rejected_by_clickhouse";

/// What a failed ClickHouse insert means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsertFailure {
    /// The data of some row, or the insert's size, was refused: isolate it by splitting
    /// the insert, then confirm the refusal of a row standing alone.
    Rejected(String),
    /// Anything else: retry the same insert later.
    Transient(String),
}

/// What an error answer of ClickHouse says about the inserted rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    /// Some row's data: split until it stands alone, and dead-letter it once its
    /// refusal is confirmed.
    Data,
    /// A limit on the whole insert that its halves pass: split.
    InsertLimit,
    /// Nothing about the rows: retry the same insert.
    Transient,
}

/// One line of the classification: the errors it matches, what they mean, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The ClickHouse exception code (`src/Common/ErrorCodes.cpp`, stable across
    /// versions); `None` = any code, or none.
    pub code: Option<u32>,
    /// The code's name in ClickHouse, for people.
    pub name: &'static str,
    /// Text the error must contain for the rule to apply; `None` = any text.
    pub mentions: Option<&'static str>,
    pub meaning: Meaning,
    /// Why the error means that.
    pub reason: &'static str,
}

const fn rule(
    code: Option<u32>,
    name: &'static str,
    mentions: Option<&'static str>,
    meaning: Meaning,
    reason: &'static str,
) -> Rule {
    Rule {
        code,
        name,
        mentions,
        meaning,
        reason,
    }
}

const PEER: &str = "the error came from a connection to another server (a replica or shard of \
                    a Distributed insert), not from the rows";

/// Every ClickHouse error answer the sink knows, first match wins. An error that matches
/// no rule is [`Meaning::Transient`]: only what is known to blame the data may cost an
/// event.
#[rustfmt::skip]
pub const RULES: &[Rule] = &[
    // Text naming a connection to a peer wins over any code: 18.16 answers a synchronous
    // Distributed insert whose remote replica died with code 32 "Attempt to read after
    // eof: while receiving packet from <host:port>", and the same code without that text
    // is a short RowBinary row.
    rule(None, "(any)", Some("while receiving packet from"), Meaning::Transient, PEER),
    rule(None, "(any)", Some("while reading from socket"), Meaning::Transient, PEER),
    rule(None, "(any)", Some("while writing to socket"), Meaning::Transient, PEER),
    rule(None, "(any)", Some("Connection refused"), Meaning::Transient, PEER),
    rule(None, "(any)", Some("Connection reset by peer"), Meaning::Transient, PEER),
    // The rows' data.
    rule(Some(6), "CANNOT_PARSE_TEXT", None, Meaning::Data, "a value does not parse as its column's type"),
    rule(Some(25), "CANNOT_PARSE_ESCAPE_SEQUENCE", None, Meaning::Data, "a value does not parse"),
    rule(Some(26), "CANNOT_PARSE_QUOTED_STRING", None, Meaning::Data, "a value does not parse"),
    rule(Some(27), "CANNOT_PARSE_INPUT_ASSERTION_FAILED", None, Meaning::Data, "a value does not parse"),
    rule(Some(32), "ATTEMPT_TO_READ_AFTER_EOF", None, Meaning::Data, "a RowBinary row shorter than the columns (when no peer is named)"),
    rule(Some(33), "CANNOT_READ_ALL_DATA", None, Meaning::Data, "a RowBinary value shorter than its type (when no peer is named)"),
    rule(Some(38), "CANNOT_PARSE_DATE", None, Meaning::Data, "a value does not parse as a date"),
    rule(Some(41), "CANNOT_PARSE_DATETIME", None, Meaning::Data, "a value does not parse as a time"),
    rule(Some(53), "TYPE_MISMATCH", None, Meaning::Data, "a value of the wrong type"),
    rule(Some(69), "ARGUMENT_OUT_OF_BOUND", None, Meaning::Data, "a value out of its column's bounds"),
    rule(Some(70), "CANNOT_CONVERT_TYPE", None, Meaning::Data, "a value that does not convert to its column's type"),
    rule(Some(72), "CANNOT_PARSE_NUMBER", None, Meaning::Data, "a value does not parse as a number"),
    rule(Some(117), "INCORRECT_DATA", None, Meaning::Data, "a value the format refuses"),
    rule(Some(128), "TOO_LARGE_ARRAY_SIZE", None, Meaning::Data, "an array over the server's size limit"),
    rule(Some(131), "TOO_LARGE_STRING_SIZE", None, Meaning::Data, "a string over the server's size limit"),
    rule(Some(190), "SIZES_OF_ARRAYS_DOESNT_MATCH", None, Meaning::Data, "arrays of a row that must have one length differ"),
    rule(Some(321), "VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE", None, Meaning::Data, "a value out of its type's range"),
    rule(Some(349), "CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN", None, Meaning::Data, "a NULL in a column that is not Nullable"),
    rule(Some(376), "CANNOT_PARSE_UUID", None, Meaning::Data, "a value does not parse as a UUID"),
    rule(Some(395), "FUNCTION_THROW_IF_VALUE_IS_NON_ZERO", None, Meaning::Data, "a check of a materialized view refused the row"),
    rule(Some(469), "VIOLATED_CONSTRAINT", None, Meaning::Data, "a CHECK constraint refused the row (newer servers)"),
    // A limit on the insert, passed by its halves.
    rule(Some(252), "TOO_MANY_PARTS", Some("partitions"), Meaning::InsertLimit, "too many partitions for a single INSERT block: the halves pass"),
    // Named here for their reason; any code not listed is transient too.
    rule(Some(252), "TOO_MANY_PARTS", None, Meaning::Transient, "too many parts: merges are behind inserts and catch up"),
    rule(Some(159), "TIMEOUT_EXCEEDED", None, Meaning::Transient, "the server or a peer was too slow"),
    rule(Some(209), "SOCKET_TIMEOUT", None, Meaning::Transient, "a connection to a peer timed out"),
    rule(Some(210), "NETWORK_ERROR", None, Meaning::Transient, "a connection to a peer failed"),
    rule(Some(279), "ALL_CONNECTION_TRIES_FAILED", None, Meaning::Transient, "no replica of a shard answered"),
    rule(Some(242), "TABLE_IS_READ_ONLY", None, Meaning::Transient, "a replica lost ZooKeeper and is read-only until it is back"),
    rule(Some(225), "NO_ZOOKEEPER", None, Meaning::Transient, "ZooKeeper is away"),
    rule(Some(999), "KEEPER_EXCEPTION", None, Meaning::Transient, "a ZooKeeper error"),
    rule(Some(319), "UNKNOWN_STATUS_OF_INSERT", None, Meaning::Transient, "the insert may or may not have landed; dedup absorbs a second copy"),
    rule(Some(241), "MEMORY_LIMIT_EXCEEDED", None, Meaning::Transient, "the server is short of memory now"),
    rule(Some(202), "TOO_MANY_SIMULTANEOUS_QUERIES", None, Meaning::Transient, "the server is busy now"),
    rule(Some(60), "UNKNOWN_TABLE", None, Meaning::Transient, "a table is being migrated or recreated"),
    rule(Some(394), "QUERY_WAS_CANCELLED", None, Meaning::Transient, "the server cancelled the insert (shutting down)"),
];

/// How a row refused on its own is confirmed before it is dead-lettered: the same error
/// for that row alone `attempts` times, the first and last at least `over` apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Confirmation {
    /// Inserts of the row alone that must fail with the same data error. Default 3.
    pub attempts: u32,
    /// Least time between the first and the last of them. Default 2 s.
    pub over: Duration,
}

impl Confirmation {
    /// 3 attempts over at least 2 s: a replica dying, a server restarting or a proxy
    /// answering garbage does not look the same three times over two seconds.
    pub const DEFAULT: Confirmation = Confirmation {
        attempts: 3,
        over: Duration::from_secs(2),
    };

    /// Wait between two attempts.
    pub fn spacing(&self) -> Duration {
        self.over / self.attempts.saturating_sub(1).max(1)
    }
}

/// The meaning of a ClickHouse error answer (`body`), by [`RULES`].
pub fn meaning(body: &str) -> Meaning {
    let code = exception_code(body);
    RULES
        .iter()
        .find(|rule| {
            rule.code.is_none_or(|c| Some(c) == code)
                && rule.mentions.is_none_or(|text| body.contains(text))
        })
        .map_or(Meaning::Transient, |rule| rule.meaning)
}

/// Classifies a failed insert.
pub fn insert_failure(error: &clickhouse::error::Error) -> InsertFailure {
    use clickhouse::error::Error;
    let text = error.to_string();
    match error {
        Error::BadResponse(body) => match meaning(body) {
            Meaning::Data | Meaning::InsertLimit => InsertFailure::Rejected(text),
            Meaning::Transient => InsertFailure::Transient(text),
        },
        // Serializing a row failed here, before anything was sent: that row can never be
        // written (the refusal is still confirmed like any other).
        Error::Custom(_) | Error::SequenceMustHaveLength | Error::InvalidUtf8Encoding(_) => {
            InsertFailure::Rejected(text)
        }
        // Network, timeouts and everything else at the HTTP level.
        _ => InsertFailure::Transient(text),
    }
}

/// Whether two refusals of one row are the same error: the same exception code, or
/// the same text when there is none.
pub fn same_refusal(a: &str, b: &str) -> bool {
    match (exception_code(a), exception_code(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// The exception code of a ClickHouse error, if it is one.
pub fn clickhouse_code(error: &clickhouse::error::Error) -> Option<u32> {
    match error {
        clickhouse::error::Error::BadResponse(body) => exception_code(body),
        _ => None,
    }
}

/// ClickHouse exception codes that mean the credentials were refused: 516
/// AUTHENTICATION_FAILED (current servers), 192 UNKNOWN_USER and 193 WRONG_PASSWORD
/// (18.16 and other old servers).
const AUTH_ERROR_CODES: &[u32] = &[192, 193, 516];

/// Whether ClickHouse refused the user or password (as opposed to being unreachable):
/// retrying cannot help, the settings must change.
pub fn is_auth_failure(error: &clickhouse::error::Error) -> bool {
    matches!(error, clickhouse::error::Error::BadResponse(body)
        if exception_code(body).is_some_and(|code| AUTH_ERROR_CODES.contains(&code)))
}

/// The `Code: N` of a ClickHouse exception text (`Code: 27, e.displayText() = ...` on
/// 18.16, `Code: 27. DB::Exception: ...` today).
fn exception_code(body: &str) -> Option<u32> {
    let rest = &body[body.find("Code: ")? + "Code: ".len()..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    rest[..digits].parse().ok()
}

/// A message that is not an acceptable event: what `dead_letters` says about it.
#[derive(Debug)]
pub struct BadData {
    /// `DecodeError::class`.
    pub class: &'static str,
    /// The error text.
    pub error: String,
}

/// The dead-letter class and text of an undecodable message.
pub fn bad_data(error: &DecodeError) -> (&'static str, String) {
    (error.class(), error.to_string())
}

/// Capped exponential backoff between retries of a transient failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// First delay.
    pub initial: Duration,
    /// Longest delay; reached after a few doublings and kept while the failure lasts.
    pub max: Duration,
}

impl Backoff {
    /// The delay before retry number `attempt` (1 = first retry).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32
            .checked_shl(attempt.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.initial.saturating_mul(factor).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clickhouse::error::Error;

    #[test]
    fn data_codes_are_rejections_others_transient() {
        let parse = Error::BadResponse(
            "Code: 27, e.displayText() = DB::Exception: Cannot parse input".into(),
        );
        assert!(matches!(insert_failure(&parse), InsertFailure::Rejected(_)));
        let modern = Error::BadResponse("Code: 395. DB::Exception: Value passed".into());
        assert!(matches!(
            insert_failure(&modern),
            InsertFailure::Rejected(_)
        ));
        let memory = Error::BadResponse("Code: 241, e.displayText() = Memory limit".into());
        assert!(matches!(
            insert_failure(&memory),
            InsertFailure::Transient(_)
        ));
        let missing_table = Error::BadResponse("Code: 60, Table x doesn't exist".into());
        assert!(matches!(
            insert_failure(&missing_table),
            InsertFailure::Transient(_)
        ));
        assert!(matches!(
            insert_failure(&Error::TimedOut),
            InsertFailure::Transient(_)
        ));
        let partitions = Error::BadResponse(
            "Code: 252. DB::Exception: Too many partitions for single INSERT block (more than \
             100). (TOO_MANY_PARTS)"
                .into(),
        );
        assert!(matches!(
            insert_failure(&partitions),
            InsertFailure::Rejected(_)
        ));
        let merges_behind = Error::BadResponse(
            "Code: 252. DB::Exception: Too many parts (300). Merges are processing \
             significantly slower than inserts. (TOO_MANY_PARTS)"
                .into(),
        );
        assert!(matches!(
            insert_failure(&merges_behind),
            InsertFailure::Transient(_)
        ));
        let uuid = Error::BadResponse("Code: 376. DB::Exception: Cannot parse uuid".into());
        assert!(matches!(insert_failure(&uuid), InsertFailure::Rejected(_)));
        let no_code = Error::BadResponse("502 Bad Gateway".into());
        assert!(matches!(
            insert_failure(&no_code),
            InsertFailure::Transient(_)
        ));
    }

    /// What 18.16 answers a synchronous Distributed insert whose remote replica died.
    const REPLICA_DIED: &str = "Code: 32, e.displayText() = DB::Exception: Attempt to read \
                                after eof: while receiving packet from 127.0.0.1:41234, \
                                e.what() = DB::Exception";

    #[test]
    fn code_32_is_data_only_when_no_peer_is_named() {
        assert_eq!(meaning(REPLICA_DIED), Meaning::Transient);
        let short_row = "Code: 32, e.displayText() = DB::Exception: Attempt to read after eof";
        assert_eq!(meaning(short_row), Meaning::Data);
        let peer_33 = "Code: 33. DB::Exception: Cannot read all data. Bytes read: 0. Bytes \
                       expected: 8.: while receiving packet from shard-2:9000";
        assert_eq!(meaning(peer_33), Meaning::Transient);
    }

    #[test]
    fn transport_peer_and_server_state_codes_are_transient() {
        for code in [159, 202, 209, 210, 225, 241, 242, 279, 319, 394, 999] {
            let body = format!("Code: {code}, e.displayText() = DB::Exception: something");
            assert_eq!(meaning(&body), Meaning::Transient, "{code}");
        }
        assert_eq!(
            meaning("Code: 4242. DB::Exception: new"),
            Meaning::Transient
        );
        assert_eq!(
            meaning("<html>503 Service Unavailable</html>"),
            Meaning::Transient
        );
    }

    #[test]
    fn every_rule_has_a_reason_and_every_data_code_is_reachable() {
        for rule in RULES {
            assert!(!rule.reason.is_empty() && !rule.name.is_empty(), "{rule:?}");
            if let (Some(code), Meaning::Data) = (rule.code, rule.meaning) {
                let body = format!("Code: {code}. DB::Exception: refused");
                assert_eq!(meaning(&body), Meaning::Data, "{code}");
            }
        }
    }

    #[test]
    fn refusals_are_the_same_by_code() {
        assert!(same_refusal(
            "Code: 27, e.displayText() = at row 1",
            "Code: 27. DB::Exception: at row 2"
        ));
        assert!(!same_refusal("Code: 27, x", "Code: 6, x"));
        assert!(same_refusal("bad row", "bad row"));
        assert!(!same_refusal("bad row", "Code: 6, x"));
    }

    #[test]
    fn confirmation_spreads_its_attempts_over_its_span() {
        assert_eq!(Confirmation::DEFAULT.spacing(), Duration::from_secs(1));
        let one = Confirmation {
            attempts: 1,
            over: Duration::from_secs(2),
        };
        assert_eq!(one.spacing(), Duration::from_secs(2));
    }

    #[test]
    fn refused_credentials_are_told_from_other_errors() {
        let old = Error::BadResponse(
            "Code: 193, e.displayText() = DB::Exception: Wrong password for user default".into(),
        );
        let new =
            Error::BadResponse("Code: 516. DB::Exception: default: Authentication failed".into());
        assert!(is_auth_failure(&old) && is_auth_failure(&new));
        assert!(!is_auth_failure(&Error::TimedOut));
        let other = Error::BadResponse("Code: 60, Table x doesn't exist".into());
        assert!(!is_auth_failure(&other));
    }

    #[test]
    fn exception_codes_are_parsed_in_both_formats() {
        assert_eq!(exception_code("Code: 60, e.displayText()"), Some(60));
        assert_eq!(exception_code("Code: 6. DB::Exception"), Some(6));
        assert_eq!(exception_code("no code here"), None);
        assert_eq!(exception_code("Code: x"), None);
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let b = Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(5),
        };
        assert_eq!(b.delay(1), Duration::from_millis(100));
        assert_eq!(b.delay(2), Duration::from_millis(200));
        assert_eq!(b.delay(4), Duration::from_millis(800));
        assert_eq!(b.delay(10), Duration::from_secs(5));
        assert_eq!(b.delay(100), Duration::from_secs(5));
    }
}
