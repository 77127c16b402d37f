//! The receiver's memory of the runs under way: the model calls seen of each run, so that
//! the `run_stop` that closes it carries the run's totals (tokens, cost, calls, model),
//! and the verdict a `gen_ai.evaluation.result` log record stated of it.
//!
//! A run's spans come in any order, across requests, and its root usually last (it ends
//! last). Every call is recorded once by its span id, so a batch sent twice counts each
//! call once, and the totals of a closing span sent twice are the same. The totals are
//! stated only when this receiver saw the run from its start: it was up before the
//! run's first span started (for a root, the root itself: a child starts after its root
//! and is exported after it ends), and it has not forgotten the run since. Otherwise
//! they are null, never a partial sum. Calls of a run that come after it was closed are
//! kept in their own rows but not in the totals (`run_stop` is published once); they are
//! counted as `late_calls`.
//!
//! A run is closed by the first of: its root span; a span stating `benchstream.run_end`
//! ([`Ledger::close`] either way); the timeout, once no span of it came for
//! `--run-timeout` ([`Ledger::expire`] hands it over for a `run_stop` of its own). A
//! closing span sent again gives the same totals (its events have the same ids); any
//! other closing span that comes after is counted (`late_roots`) and publishes nothing.
//!
//! A `gen_ai.evaluation.result` log record ([`Ledger::evaluate`]) that comes while its
//! run is open is kept with it and judges the run when it closes, unless it names one of
//! the run's model calls (then it judges that call only); one that comes after the run
//! closed is counted (`late_evaluations`): its `run_stop` is out, and the first version
//! of an event wins.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use bench_schemas::Hash256;

use bench_pricing::Usd;

/// How long a run nobody sent a span of stays open (`--run-timeout`), and a closed run
/// is remembered.
pub const DEFAULT_RUN_IDLE: Duration = Duration::from_secs(3600);
/// Forgotten runs whose ids are kept (so that their totals are known to be partial).
const FORGOTTEN_KEPT: usize = 100_000;

/// One model call, as its inference span states it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The run it belongs to.
    pub run_id: Uuid,
    /// Its span id (hex): a call is counted once whatever how often it is sent.
    pub span: String,
    /// Input + output tokens; `None`: unknown.
    pub tokens: Option<u64>,
    /// Its cost; `None`: unknown (no price, or tokens missing).
    pub cost: Option<Usd>,
    /// Its model and provider (`unknown` when not stated).
    pub model: String,
    /// The provider.
    pub provider: String,
}

/// A run's totals for its `run_stop` (and its model for `run_start`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Model calls; `None`: this receiver may not have seen them all, or saw none.
    pub api_calls: Option<u32>,
    /// Input + output tokens of every call; `None` when any is unknown.
    pub total_tokens: Option<u64>,
    /// Summed cost; `None` when any call's cost is unknown.
    pub cost: Option<Usd>,
    /// The model of most calls (ties: the first by name), and its provider.
    pub model: Option<(String, String)>,
    /// Calls per model, when several models were called.
    pub models: BTreeMap<String, u32>,
}

/// The envelope fields every event of a run shares except its id (built and used by
/// the mapping, `RunContext::of`; kept here with the run).
#[derive(Debug, Clone)]
pub(crate) struct RunContext {
    pub(super) service: String,
    pub(super) task_id: String,
    pub(super) policy_id: String,
    pub(super) scenario: String,
    /// `cfg_hash` of the events sent before the run's model is known (all but
    /// `run_start` and `run_stop`): that of the unstated config.
    pub(super) cfg_hash: Hash256,
    pub(super) env_hash: Hash256,
}

/// A span of a run, as far as its closing by timeout needs it.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// The run.
    pub run_id: Uuid,
    /// Its trace (hex).
    pub trace: &'a str,
    /// The run's envelope.
    pub context: &'a RunContext,
    /// When the span started and ended.
    pub span: (DateTime<Utc>, DateTime<Utc>),
}

/// A verdict a `gen_ai.evaluation.result` event states.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Evaluation {
    /// From its label (`pass`, `fail`, ...); `None`: the label is no verdict.
    pub success: Option<bool>,
    /// Its score, when within 0..=1.
    pub score: Option<f64>,
}

impl Evaluation {
    /// Whether it states anything of the run.
    pub fn states(&self) -> bool {
        self.success.is_some() || self.score.is_some()
    }
}

/// A run closed by the timeout: what its `run_start` and `run_stop` are built from.
#[derive(Debug)]
pub struct Expired {
    /// The run.
    pub run_id: Uuid,
    /// Its trace (hex).
    pub trace: String,
    /// The run's envelope.
    pub context: RunContext,
    /// When its first span seen started and its last one ended.
    pub span: (DateTime<Utc>, DateTime<Utc>),
    /// What an evaluation log record stated of it.
    pub evaluation: Option<Evaluation>,
}

/// A run closed by a span (its root, or one stating `benchstream.run_end`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Closing {
    /// Its totals.
    pub totals: Totals,
    /// The earliest start of its spans seen, the closing one included.
    pub first: DateTime<Utc>,
    /// What an evaluation log record stated of it.
    pub evaluation: Option<Evaluation>,
}

/// What closed a run.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Closer {
    /// This span (hex id): its root, or a span stating `benchstream.run_end`.
    Span(String),
    /// `--run-timeout`.
    Timeout,
}

#[derive(Debug)]
struct Run {
    calls: BTreeMap<String, Call>,
    /// What built its `run_stop`; `None` while it is open.
    closed: Option<Closer>,
    touched: Instant,
    /// What a timeout close needs (the first span's), until the run is closed.
    open: Option<(String, RunContext)>,
    /// The earliest start and latest end of its spans seen; `None` before any.
    span: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// Evaluation log records, in the order they came, with the span each names.
    evaluations: Vec<(Option<String>, Evaluation)>,
}

impl Run {
    fn new(now: Instant) -> Run {
        Run {
            calls: BTreeMap::new(),
            closed: None,
            touched: now,
            open: None,
            span: None,
            evaluations: Vec::new(),
        }
    }

    /// The first evaluation that judges the run: one naming no span, or a span that is
    /// none of its model calls.
    fn evaluation(&self) -> Option<Evaluation> {
        self.evaluations
            .iter()
            .find(|(span, _)| span.as_ref().is_none_or(|s| !self.calls.contains_key(s)))
            .map(|(_, evaluation)| *evaluation)
    }
}

/// The runs under way, shared by every request.
#[derive(Debug)]
pub struct Ledger {
    /// When the receiver started: a run whose root started earlier may have sent calls
    /// to an earlier receiver.
    started: DateTime<Utc>,
    idle: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    runs: HashMap<Uuid, Run>,
    forgotten: HashSet<Uuid>,
    late_calls: u64,
    late_roots: u64,
    late_evaluations: u64,
}

impl Ledger {
    /// A ledger of a receiver started at `started`, closing runs idle for `idle` by
    /// timeout and forgetting closed ones idle that long.
    pub fn new(started: DateTime<Utc>, idle: Duration) -> Ledger {
        Ledger {
            started,
            idle,
            state: Mutex::new(State::default()),
        }
    }

    /// How long a run stays open without a span.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// Records that `spans` came and what `calls` they made (each call once by run and
    /// span; a call's span must be among `spans`).
    pub fn record(&self, spans: &[Seen<'_>], calls: Vec<Call>) {
        let now = Instant::now();
        let mut state = self.lock();
        for seen in spans {
            let run = state
                .runs
                .entry(seen.run_id)
                .or_insert_with(|| Run::new(now));
            run.touched = now;
            run.span = Some(match run.span {
                Some((first, last)) => (first.min(seen.span.0), last.max(seen.span.1)),
                None => seen.span,
            });
            if run.closed.is_none() && run.open.is_none() {
                run.open = Some((seen.trace.to_owned(), seen.context.clone()));
            }
        }
        for call in calls {
            // Every call's span is among `spans`, recorded above.
            let Some(run) = state.runs.get_mut(&call.run_id) else {
                continue;
            };
            if run.closed.is_some() && !run.calls.contains_key(&call.span) {
                state.late_calls += 1;
                tracing::warn!(run = %call.run_id, span = %call.span,
                    "a model call came after its run was stopped: not in the run's totals");
                continue;
            }
            run.calls.entry(call.span.clone()).or_insert(call);
        }
    }

    /// Closes `run_id` by its span `span` (hex id), which started at `start`: its totals
    /// and verdict; `None` when something else closed it already (its `run_stop` is
    /// out). The same span closing it again gets the same answer.
    pub fn close(&self, run_id: Uuid, span: &str, start: DateTime<Utc>) -> Option<Closing> {
        let now = Instant::now();
        let mut state = self.lock();
        let forgotten = state.forgotten.contains(&run_id);
        let run = state.runs.entry(run_id).or_insert_with(|| Run::new(now));
        run.touched = now;
        match &run.closed {
            Some(Closer::Span(by)) if by == span => {}
            Some(closer) => {
                let closer = closer.clone();
                state.late_roots += 1;
                tracing::warn!(run = %run_id, %span, ?closer,
                    "a closing span came after its run was closed: nothing published");
                return None;
            }
            None => run.closed = Some(Closer::Span(span.to_owned())),
        }
        run.open = None;
        let first = run.span.map_or(start, |(first, _)| first.min(start));
        let complete = first >= self.started && !forgotten && !run.calls.is_empty();
        Some(Closing {
            totals: if complete {
                totals(run.calls.values())
            } else {
                Totals::default()
            },
            first,
            evaluation: run.evaluation(),
        })
    }

    /// Keeps what a `gen_ai.evaluation.result` log record of `run_id` states (naming
    /// `span`, when it does), for the `run_stop` that closes the run; counted and
    /// dropped when the run is closed already.
    pub fn evaluate(&self, run_id: Uuid, span: Option<&str>, evaluation: Evaluation) {
        let now = Instant::now();
        let mut state = self.lock();
        let run = state.runs.entry(run_id).or_insert_with(|| Run::new(now));
        run.touched = now;
        if run.closed.is_some() {
            state.late_evaluations += 1;
            tracing::warn!(run = %run_id,
                "an evaluation log record came after its run was closed: stored as its \
                 genai_event row only, not in the run's run_stop");
            return;
        }
        run.evaluations.push((span.map(str::to_owned), evaluation));
    }

    /// Closes the runs no span of which came for the timeout, and forgets the closed
    /// runs idle that long: the runs closed now.
    pub fn expire(&self, now: Instant) -> Vec<Expired> {
        let mut state = self.lock();
        let idle = self.idle;
        let stale: Vec<Uuid> = state
            .runs
            .iter()
            .filter(|(_, run)| now.saturating_duration_since(run.touched) >= idle)
            .map(|(id, _)| *id)
            .collect();
        let mut expired = Vec::new();
        for id in stale {
            let Some(run) = state.runs.get_mut(&id) else {
                continue;
            };
            match (run.open.take(), run.span) {
                (Some((trace, context)), Some(span)) if run.closed.is_none() => {
                    run.closed = Some(Closer::Timeout);
                    run.touched = now;
                    expired.push(Expired {
                        run_id: id,
                        trace,
                        context,
                        span,
                        evaluation: run.evaluation(),
                    });
                }
                _ => {
                    state.runs.remove(&id);
                    if state.forgotten.len() >= FORGOTTEN_KEPT {
                        state.forgotten.clear();
                    }
                    state.forgotten.insert(id);
                }
            }
        }
        expired
    }

    /// Model calls that came after their run was stopped.
    pub fn late_calls(&self) -> u64 {
        self.lock().late_calls
    }

    /// Closing spans (roots, or spans stating `benchstream.run_end`) that came after
    /// something else closed their run.
    pub fn late_roots(&self) -> u64 {
        self.lock().late_roots
    }

    /// Evaluation log records that came after their run was closed.
    pub fn late_evaluations(&self) -> u64 {
        self.lock().late_evaluations
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves counts that are still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn totals<'a>(calls: impl Iterator<Item = &'a Call> + Clone) -> Totals {
    let mut models: BTreeMap<String, (u32, &str)> = BTreeMap::new();
    for call in calls.clone() {
        let entry = models
            .entry(call.model.clone())
            .or_insert((0, &call.provider));
        entry.0 += 1;
    }
    let model = models
        .iter()
        // The most calls; among equals the first name (max_by_key keeps the last maximum).
        .rev()
        .max_by_key(|(_, (n, _))| *n)
        .map(|(model, (_, provider))| (model.clone(), (*provider).to_owned()));
    let api_calls = calls.clone().count();
    Totals {
        api_calls: u32::try_from(api_calls).ok(),
        total_tokens: calls.clone().map(|c| c.tokens).sum(),
        cost: calls
            .map(|c| c.cost)
            .try_fold(Usd::default(), |sum, c| Some(sum.saturating_add(c?))),
        model,
        models: if models.len() > 1 {
            models.into_iter().map(|(m, (n, _))| (m, n)).collect()
        } else {
            BTreeMap::new()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::Attributes;

    fn call(run: Uuid, span: &str, model: &str, tokens: Option<u64>, cost: Option<f64>) -> Call {
        Call {
            run_id: run,
            span: span.to_owned(),
            tokens,
            cost: cost.and_then(Usd::from_number),
            model: model.to_owned(),
            provider: "openai".to_owned(),
        }
    }

    fn ledger() -> (Ledger, DateTime<Utc>) {
        let started = DateTime::from_timestamp(1_700_000_000, 0).expect("time");
        (Ledger::new(started, DEFAULT_RUN_IDLE), started)
    }

    /// Records `calls` as a request of their spans would.
    fn record(ledger: &Ledger, calls: Vec<Call>) {
        let context = RunContext::of(&Attributes {
            own: &[],
            resource: &[],
        });
        let at = ledger.started;
        let seen: Vec<Seen<'_>> = calls
            .iter()
            .map(|c| Seen {
                run_id: c.run_id,
                trace: "t",
                context: &context,
                span: (at, at),
            })
            .collect();
        ledger.record(&seen, calls);
    }

    #[test]
    fn totals_count_each_call_once_and_name_the_most_used_model() {
        let (ledger, t) = ledger();
        let run = Uuid::from_u128(1);
        let calls = vec![
            call(run, "a", "model-b", Some(100), Some(0.0008)),
            call(run, "b", "model-a", Some(300), Some(0.006)),
            call(run, "c", "model-a", Some(10), Some(0.001)),
        ];
        record(&ledger, calls.clone());
        // The same batch again.
        record(&ledger, calls);
        let totals = ledger.close(run, "root", t).expect("open run").totals;
        assert_eq!(totals.api_calls, Some(3));
        assert_eq!(totals.total_tokens, Some(410));
        assert_eq!(totals.cost.map(Usd::to_number), Some(0.0078));
        assert_eq!(
            totals.model,
            Some(("model-a".to_owned(), "openai".to_owned()))
        );
        assert_eq!(
            totals.models,
            BTreeMap::from([("model-a".to_owned(), 2), ("model-b".to_owned(), 1)])
        );
    }

    #[test]
    fn one_unpriced_or_uncounted_call_makes_the_sum_unknown_not_smaller() {
        let (ledger, t) = ledger();
        let run = Uuid::from_u128(2);
        record(
            &ledger,
            vec![
                call(run, "a", "m", Some(100), Some(0.5)),
                call(run, "b", "m", None, None),
            ],
        );
        let totals = ledger.close(run, "root", t).expect("open run").totals;
        assert_eq!(
            (totals.api_calls, totals.total_tokens, totals.cost),
            (Some(2), None, None)
        );
        assert!(totals.models.is_empty(), "one model: nothing to list");
    }

    #[test]
    fn a_run_that_started_before_the_receiver_has_unknown_totals_and_late_calls_are_counted() {
        let (ledger, t) = ledger();
        let run = Uuid::from_u128(3);
        record(&ledger, vec![call(run, "a", "m", Some(1), Some(0.1))]);
        let before = t - chrono::Duration::seconds(1);
        let closing = ledger.close(run, "root", before).expect("open run");
        assert_eq!(closing.totals, Totals::default());
        let other = Uuid::from_u128(4);
        let closing = ledger.close(other, "root", t).expect("open run");
        assert_eq!(closing.totals, Totals::default(), "no call seen");
        record(&ledger, vec![call(other, "z", "m", Some(1), Some(0.1))]);
        assert_eq!(ledger.late_calls(), 1);
    }

    #[test]
    fn a_run_without_its_root_is_closed_once_by_the_timeout_and_a_late_root_closes_nothing() {
        let (ledger, t) = ledger();
        let run = Uuid::from_u128(5);
        record(&ledger, vec![call(run, "a", "m", Some(1), Some(0.1))]);
        let closed = ledger.close(Uuid::from_u128(6), "root", t);
        assert!(closed.is_some(), "a run whose root came");
        assert!(ledger.expire(Instant::now()).is_empty(), "not idle yet");
        let later = Instant::now() + DEFAULT_RUN_IDLE;
        let expired = ledger.expire(later);
        assert_eq!(
            expired.iter().map(|e| e.run_id).collect::<Vec<_>>(),
            [run],
            "only the open run; the closed one is forgotten"
        );
        assert!(ledger.expire(later).is_empty(), "closed once");
        assert_eq!(ledger.close(run, "root", t), None, "its run_stop is out");
        assert_eq!(ledger.late_roots(), 1);
    }

    #[test]
    fn a_run_is_closed_once_by_its_first_closing_span_which_may_close_it_again() {
        let (ledger, t) = ledger();
        let run = Uuid::from_u128(7);
        record(&ledger, vec![call(run, "a", "m", Some(5), Some(0.1))]);
        let first = ledger.close(run, "end", t).expect("open run");
        assert_eq!(first.totals.api_calls, Some(1));
        assert_eq!(first.first, t, "the earliest span seen");
        assert_eq!(
            ledger.close(run, "end", t),
            Some(first),
            "the same span sent again: the same run_stop"
        );
        assert_eq!(ledger.close(run, "root", t), None, "a root after it");
        assert_eq!(ledger.late_roots(), 1);
        assert!(ledger.expire(Instant::now() + DEFAULT_RUN_IDLE).is_empty());
    }

    #[test]
    fn an_evaluation_judges_its_open_run_unless_it_names_a_call_and_a_late_one_is_counted() {
        let (ledger, t) = ledger();
        let run = Uuid::from_u128(8);
        let pass = Evaluation {
            success: Some(true),
            score: Some(0.9),
        };
        let fail = Evaluation {
            success: Some(false),
            score: None,
        };
        // Of the call "a" (recorded later): not the run's verdict.
        ledger.evaluate(run, Some("a"), fail);
        ledger.evaluate(run, Some("root"), pass);
        record(&ledger, vec![call(run, "a", "m", Some(5), Some(0.1))]);
        let closing = ledger.close(run, "root", t).expect("open run");
        assert_eq!(closing.evaluation, Some(pass));
        ledger.evaluate(run, None, fail);
        assert_eq!(ledger.late_evaluations(), 1);
        assert_eq!(
            ledger.close(run, "root", t).expect("same root").evaluation,
            Some(pass),
            "a late evaluation changes nothing"
        );
    }
}
