//! The one place that decides what a failure means, and so what the sink does about it.
//!
//! | class | examples | action |
//! |---|---|---|
//! | bad data | anything [`schemas::decode`](fn@schemas::decode) rejects | one `dead_letters` row, then `Term` |
//! | rejected row | ClickHouse refuses a row's data (parse/type/size codes), or an insert touches too many partitions | split the insert, retry the halves, dead-letter only the row it narrows down to, `Term` it |
//! | refused event | `implausible_ts`, `subject_mismatch`, `conflict` ([`crate::admission`]) | one `dead_letters` row, then `Term` |
//! | transient | ClickHouse unreachable, 5xx, timeouts, any other server error, NATS reconnects | no ack, retry with capped exponential backoff, stop pulling meanwhile |
//!
//! Anything not known to be about the data is transient: retrying a healthy row costs
//! time, dead-lettering it would cost the event. The writer and the consumer ask here
//! and never match on error types themselves.

use std::time::Duration;

use schemas::DecodeError;

/// `dead_letters.error_class` of a row ClickHouse refused (the other classes are
/// [`DecodeError::class`]).
pub const REJECTED_BY_CLICKHOUSE: &str = "rejected_by_clickhouse";

/// What a failed ClickHouse insert means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsertFailure {
    /// The data of some row was refused: isolate it by splitting the insert.
    Rejected(String),
    /// Anything else: retry the same insert later.
    Transient(String),
}

/// ClickHouse exception codes that blame the inserted data, not the server. Codes from
/// `src/Common/ErrorCodes.cpp`; stable across versions.
/// Each can never succeed on retry with the same rows: splitting the insert either
/// isolates the refused row (dead-lettered) or, for a limit on the whole insert (too many
/// partitions), lets the halves succeed.
const DATA_ERROR_CODES: &[u32] = &[
    6,   // CANNOT_PARSE_TEXT
    25,  // CANNOT_PARSE_ESCAPE_SEQUENCE
    26,  // CANNOT_PARSE_QUOTED_STRING
    27,  // CANNOT_PARSE_INPUT_ASSERTION_FAILED
    32,  // ATTEMPT_TO_READ_AFTER_EOF (a RowBinary row shorter than the columns)
    33,  // CANNOT_READ_ALL_DATA
    38,  // CANNOT_PARSE_DATE
    41,  // CANNOT_PARSE_DATETIME
    53,  // TYPE_MISMATCH
    69,  // ARGUMENT_OUT_OF_BOUND
    70,  // CANNOT_CONVERT_TYPE
    72,  // CANNOT_PARSE_NUMBER
    117, // INCORRECT_DATA
    128, // TOO_LARGE_ARRAY_SIZE
    131, // TOO_LARGE_STRING_SIZE
    190, // SIZES_OF_ARRAYS_DOESNT_MATCH
    321, // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
    349, // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
    376, // CANNOT_PARSE_UUID
    395, // FUNCTION_THROW_IF_VALUE_IS_NON_ZERO (checks in materialized views)
    469, // VIOLATED_CONSTRAINT (CHECK constraints, newer servers)
];

/// TOO_MANY_PARTS: either "too many partitions for single INSERT block" (more than
/// `max_partitions_per_insert_block`, 100 by default on current servers), which the same
/// insert never passes but its halves do, or "too many parts" (merges behind inserts),
/// which passes once merges catch up. Told apart by the text.
const TOO_MANY_PARTS: u32 = 252;

/// Classifies a failed insert.
pub fn insert_failure(error: &clickhouse::error::Error) -> InsertFailure {
    use clickhouse::error::Error;
    let text = error.to_string();
    match error {
        Error::BadResponse(body) if exception_code(body).is_some_and(is_data_error) => {
            InsertFailure::Rejected(text)
        }
        Error::BadResponse(body)
            if exception_code(body) == Some(TOO_MANY_PARTS) && body.contains("partitions") =>
        {
            InsertFailure::Rejected(text)
        }
        // Serializing a row failed: that row can never be written.
        Error::Custom(_) | Error::SequenceMustHaveLength | Error::InvalidUtf8Encoding(_) => {
            InsertFailure::Rejected(text)
        }
        _ => InsertFailure::Transient(text),
    }
}

/// The exception code of a ClickHouse error answer, if it is one.
pub fn clickhouse_code(error: &clickhouse::error::Error) -> Option<u32> {
    match error {
        clickhouse::error::Error::BadResponse(body) => exception_code(body),
        _ => None,
    }
}

fn is_data_error(code: u32) -> bool {
    DATA_ERROR_CODES.contains(&code)
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
