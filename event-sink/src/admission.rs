//! What a decoded event must also satisfy before the sink stores it, and which copy of an
//! event is the one stored.
//!
//! - **Plausible `ts`**: the typed tables are partitioned by year of `ts`, so a producer's
//!   clock chooses partitions. An event whose `ts` is before [`EARLIEST_TS`] (2015-01-01,
//!   older than any trajectory worth importing) or more than [`FUTURE_SLACK`] (one day)
//!   after the sink received it is dead-lettered as `implausible_ts`. Inside that window
//!   a table has one partition per year since 2015, and no insert can touch more.
//! - **Subject agrees with body**: `<prefix>.events.<run_id>.<type>` must name the
//!   body's `run_id` and `type`, or `bench.events.*.failure` subscribers could be fed
//!   anything; otherwise `subject_mismatch`.
//! - **First write wins** ([`resolve`]): per `event_id`, the stored event (looked up in
//!   `event_ids`, which ClickHouse fills from `events_raw` with `sipHash64(raw)`) or else
//!   the batch's copy with the lowest stream sequence is the original. A copy with the
//!   same body hash is a duplicate (acked, not written again); a different body is a
//!   `conflict`, dead-lettered with the new bytes and a text naming the original, which
//!   stays what every query shows. Only bodies whose id is stored or repeated in the
//!   batch are hashed, so a new event costs no hashing.
//!
//! Pure functions: the lookup itself is the writer's.

use std::collections::HashMap;
use std::hash::Hasher;

use bench_schemas::{Decoded, SubjectPrefix};
use uuid::Uuid;

use crate::failure::BadData;

/// `dead_letters.error_class` of an event whose `ts` is outside the accepted window.
pub const IMPLAUSIBLE_TS: &str = "implausible_ts";
/// `dead_letters.error_class` of a message whose subject names another run or type.
pub const SUBJECT_MISMATCH: &str = "subject_mismatch";
/// `dead_letters.error_class` of a different body under an already stored `event_id`.
pub const CONFLICT: &str = "conflict";

/// Earliest accepted `ts`: 2015-01-01T00:00:00Z, epoch seconds. The same bound is in
/// migration 0005.
pub const EARLIEST_TS: i64 = 1_420_070_400;
/// How far past the sink's clock a `ts` may be (runner clocks drift), seconds.
pub const FUTURE_SLACK: i64 = 86_400;

/// Checks what decoding cannot: a plausible `ts` (against `received_at`, epoch seconds)
/// and a `subject` that names the body's run and type.
pub fn admit(
    event: &Decoded,
    subject: &str,
    prefix: &SubjectPrefix,
    received_at: u32,
) -> Result<(), BadData> {
    let ts = event.ts().timestamp();
    if ts < EARLIEST_TS || ts > i64::from(received_at) + FUTURE_SLACK {
        return Err(BadData {
            class: IMPLAUSIBLE_TS,
            error: format!(
                "ts {} is outside the accepted window: 2015-01-01T00:00:00Z to one day \
                 after the sink received it",
                event.ts().to_rfc3339()
            ),
        });
    }
    let expected_type = event.event_type().as_str();
    let agrees = subject
        .strip_prefix(prefix.as_str())
        .and_then(|rest| rest.strip_prefix(".events."))
        .and_then(|rest| rest.split_once('.'))
        .is_some_and(|(run, event_type)| {
            event_type == expected_type && Uuid::try_parse(run).is_ok_and(|r| r == event.run_id())
        });
    if !agrees {
        return Err(BadData {
            class: SUBJECT_MISMATCH,
            error: format!(
                "subject {subject:?} does not match the body: expected {:?}",
                prefix.event_subject(event.run_id(), event.event_type())
            ),
        });
    }
    Ok(())
}

/// The body hash stored in `event_ids.body_hash`: SipHash-2-4 with a zero key, which is
/// what ClickHouse's `sipHash64` computes (migration 0005 hashes stored bodies with it),
/// at about a nanosecond per byte.
pub fn body_hash(body: &[u8]) -> u64 {
    // std's SipHasher is deprecated as a HashMap hasher, not as SipHash-2-4: it is the
    // exact function needed here, with no extra dependency.
    #[allow(deprecated)]
    let mut hasher = std::hash::SipHasher::new();
    hasher.write(body);
    hasher.finish()
}

/// The stored original of an event, from `event_ids`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Original {
    /// Body hash of the original.
    pub body_hash: u64,
    /// Stream sequence of the message that stored it.
    pub stream_seq: u64,
}

/// One accepted event of a batch, as [`resolve`] needs it; `I` is how the batch names its
/// items (first write wins only hands it back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate<I> {
    /// Its index in the batch.
    pub index: I,
    /// The event's id.
    pub event_id: Uuid,
    /// Its body hash.
    pub body_hash: u64,
    /// Stream sequence of its message.
    pub stream_seq: u64,
}

/// What first write wins makes of a batch's accepted events.
#[derive(Debug, PartialEq, Eq)]
pub struct Verdicts<I> {
    /// Copies of an original with the same body: acked, not written.
    pub duplicates: Vec<I>,
    /// Different bodies under a known event_id, with the dead-letter text naming the
    /// original.
    pub conflicts: Vec<(I, String)>,
}

/// Decides, per event_id, which copy is the original and what the others are. `stored`
/// holds the originals already in ClickHouse; otherwise the candidate with the lowest
/// stream sequence is the original (it is written, the others are not).
pub fn resolve<I: Copy>(
    candidates: &[Candidate<I>],
    stored: &HashMap<Uuid, Original>,
) -> Verdicts<I> {
    let mut originals: HashMap<Uuid, (Original, Option<I>)> = stored
        .iter()
        .map(|(id, original)| (*id, (*original, None)))
        .collect();
    let mut by_stream: Vec<&Candidate<I>> = candidates.iter().collect();
    by_stream.sort_unstable_by_key(|c| c.stream_seq);
    let mut verdicts = Verdicts {
        duplicates: Vec::new(),
        conflicts: Vec::new(),
    };
    for candidate in by_stream {
        let Some((original, in_batch)) = originals.get(&candidate.event_id) else {
            let original = Original {
                body_hash: candidate.body_hash,
                stream_seq: candidate.stream_seq,
            };
            originals.insert(candidate.event_id, (original, Some(candidate.index)));
            continue;
        };
        if original.body_hash == candidate.body_hash {
            verdicts.duplicates.push(candidate.index);
        } else {
            let whence = if in_batch.is_some() {
                "received"
            } else {
                "stored"
            };
            verdicts.conflicts.push((
                candidate.index,
                format!(
                    "event_id {} was first {whence} from stream message {} with a different \
                     body; first write wins, this copy is not stored",
                    candidate.event_id, original.stream_seq
                ),
            ));
        }
    }
    verdicts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_hash_is_clickhouse_siphash64() {
        // SELECT sipHash64(''), sipHash64('abc') on ClickHouse 18.16 and 26.x.
        assert_eq!(body_hash(b""), 2_202_906_307_356_721_367);
        assert_eq!(body_hash(b"abc"), 4_596_069_200_710_135_518);
    }

    fn candidate(index: u32, id: u128, body_hash: u64, stream_seq: u64) -> Candidate<u32> {
        Candidate {
            index,
            event_id: Uuid::from_u128(id),
            body_hash,
            stream_seq,
        }
    }

    #[test]
    fn the_stored_original_wins_over_every_copy() {
        let stored = HashMap::from([(
            Uuid::from_u128(1),
            Original {
                body_hash: 10,
                stream_seq: 3,
            },
        )]);
        let verdicts = resolve(
            &[
                candidate(0, 1, 10, 50),
                candidate(1, 1, 11, 40),
                candidate(2, 2, 7, 41),
            ],
            &stored,
        );
        assert_eq!(verdicts.duplicates, vec![0]);
        assert_eq!(verdicts.conflicts.len(), 1);
        assert_eq!(verdicts.conflicts[0].0, 1);
        assert!(verdicts.conflicts[0]
            .1
            .contains("stored from stream message 3"));
    }

    #[test]
    fn within_a_batch_the_earliest_stream_message_wins() {
        let verdicts = resolve(
            &[
                candidate(0, 1, 11, 9),
                candidate(1, 1, 10, 8),
                candidate(2, 1, 10, 12),
            ],
            &HashMap::new(),
        );
        assert_eq!(verdicts.duplicates, vec![2]);
        assert_eq!(verdicts.conflicts.len(), 1);
        assert_eq!(verdicts.conflicts[0].0, 0);
        assert!(verdicts.conflicts[0]
            .1
            .contains("received from stream message 8"));
    }
}
