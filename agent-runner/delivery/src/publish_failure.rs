//! Every failed publish decided in one place: may a retry deliver it (keep it in the
//! spool, back off) or never (quarantine it, go on with the rest)?
//!
//! | failure | seen as | verdict |
//! |---|---|---|
//! | broker away, ack lost, client buffer full | `TimedOut`, `BrokenPipe`, `MaxAckPending`, any client-side error | transient |
//! | "no responders" (status 503) | `StreamNotFound` | decided by asking JetStream, see [`no_responders`] |
//! | message bigger than the server's `max_payload` | `MaxPayloadExceeded` | permanent (`refused`) |
//! | message bigger than the stream's `max_msg_size` | JetStream error 10054 | permanent (`refused`) |
//! | expectation headers not met | `WrongLastMessageId`, `WrongLastSequence` | permanent (`refused`; the runner never sets them) |
//! | anything else JetStream says (stream full or sealed, storage failure, no leader, JetStream off) | other API errors | transient: a fault of the stream, which an operator fixes; the records wait |
//!
//! Only faults of the message itself are permanent. A fault of the stream or the cluster
//! must not quarantine every event that meets it.
//!
//! "No responders" is ambiguous: it is what a publish gets when no stream captures the
//! subject, but also while a stream's leader is being elected, or before the sink has
//! created the stream at all. So it is permanent only when JetStream itself answers that
//! no stream captures the record's subject *and* that a stream captures the runner's own
//! prefix (`<prefix>.events.>`): the broker is up and set up, and this record was written
//! for another one (typically under another `--subject-prefix`). A JetStream that does not
//! answer, or that has no stream for the runner's own prefix either, keeps the record in
//! the spool (a missing stream is reported as the reason).

use async_nats::jetstream::context::{GetStreamByNameErrorKind, PublishError, PublishErrorKind};
use async_nats::jetstream::{self, ErrorCode};
use bench_schemas::SubjectPrefix;

use crate::quarantine::QuarantineKind;

/// What a failed publish means for its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A retry may deliver it: keep it (spool) and try again later. Why, in words.
    Transient(String),
    /// Nothing will ever deliver it: quarantine it with this kind and reason.
    Permanent(QuarantineKind, String),
    /// "No responders": ask JetStream with [`no_responders`] before deciding.
    NoResponders,
}

/// The verdict on `error`, as far as the error alone tells.
pub fn classify(error: &PublishError) -> Verdict {
    match error.kind() {
        PublishErrorKind::StreamNotFound => Verdict::NoResponders,
        PublishErrorKind::MaxPayloadExceeded
        | PublishErrorKind::WrongLastMessageId
        | PublishErrorKind::WrongLastSequence => {
            Verdict::Permanent(QuarantineKind::Refused, error.to_string())
        }
        PublishErrorKind::Other => match jetstream_error(error) {
            Some(e) if e.error_code() == ErrorCode::STREAM_MESSAGE_EXCEEDS_MAXIMUM => {
                Verdict::Permanent(
                    QuarantineKind::Refused,
                    format!("refused by JetStream: {e}"),
                )
            }
            Some(e) => Verdict::Transient(format!("JetStream: {e}")),
            None => Verdict::Transient(error_chain(error)),
        },
        PublishErrorKind::TimedOut
        | PublishErrorKind::BrokenPipe
        | PublishErrorKind::MaxAckPending => Verdict::Transient(error_chain(error)),
    }
}

/// The verdict on a "no responders" answer to a publish on `subject` (see the module
/// docs): two `STREAM.NAMES` requests, one for the subject, one for `prefix`'s events.
pub async fn no_responders(
    js: &jetstream::Context,
    prefix: &SubjectPrefix,
    subject: &str,
) -> Verdict {
    match js.stream_by_subject(subject).await {
        Ok(stream) => {
            return Verdict::Transient(format!(
                "stream {stream} captures {subject} but did not answer (no leader yet?)"
            ))
        }
        Err(e) if e.kind() == GetStreamByNameErrorKind::InvalidSubject => {
            return Verdict::Permanent(
                QuarantineKind::Refused,
                format!("{subject:?} is not a valid NATS subject"),
            )
        }
        Err(e) if e.kind() != GetStreamByNameErrorKind::NotFound => {
            return Verdict::Transient(format!(
                "no responders on {subject}, and JetStream did not answer which stream captures it: {}",
                error_chain(&e)
            ))
        }
        Err(_) => {}
    }
    let own = prefix.all_events();
    match js.stream_by_subject(own.as_str()).await {
        Ok(stream) => Verdict::Permanent(
            QuarantineKind::NoStream,
            format!(
                "no stream captures {subject} (stream {stream} captures this runner's {own}; was it written under another --subject-prefix?)"
            ),
        ),
        Err(e) if e.kind() == GetStreamByNameErrorKind::NotFound => Verdict::Transient(format!(
            "no stream captures {own}: create it (the sink does at start; or --create-stream)"
        )),
        Err(e) => Verdict::Transient(format!(
            "JetStream did not answer which stream captures {own}: {}",
            error_chain(&e)
        )),
    }
}

/// The JetStream API error behind a publish error, if the server sent one.
fn jetstream_error(error: &PublishError) -> Option<&jetstream::Error> {
    std::error::Error::source(error)?.downcast_ref::<jetstream::Error>()
}

/// `error` and its sources, `: `-separated.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_faults_of_the_message_are_permanent() {
        let kinds = [
            (PublishErrorKind::TimedOut, false),
            (PublishErrorKind::BrokenPipe, false),
            (PublishErrorKind::MaxAckPending, false),
            (PublishErrorKind::Other, false),
            (PublishErrorKind::MaxPayloadExceeded, true),
        ];
        for (kind, permanent) in kinds {
            let verdict = classify(&PublishError::new(kind));
            assert_eq!(
                matches!(verdict, Verdict::Permanent(..)),
                permanent,
                "{kind:?}: {verdict:?}"
            );
        }
        assert_eq!(
            classify(&PublishError::new(PublishErrorKind::StreamNotFound)),
            Verdict::NoResponders
        );
    }
}
