//! The fast path of [`super::decode`]: one pass over the bytes straight into the typed
//! event. `data` is decoded where it stands when `type` came before it (as every
//! producer here writes them), and borrowed as raw JSON until `type` is known otherwise. It says only "yes" or "no":
//! on "no" the caller runs the precise path, which names the offending field. Both accept
//! exactly the same events (the tests in `schemas/tests/wire.rs` run every case through
//! [`super::decode`], and the fixtures check both paths agree).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::canonical::Hash256;
use crate::envelope::{BenchmarkEvent, SCHEMA_VERSION};
use crate::payload::{EventType, Payload};

/// Decodes a valid event in one pass; `None` when anything is off.
pub(super) fn decode(text: &str) -> Option<BenchmarkEvent> {
    let mut de = serde_json::Deserializer::from_str(text);
    let event = de.deserialize_map(EventVisitor).ok()?;
    de.end().ok()?;
    Some(event)
}

/// An object key, borrowed from the input when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

struct EventVisitor;

/// Required fields not seen yet are an error; the message is never shown (the precise
/// path produces the one users see).
fn need<T, E: de::Error>(v: Option<T>) -> Result<T, E> {
    v.ok_or_else(|| E::custom("missing field"))
}

impl<'de> Visitor<'de> for EventVisitor {
    type Value = BenchmarkEvent;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a benchmark event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BenchmarkEvent, A::Error> {
        let mut version_ok = None;
        let mut event_id: Option<Uuid> = None;
        let mut run_id: Option<Uuid> = None;
        let mut task_id: Option<String> = None;
        let mut step_id: Option<Option<Uuid>> = None;
        let mut seq: Option<Option<u64>> = None;
        let mut ts: Option<Timestamp> = None;
        let mut policy_id: Option<String> = None;
        let mut cfg_hash: Option<Hash256> = None;
        let mut env_hash: Option<Hash256> = None;
        let mut seed: Option<Option<u64>> = None;
        let mut host: Option<String> = None;
        let mut event_type: Option<EventType> = None;
        // `data`, decoded when `type` came first, else raw until `type` is known.
        let mut payload: Option<Payload> = None;
        let mut raw_data: Option<&'de RawValue> = None;
        let mut extra = Map::new();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match key.as_ref() {
                "schema_version" => {
                    // Compared as a number, not as text, without allocating per event:
                    // `1.0` and `"1"` are not version 1 (the precise path agrees).
                    let raw: &RawValue = map.next_value()?;
                    version_ok = Some(
                        raw.get().bytes().all(|b| b.is_ascii_digit())
                            && raw.get().parse::<u32>() == Ok(SCHEMA_VERSION),
                    );
                }
                "event_id" => event_id = Some(map.next_value()?),
                "run_id" => run_id = Some(map.next_value()?),
                "task_id" => task_id = Some(map.next_value()?),
                "step_id" => step_id = Some(map.next_value()?),
                "seq" => seq = Some(map.next_value()?),
                "ts" => ts = Some(map.next_value()?),
                "policy_id" => policy_id = Some(map.next_value()?),
                "cfg_hash" => cfg_hash = Some(map.next_value()?),
                "env_hash" => env_hash = Some(map.next_value()?),
                "seed" => seed = Some(map.next_value()?),
                "host" => host = Some(map.next_value()?),
                "type" => {
                    if event_type.is_some() {
                        // A repeated `type` may retype a `data` already decoded: left to
                        // the precise path.
                        return Err(de::Error::custom("repeated type"));
                    }
                    let name: Cow<'de, str> = map.next_value::<Key<'de>>()?.0;
                    event_type = Some(
                        EventType::from_wire(&name)
                            .ok_or_else(|| de::Error::custom("unknown type"))?,
                    );
                }
                "data" => match event_type {
                    Some(event_type) => {
                        payload = Some(map.next_value_seed(PayloadOf(event_type))?);
                        raw_data = None;
                    }
                    None => raw_data = Some(map.next_value()?),
                },
                _ => {
                    extra.insert(key.into_owned(), map.next_value::<Value>()?);
                }
            }
        }
        if version_ok != Some(true) {
            return Err(de::Error::custom("unknown schema_version"));
        }
        let payload = match (payload, raw_data) {
            (_, Some(raw)) => PayloadOf(need(event_type)?)
                .deserialize(&mut serde_json::Deserializer::from_str(raw.get()))
                .map_err(de::Error::custom)?,
            (payload, None) => need(payload)?,
        };
        Ok(BenchmarkEvent {
            schema_version: SCHEMA_VERSION,
            event_id: need(event_id)?,
            run_id: need(run_id)?,
            task_id: need(task_id)?,
            step_id: need(step_id)?,
            seq: need(seq)?,
            ts: need(ts)?.0,
            policy_id: need(policy_id)?,
            cfg_hash: need(cfg_hash)?,
            env_hash: need(env_hash)?,
            seed: need(seed)?,
            host: need(host)?,
            payload,
            extra,
        })
    }
}

/// Decodes a `data` object into the payload of its event type.
struct PayloadOf(EventType);

impl<'de> DeserializeSeed<'de> for PayloadOf {
    type Value = Payload;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Payload, D::Error> {
        Ok(match self.0 {
            EventType::RunStart => Payload::RunStart(Deserialize::deserialize(d)?),
            EventType::RunStop => Payload::RunStop(Deserialize::deserialize(d)?),
            EventType::Step => Payload::Step(Deserialize::deserialize(d)?),
            EventType::ToolCall => Payload::ToolCall(Deserialize::deserialize(d)?),
            EventType::Deliberation => Payload::Deliberation(Deserialize::deserialize(d)?),
            EventType::ContextDecision => Payload::ContextDecision(Deserialize::deserialize(d)?),
            EventType::Failure => Payload::Failure(Deserialize::deserialize(d)?),
            EventType::OptimizerUpdate => Payload::OptimizerUpdate(Deserialize::deserialize(d)?),
            EventType::TestOutcome => Payload::TestOutcome(Deserialize::deserialize(d)?),
            EventType::TaskValidation => Payload::TaskValidation(Deserialize::deserialize(d)?),
            EventType::GenaiEvent => Payload::GenaiEvent(Deserialize::deserialize(d)?),
            EventType::ExperimentDecision => {
                Payload::ExperimentDecision(Deserialize::deserialize(d)?)
            }
        })
    }
}

/// An envelope `ts`, in the one format events carry.
#[derive(serde::Deserialize)]
pub(super) struct Timestamp(
    #[serde(with = "crate::envelope::ts_format")] pub(super) chrono::DateTime<chrono::Utc>,
);
