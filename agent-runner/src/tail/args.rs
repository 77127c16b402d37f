//! `agent-runner tail` flags and environment → a validated [`TailConfig`].

use bench_nats::{NatsArgs, StreamSpec};
use bench_schemas::EventType;
use chrono::{DateTime, Utc};
use clap::Args;
use uuid::Uuid;

use super::{Filter, TailConfig};
use crate::error::Error;

/// `agent-runner tail`.
#[derive(Debug, Args)]
#[command(mut_arg("subject_prefix", |a| a
    .help("Subject prefix of the events (<prefix>.events.<run_id>.<type>)")
    .default_value("bench")))]
#[command(mut_arg("stream", |a| a.help("The events stream").default_value("BENCH_EVENTS")))]
pub struct TailArgs {
    /// Only these runs (run ids, comma-separated or repeated).
    #[arg(long, env = "BENCH_TAIL_RUN", value_delimiter = ',')]
    pub run: Vec<Uuid>,
    /// Only these event types (run_start, run_stop, step, tool_call, deliberation,
    /// context_decision, failure, optimizer_update).
    #[arg(long = "type", env = "BENCH_TAIL_TYPE", value_delimiter = ',', value_parser = event_type)]
    pub types: Vec<EventType>,
    /// Only these tasks (task ids).
    #[arg(long, env = "BENCH_TAIL_TASK", value_delimiter = ',')]
    pub task: Vec<String>,
    /// Only these policies (policy ids).
    #[arg(long, env = "BENCH_TAIL_POLICY", value_delimiter = ',')]
    pub policy: Vec<String>,
    /// First show the last N matching events stored in the stream, then live ones.
    #[arg(long, env = "BENCH_TAIL_LAST")]
    pub last: Option<usize>,
    /// First show the matching events stored since this time: RFC 3339
    /// (2026-01-02T15:04:05Z) or an age (90s, 10m, 2h, 1d).
    #[arg(long, env = "BENCH_TAIL_SINCE", value_parser = since)]
    pub since: Option<DateTime<Utc>>,
    /// Print each event's JSON as published (one line each) instead of a readable line.
    #[arg(long, env = "BENCH_TAIL_JSON")]
    pub json: bool,
    /// The NATS server and stream to read from (`--subject-prefix` and `--stream`
    /// included, worded above for what `tail` reads).
    #[command(flatten)]
    pub nats: NatsArgs,
}

impl TailArgs {
    /// The validated config.
    pub fn into_config(mut self) -> Result<TailConfig, Error> {
        let prefix = self.nats.subject_prefix.take().unwrap_or_default();
        let stream = self.nats.stream.take();
        Ok(TailConfig {
            nats: self
                .nats
                .resolve()
                .map_err(|e| Error::Config(e.to_string()))?,
            prefix,
            stream: stream.unwrap_or_else(|| StreamSpec::default().name),
            filter: Filter {
                runs: self.run,
                types: self.types,
                tasks: self.task,
                policies: self.policy,
            },
            last: self.last,
            since: self.since,
            json: self.json,
        })
    }
}

fn event_type(s: &str) -> Result<EventType, String> {
    EventType::from_wire(s).ok_or_else(|| {
        let all: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
        format!("unknown event type {s:?}; one of {}", all.join(", "))
    })
}

/// `--since`: an RFC 3339 time, or an age before now (`90s`, `10m`, `2h`, `1d`); a time
/// JetStream cannot be asked for (outside 1677..2262) is an error, not a crash or a guess.
fn since(s: &str) -> Result<DateTime<Utc>, String> {
    let in_range = |t: DateTime<Utc>| {
        t.timestamp_nanos_opt()
            .map(|_| t)
            .ok_or_else(|| format!("{s:?} is too far from now"))
    };
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return in_range(t.with_timezone(&Utc));
    }
    let bad = || format!("{s:?} is neither an RFC 3339 time nor an age like 90s, 10m, 2h, 1d");
    let split = s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (n, unit) = s.split_at(split);
    let n: i64 = n.parse().map_err(|_| bad())?;
    let age = match unit {
        "s" => chrono::Duration::try_seconds(n),
        "m" => chrono::Duration::try_minutes(n),
        "h" => chrono::Duration::try_hours(n),
        "d" => chrono::Duration::try_days(n),
        _ => None,
    }
    .ok_or_else(bad)?;
    let t = Utc::now()
        .checked_sub_signed(age)
        .ok_or_else(|| format!("{s:?} is too far from now"))?;
    in_range(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_time_or_an_age() {
        assert_eq!(
            since("2026-01-02T15:04:05Z")
                .expect("rfc 3339")
                .to_rfc3339(),
            "2026-01-02T15:04:05+00:00"
        );
        let ten_minutes_ago = since("10m").expect("age");
        let age = Utc::now() - ten_minutes_ago;
        assert!((599..=601).contains(&age.num_seconds()), "{age}");
        for bad in [
            "",
            "10",
            "m",
            "10 m",
            "10w",
            "yesterday",
            "99999999999d",
            "1000000d",
            "9999-01-01T00:00:00Z",
        ] {
            assert!(since(bad).is_err(), "{bad}");
        }
    }
}
