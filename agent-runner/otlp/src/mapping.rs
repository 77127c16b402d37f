//! OpenTelemetry spans → benchmark events, following the GenAI semantic conventions and
//! the aliases common instrumentation libraries use. The mapping is documented as a table
//! in `schemas/README.md` ("OpenTelemetry traces"); this module is pure (no I/O).
//!
//! Every event depends on one span (and its resource) only, never on which other spans
//! came in the same request: an exporter that sends a batch twice, or spans that arrive
//! in any order across batches, give the same events with the same ids, so each fact is
//! stored once. Hence:
//!
//! - event ids are UUIDs derived from (trace id, span id, event type);
//! - `seq` is null: a run's events cannot be numbered in advance; `seed` is null: a trace
//!   states none;
//! - run, task and policy come from `benchstream.*` attributes of the resource or of the
//!   span itself, else are derived from the trace id and `service.name`;
//! - the exception: the `run_start` and `run_stop` of the span that closes a run (its
//!   root, or a span stating `benchstream.run_end = true`) carry the run's model and
//!   totals (tokens, cost, `api_calls`), summed over the calls the receiver recorded
//!   ([`crate::runs`]), which are null when it cannot have seen them all, and the
//!   verdict of an evaluation log record that came before; `turns`, `tool_errors` and
//!   `files_modified` stay null: no trace states them.

use std::collections::HashMap;

use bench_schemas::{
    BenchmarkEvent, Canonical, Deliberation, DeliberationStatus, EvidenceFootprint, ExitKind,
    ExitStatus, Failure, FailureRoot, FinalErrorState, Payload, PricingSource, RunConfig, RunStop,
    ScenarioRef, Step, StepType, ToolCall, SCHEMA_VERSION,
};
use chrono::{DateTime, Utc};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::span::Event;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::Value;
use uuid::Uuid;

use crate::runs::{Call, Closing, Evaluation, Expired, Ledger, RunContext, Seen, Totals};
use crate::span::{attribute_number, attribute_str, event_str, keys, tokens, Attributes, SpanView};
use bench_pricing::TokenUsage;
use bench_pricing::{PriceTable, Prices, Usd};
use bench_schemas::{derived_uuid, recorded_run_start, Provenance};

/// `run_start.scoring_version` of a run received as a trace that states no verdict.
pub const SCORING_VERSION: &str = "otlp-unevaluated";
/// `run_start.scoring_version` of a run whose trace states its verdict
/// (`benchstream.success` or a `gen_ai.evaluation.result` label) and no
/// `benchstream.scoring_version`.
pub const STATED_SCORING_VERSION: &str = "otlp-stated";
/// The span attribute that closes its run as its root would (`true`), for a run whose
/// root is not exported, or comes too late.
pub const RUN_END: &str = "benchstream.run_end";

/// The attribute (of a span or its resource) naming the run a span belongs to, across
/// traces.
const RUN_ID: &str = "benchstream.run_id";
/// `scenario.name` when no `benchstream.scenario` attribute names one.
pub const DEFAULT_SCENARIO: &str = "otlp";
/// The service name of a resource without `service.name` (the SDKs' own default).
const UNKNOWN_SERVICE: &str = "unknown_service";
/// Model, provider and agent role nobody named.
const UNKNOWN: &str = "unknown";
/// `SpanFlags`: the parent's "is remote" bit is known, and set.
const PARENT_IS_REMOTE_KNOWN: u32 = 0x100;
const PARENT_IS_REMOTE: u32 = 0x200;
/// Reasons for rejected spans kept in the reply, at most.
const MAX_REASONS: usize = 5;

/// What a span is, by `gen_ai.operation.name` or the aliases of other conventions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// An LLM call (`chat`, `text_completion`, `generate_content`).
    Inference,
    /// A tool call (`execute_tool`).
    Tool,
    /// An agent or workflow (`invoke_agent`, `invoke_workflow`).
    Agent,
    /// Anything else (only its errors are mapped).
    Other,
}

impl SpanKind {
    /// The kind of `view`'s span.
    pub fn of(view: &SpanView<'_>) -> SpanKind {
        let operation = keys::OPERATION.iter().find_map(|k| view.own_str(k));
        if let Some(operation) = operation {
            return match operation {
                "chat" | "text_completion" | "generate_content" | "completion" => {
                    SpanKind::Inference
                }
                "execute_tool" | "tool" => SpanKind::Tool,
                "invoke_agent" | "invoke_workflow" | "create_agent" | "agent" | "workflow" => {
                    SpanKind::Agent
                }
                _ => SpanKind::Other,
            };
        }
        match view.own_str(keys::OPENINFERENCE_KIND) {
            Some("LLM") => SpanKind::Inference,
            Some("TOOL") => SpanKind::Tool,
            Some("AGENT") => SpanKind::Agent,
            _ => SpanKind::Other,
        }
    }
}

/// The events of one export request, and the spans refused.
#[derive(Debug, Default)]
pub struct Mapped {
    /// The events, in span order, each with the index of its span in the request.
    pub events: Vec<(usize, BenchmarkEvent)>,
    /// Spans in the request.
    pub spans: u64,
    /// Spans refused (bad ids or times): the reply's `partial_success.rejected_spans`.
    pub rejected: u64,
    /// Why, for the first few.
    pub reasons: Vec<String>,
}

/// Turns export requests into events.
#[derive(Debug, Clone)]
pub struct Mapper {
    /// `host` on every event: this receiver.
    pub host: String,
    /// Prices per model (`--prices`): a call of a model it does not name has a null
    /// cost; `None`: every cost is null.
    pub prices: Option<PriceTable>,
    /// The experiment and tags of every run received.
    pub experiment: bench_schemas::ExperimentRef,
}

impl Mapper {
    /// The events of `request`. Its model calls are recorded in `ledger` first, so that
    /// the `run_stop` of a root span in the same request counts them.
    pub fn map(&self, request: &ExportTraceServiceRequest, ledger: &Ledger) -> Mapped {
        let mut mapped = Mapped::default();
        let mut contexts: HashMap<ContextKey<'_>, RunContext> = HashMap::new();
        let mut calls = Vec::new();
        let mut closers = Vec::new();
        let mut seen = Vec::new();
        for resource_spans in &request.resource_spans {
            let resource = resource_spans
                .resource
                .as_ref()
                .map_or(&[][..], |r| &r.attributes[..]);
            for span in resource_spans.scope_spans.iter().flat_map(|s| &s.spans) {
                let index = mapped.spans as usize;
                mapped.spans += 1;
                let view = SpanView::new(span, resource);
                let ids = match SpanIds::of(span) {
                    Ok(ids) => ids,
                    Err(reason) => {
                        mapped.rejected += 1;
                        if mapped.reasons.len() < MAX_REASONS {
                            mapped
                                .reasons
                                .push(format!("span {:?}: {reason}", span.name));
                        }
                        continue;
                    }
                };
                let key = ContextKey::of(&view);
                let context = contexts
                    .entry(key.clone())
                    .or_insert_with(|| RunContext::of(&view));
                let mut out = SpanEvents::new(self, context, index, &ids, view, &mut mapped.events);
                calls.extend(out.map());
                seen.push((out.run_id, ids.trace.clone(), key, (ids.start, ids.end)));
                if closes_its_run(&ids, &view) {
                    closers.push((index, ids, view));
                }
            }
        }
        let seen: Vec<Seen<'_>> = seen
            .iter()
            .map(|(run_id, trace, key, span)| Seen {
                run_id: *run_id,
                trace,
                context: &contexts[key],
                span: *span,
            })
            .collect();
        ledger.record(&seen, calls);
        for (index, ids, view) in closers {
            let context = &contexts[&ContextKey::of(&view)];
            let mut out = SpanEvents::new(self, context, index, &ids, view, &mut mapped.events);
            // None: another span or the timeout closed the run already.
            if let Some(closing) = ledger.close(out.run_id, &ids.span, ids.start) {
                out.close(&closing);
            }
        }
        mapped
    }
}

impl Mapper {
    /// The `run_start` and `run_stop` of a run the timeout closed: its root never came,
    /// so it is unjudged (`success` null, `otlp-unevaluated`) unless an evaluation log
    /// record judged it, ended by `exit_error`, its wall time, model and totals unknown
    /// (nothing tells whether every call came here). Their ids derive from the run, so a
    /// second receiver closing it gives the same.
    pub fn timed_out(&self, run: &Expired) -> [BenchmarkEvent; 2] {
        let id =
            |kind: &str| derived_uuid(&format!("otlp/timeout/{}/{}/{kind}", run.run_id, run.trace));
        let config = run_config(UNKNOWN.to_owned(), UNKNOWN.to_owned());
        let evaluation = run.evaluation.unwrap_or_default();
        let scoring_version = scoring_version(evaluation.success, None);
        let start = run
            .context
            .run_start(config, scoring_version, &self.experiment);
        let ending = Ending {
            success: evaluation.success,
            final_score: evaluation.score,
            wall_time_ms: None,
            exit_status: ExitStatus::ExitError,
            early_stop_reason: Some(
                "the trace's root span never came: closed by the receiver's --run-timeout"
                    .to_owned(),
            ),
        };
        let stop = Payload::RunStop(ending.run_stop(&Totals::default()));
        let (first, last) = run.span;
        [
            run.context.event(
                (id("run_start"), run.run_id, None),
                first,
                &self.host,
                start,
            ),
            run.context
                .event((id("run_stop"), run.run_id, None), last, &self.host, stop),
        ]
    }
}

/// `run_start.scoring_version`: the one stated, else whether a verdict was.
fn scoring_version(success: Option<bool>, stated: Option<&str>) -> &str {
    match (stated, success) {
        (Some(stated), _) => stated,
        (None, None) => SCORING_VERSION,
        (None, Some(_)) => STATED_SCORING_VERSION,
    }
}

/// How a run ended, as its root span (or the timeout) states it.
struct Ending {
    success: Option<bool>,
    final_score: Option<f64>,
    wall_time_ms: Option<u64>,
    exit_status: ExitStatus,
    /// Why it stopped early; `None`: it did not.
    early_stop_reason: Option<String>,
}

impl Ending {
    fn run_stop(self, totals: &Totals) -> RunStop {
        RunStop {
            success: self.success,
            final_score: self.final_score,
            wall_time_ms: self.wall_time_ms,
            total_tokens: totals.total_tokens,
            // A tool's failure may be stated by no status; no trace states changed files.
            tool_errors: None,
            stability_variance: None,
            failing_tests: Vec::new(),
            tests_passed: None,
            tests_failed: None,
            files_modified: None,
            early_stopped: self.early_stop_reason.is_some(),
            early_stop_reason: self.early_stop_reason,
            exit_status: self.exit_status,
            cost_usd: totals.cost.map(Usd::to_number),
            api_calls: totals.api_calls,
            // A trace does not say which calls were turns of the agent.
            turns: None,
            // A trace's verdict is stored as the trace states it, under its own scoring
            // version; `claim` is only for an `exec` agent's `run_stop` beside the judge's.
            claim: None,
            diff_sha256: None,
            final_diff: None,
            final_diff_truncated: false,
            integrity: None,
            regrade: None,
            cutoff_score: None,
        }
    }
}

/// Whether `view`'s span closes its run: it states `benchstream.run_end = true`, or it
/// is a trace's root; except a root that is itself a model or tool call of a run named by
/// `benchstream.run_id`. Such a run spans many traces (an agent whose client is
/// instrumented with no span around its calls makes each call a trace of its own), so
/// its first call does not end it: `benchstream.run_end` or the run timeout does.
fn closes_its_run(ids: &SpanIds, view: &SpanView<'_>) -> bool {
    if view.own_bool(RUN_END) == Some(true) {
        return true;
    }
    let one_call_of_a_named_run = view.str(&[RUN_ID]).is_some()
        && matches!(SpanKind::of(view), SpanKind::Inference | SpanKind::Tool);
    ids.root && !one_call_of_a_named_run
}

/// A span's validated ids and times.
#[derive(Debug)]
struct SpanIds {
    /// Lower-case hex, as in the OTLP/JSON encoding.
    trace: String,
    span: String,
    /// Whether it starts a run: a trace root, or an agent span whose parent is in another
    /// process.
    root: bool,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
}

impl SpanIds {
    fn of(span: &Span) -> Result<SpanIds, String> {
        if span.trace_id.len() != 16 || span.trace_id.iter().all(|&b| b == 0) {
            return Err("trace id is not 16 bytes, or all zero".to_owned());
        }
        if span.span_id.len() != 8 || span.span_id.iter().all(|&b| b == 0) {
            return Err("span id is not 8 bytes, or all zero".to_owned());
        }
        let start = time(span.start_time_unix_nano).ok_or("no start time")?;
        let end = time(span.end_time_unix_nano).ok_or("no end time")?;
        if end < start {
            return Err("ends before it starts".to_owned());
        }
        let remote_parent = span.flags & PARENT_IS_REMOTE_KNOWN != 0
            && span.flags & PARENT_IS_REMOTE != 0
            && SpanKind::of(&SpanView::new(span, &[])) == SpanKind::Agent;
        Ok(SpanIds {
            trace: hex(&span.trace_id),
            span: hex(&span.span_id),
            root: span.parent_span_id.iter().all(|&b| b == 0) || remote_parent,
            start,
            end,
        })
    }

    /// The id of this span's event of `kind` (`run_start`, `step`, `failure/0`, ...).
    fn derived(&self, kind: &str) -> Uuid {
        span_event_id(&self.trace, &self.span, kind)
    }

    fn latency_ms(&self) -> u64 {
        u64::try_from((self.end - self.start).num_milliseconds()).unwrap_or(0)
    }
}

/// What picks a run's task, policy and scenario: the `benchstream.*` attributes a span
/// (or its resource) gives, and the service.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct ContextKey<'a> {
    service: &'a str,
    task: Option<&'a str>,
    policy: Option<&'a str>,
    scenario: Option<&'a str>,
}

impl<'a> ContextKey<'a> {
    pub(super) fn of(view: &Attributes<'a>) -> Self {
        ContextKey {
            service: service(view),
            task: view.str(&["benchstream.task_id"]),
            policy: view.str(&["benchstream.policy_id"]),
            scenario: view.str(&["benchstream.scenario"]),
        }
    }
}

impl RunContext {
    pub(super) fn of(view: &Attributes<'_>) -> RunContext {
        let key = ContextKey::of(view);
        let service = key.service.to_owned();
        let env = Provenance::Trace {
            source: "otlp",
            service: &service,
            service_version: attribute_str(view.resource, "service.version"),
            sdk: attribute_str(view.resource, "telemetry.sdk.name"),
            sdk_version: attribute_str(view.resource, "telemetry.sdk.version"),
        };
        RunContext {
            task_id: key.task.unwrap_or(&service).to_owned(),
            policy_id: key
                .policy
                .map_or_else(|| format!("otlp:{service}"), str::to_owned),
            scenario: key.scenario.unwrap_or(DEFAULT_SCENARIO).to_owned(),
            cfg_hash: run_config(UNKNOWN.to_owned(), UNKNOWN.to_owned()).canonical_hash(),
            env_hash: env.env_hash(),
            service,
        }
    }
}

impl RunContext {
    /// The `run_start` payload of this run.
    pub(super) fn run_start(
        &self,
        config: RunConfig,
        scoring_version: &str,
        experiment: &bench_schemas::ExperimentRef,
    ) -> Payload {
        Payload::RunStart(recorded_run_start(
            config,
            ScenarioRef {
                name: self.scenario.clone(),
                sha256: self.scenario.canonical_hash(),
            },
            self.env_hash.clone(),
            (
                format!("agent-runner {} otlp", env!("CARGO_PKG_VERSION")),
                scoring_version,
            ),
            experiment.clone(),
        ))
    }

    /// An event of this run: `(event id, run id, step id)`.
    pub(super) fn event(
        &self,
        (event_id, run_id, step_id): (Uuid, Uuid, Option<Uuid>),
        ts: DateTime<Utc>,
        host: &str,
        payload: Payload,
    ) -> BenchmarkEvent {
        BenchmarkEvent {
            schema_version: SCHEMA_VERSION,
            event_id,
            run_id,
            task_id: self.task_id.clone(),
            step_id,
            seq: None,
            ts,
            policy_id: self.policy_id.clone(),
            cfg_hash: self.cfg_hash.clone(),
            env_hash: self.env_hash.clone(),
            // A trace states no seed.
            seed: None,
            host: host.to_owned(),
            payload,
            extra: serde_json::Map::new(),
        }
    }
}

fn service<'a>(view: &Attributes<'a>) -> &'a str {
    attribute_str(view.resource, "service.name").unwrap_or(UNKNOWN_SERVICE)
}

/// `benchstream.run_id` (a UUID as is, any other text through a derived UUID), else a
/// UUID derived from the service and the trace id.
pub(super) fn run_id(view: &Attributes<'_>, service: &str, trace: &str) -> Uuid {
    match view.str(&[RUN_ID]) {
        Some(given) => {
            Uuid::try_parse(given).unwrap_or_else(|_| derived_uuid(&format!("otlp/run/{given}")))
        }
        None => derived_uuid(&format!("otlp/{service}/{trace}")),
    }
}

/// The run config of a run received as a trace: its model and provider (those of most
/// of its calls); a trace states no other setting of the whole run (who ran it is the
/// policy and `env_hash`), so every other setting is null or "not applicable" (as for
/// imported runs), and `cfg_hash` changes with the model only.
fn run_config(model: String, provider: String) -> RunConfig {
    RunConfig::unstated(model, provider, UNKNOWN.to_owned())
}

/// The events of one span.
struct SpanEvents<'a, 'm> {
    mapper: &'m Mapper,
    context: &'m RunContext,
    run_id: Uuid,
    /// The span's index in the request.
    index: usize,
    ids: &'m SpanIds,
    view: SpanView<'a>,
    events: &'m mut Vec<(usize, BenchmarkEvent)>,
}

impl<'a, 'm> SpanEvents<'a, 'm> {
    fn new(
        mapper: &'m Mapper,
        context: &'m RunContext,
        index: usize,
        ids: &'m SpanIds,
        view: SpanView<'a>,
        events: &'m mut Vec<(usize, BenchmarkEvent)>,
    ) -> Self {
        SpanEvents {
            mapper,
            context,
            run_id: run_id(&view, &context.service, &ids.trace),
            index,
            ids,
            view,
            events,
        }
    }

    /// The span's own events (a closing span's `run_start` and `run_stop` come from
    /// [`Self::close`]); an inference span's call, for the run's totals.
    fn map(&mut self) -> Option<Call> {
        let kind = SpanKind::of(&self.view);
        let mut step_id = None;
        let mut call = None;
        match kind {
            SpanKind::Inference => {
                let id = self.ids.derived("step");
                step_id = Some(id);
                let deliberation = self.deliberation();
                let step = Step {
                    step_type: StepType::Reason,
                    content: self.view.span.name.clone(),
                    content_truncated: false,
                    tokens_in: deliberation.input_tokens,
                    tokens_out: deliberation.output_tokens,
                    wall_time_ms: Some(self.ids.latency_ms()),
                    planned_step: None,
                    // A span states no context size.
                    context_kb: None,
                };
                call = Some(Call {
                    run_id: self.run_id,
                    span: self.ids.span.clone(),
                    tokens: deliberation
                        .input_tokens
                        .zip(deliberation.output_tokens)
                        .map(|(i, o)| i + o),
                    cost: deliberation.cost_usd.and_then(Usd::from_number),
                    model: deliberation.model.clone(),
                    provider: deliberation.provider.clone(),
                });
                self.push("step", self.ids.start, step_id, Payload::Step(step));
                self.push(
                    "deliberation",
                    self.ids.end,
                    step_id,
                    Payload::Deliberation(deliberation),
                );
            }
            SpanKind::Tool => {
                let call = self.tool_call();
                self.push("tool_call", self.ids.end, None, Payload::ToolCall(call));
            }
            SpanKind::Agent | SpanKind::Other => {}
        }
        self.failures(kind, step_id);
        call
    }

    /// The `run_start` and `run_stop` of a span that closes its run (its root, or one
    /// stating [`RUN_END`]): the run's totals and what an evaluation log record stated of
    /// it come with `closing`. A closing span other than the root starts the run at its
    /// earliest span seen, and states its wall time only when it is that span (it
    /// encloses the run, as a root does).
    fn close(&mut self, closing: &Closing) {
        let totals = &closing.totals;
        let (model, provider) = totals
            .model
            .clone()
            .unwrap_or_else(|| (UNKNOWN.to_owned(), UNKNOWN.to_owned()));
        let config = run_config(model, provider);
        let cfg_hash = config.canonical_hash();
        let encloses = self.ids.root || self.ids.start <= closing.first;
        let stop = self.run_stop(totals, closing.evaluation, encloses);
        let success = match &stop {
            Payload::RunStop(RunStop { success, .. }) => *success,
            _ => None,
        };
        let scoring_version =
            scoring_version(success, self.view.str(&["benchstream.scoring_version"]));
        let start = self
            .context
            .run_start(config, scoring_version, &self.mapper.experiment);
        let started = if self.ids.root {
            self.ids.start
        } else {
            closing.first
        };
        let mut start = self.event("run_start", started, None, start);
        start.cfg_hash = cfg_hash.clone();
        self.events.push((self.index, start));
        let mut stop = self.event("run_stop", self.ids.end, None, stop);
        stop.cfg_hash = cfg_hash;
        if !totals.models.is_empty() {
            stop.extra.insert(
                "models".to_owned(),
                serde_json::to_value(&totals.models).unwrap_or_default(),
            );
        }
        self.events.push((self.index, stop));
    }

    fn push(&mut self, kind: &str, ts: DateTime<Utc>, step_id: Option<Uuid>, payload: Payload) {
        let event = self.event(kind, ts, step_id, payload);
        self.events.push((self.index, event));
    }

    fn event(
        &self,
        kind: &str,
        ts: DateTime<Utc>,
        step_id: Option<Uuid>,
        payload: Payload,
    ) -> BenchmarkEvent {
        self.context.event(
            (self.ids.derived(kind), self.run_id, step_id),
            ts,
            &self.mapper.host,
            payload,
        )
    }

    /// The `run_stop` of the run this span closes: its verdict is the span's own
    /// (`benchstream.success`, a `gen_ai.evaluation.result` span event), else `logged`'s
    /// (an evaluation log record of the run); its wall time is the span's duration when it
    /// `encloses` the run.
    fn run_stop(&self, totals: &Totals, logged: Option<Evaluation>, encloses: bool) -> Payload {
        let error = self.error();
        let exit_status = self
            .view
            .str(&["benchstream.exit_status"])
            .and_then(|s| serde_json::from_value(Value::from(s)).ok())
            .unwrap_or(match &error {
                None => ExitStatus::Submitted,
                Some(e) => exit_status_of(e.kind.as_deref()),
            });
        let evaluation = self
            .view
            .events("gen_ai.evaluation.result")
            .next()
            .map(|e| Evaluation::of(&e.attributes))
            .filter(Evaluation::states)
            .or(logged)
            .unwrap_or_default();
        let success = self.view.bool("benchstream.success").or(evaluation.success);
        let ending = Ending {
            success,
            final_score: evaluation.score,
            wall_time_ms: encloses.then(|| self.ids.latency_ms()),
            exit_status,
            early_stop_reason: error.map(|e| e.describe()),
        };
        Payload::RunStop(ending.run_stop(totals))
    }

    fn deliberation(&self) -> Deliberation {
        let v = &self.view;
        let error = self.error();
        let input = v.count(tokens::INPUT);
        let output = v.count(tokens::OUTPUT);
        let known = |n: Option<u64>| input.and(output).and(n);
        let finish = v.strings(keys::FINISH_REASONS);
        let raw_output = v.text(keys::OUTPUT).unwrap_or_default();
        let mut d = Deliberation {
            agent: v.str(keys::AGENT).unwrap_or("agent").to_owned(),
            provider: v.str(keys::PROVIDER).unwrap_or(UNKNOWN).to_owned(),
            model: v.str(keys::MODEL).unwrap_or(UNKNOWN).to_owned(),
            status: match &error {
                None => DeliberationStatus::Ok,
                Some(e) if e.mentions("timeout") => DeliberationStatus::Timeout,
                Some(_) => DeliberationStatus::ApiError,
            },
            latency_ms: Some(self.ids.latency_ms()),
            input_tokens: input,
            cached_input_tokens: known(v.count(tokens::CACHE_READ)),
            cache_write_tokens: known(v.count(tokens::CACHE_WRITE)),
            output_tokens: output,
            reasoning_tokens: known(v.count(tokens::REASONING)),
            cost_usd: None,
            pricing_source: PricingSource::Unknown,
            prompt_price_per_mtok: None,
            completion_price_per_mtok: None,
            cached_prompt_price_per_mtok: None,
            // A span does not say how often the call was tried.
            retries: None,
            actions: Vec::new(),
            summary: if finish.is_empty() {
                String::new()
            } else {
                format!("finish_reasons: {}", finish.join(","))
            },
            confidence: None,
            raw_output,
            raw_output_truncated: false,
            error: error.map(|e| e.describe()),
            summary_truncated: false,
        };
        if let Some(prices) = self.mapper.prices.as_ref().and_then(|t| t.get(&d.model)) {
            price(&prices, &mut d);
        }
        d
    }

    fn tool_call(&self) -> ToolCall {
        let v = &self.view;
        let name = v.str(keys::TOOL_NAME).unwrap_or_else(|| {
            let name = v.span.name.as_str();
            name.strip_prefix("execute_tool ").unwrap_or(name)
        });
        // Arguments as JSON when they are JSON text, so that the hash does not depend on
        // the producer's whitespace.
        let arguments = v
            .str(keys::TOOL_ARGUMENTS)
            .map(|a| serde_json::from_str::<Value>(a).unwrap_or_else(|_| Value::from(a)))
            .unwrap_or(Value::Null);
        let error = self.error();
        let exit_kind = match &error {
            None => ExitKind::Ok,
            Some(e) if e.mentions("timeout") => ExitKind::Timeout,
            Some(e) if e.mentions("memory") || e.mentions("oom") => ExitKind::Oom,
            Some(e) if e.mentions("argument") || e.mentions("validation") => ExitKind::UserError,
            Some(_) => ExitKind::Deterministic,
        };
        ToolCall {
            tool_name: name.to_owned(),
            call_id: self.view.str(keys::TOOL_CALL_ID).map(str::to_owned),
            tool_args_hash: arguments.canonical_hash(),
            latency_ms: Some(self.ids.latency_ms()),
            // A span does not say how often the tool was tried.
            retries: None,
            exit_kind,
            exit_message: error.map(|e| e.describe()),
            evidence_footprint: EvidenceFootprint::default(),
            user_feedback_score: None,
            intent_accuracy: None,
        }
    }

    /// One `failure` per `exception` event, or one for an error status without any.
    fn failures(&mut self, kind: SpanKind, step_id: Option<Uuid>) {
        let exceptions: Vec<&Event> = self.view.events("exception").collect();
        let failures: Vec<(DateTime<Utc>, SpanError)> = if exceptions.is_empty() {
            self.error()
                .map(|e| (self.ids.end, e))
                .into_iter()
                .collect()
        } else {
            exceptions
                .iter()
                .map(|e| {
                    let at = time(e.time_unix_nano).unwrap_or(self.ids.end);
                    let error = SpanError {
                        kind: event_str(e, "exception.type").map(str::to_owned),
                        message: event_str(e, "exception.message")
                            .unwrap_or_default()
                            .to_owned(),
                    };
                    (at, error)
                })
                .collect()
        };
        for (index, (at, error)) in failures.into_iter().enumerate() {
            let failure = self.failure(kind, &error);
            self.push(
                &format!("failure/{index}"),
                at,
                step_id,
                Payload::Failure(failure),
            );
        }
    }

    fn failure(&self, kind: SpanKind, error: &SpanError) -> Failure {
        let v = &self.view;
        let root = match kind {
            SpanKind::Tool => FailureRoot::Tool {
                tool_name: v.str(keys::TOOL_NAME).unwrap_or(&v.span.name).to_owned(),
                usage_error: error.describe(),
            },
            SpanKind::Inference => FailureRoot::Provider {
                provider: v.str(keys::PROVIDER).unwrap_or(UNKNOWN).to_owned(),
                api_error: error.describe(),
                failed_calls: 1,
            },
            SpanKind::Agent | SpanKind::Other => FailureRoot::Planning {
                reasoning_error: format!("{}: {}", v.span.name, error.describe()),
                step_number: 0,
            },
        };
        Failure {
            first_failure_root: root,
            recovery_attempts: Vec::new(),
            final_error_state: FinalErrorState {
                // The run goes on after a failed call or tool; not after its root failed.
                recoverable: !self.ids.root,
                error_category: error.kind.clone().unwrap_or_else(|| "error".to_owned()),
                confidence: 1.0,
                similar_failures: 0,
            },
            contributing_factors: Vec::new(),
            remediation_suggestions: Vec::new(),
        }
    }

    /// The span's error: an error status, or an `error.type` attribute.
    fn error(&self) -> Option<SpanError> {
        let status = self.view.span.status.as_ref();
        let failed = status.is_some_and(|s| s.code == StatusCode::Error as i32);
        let kind = self.view.own_str("error.type").map(str::to_owned);
        (failed || kind.is_some()).then(|| SpanError {
            kind,
            message: status.map(|s| s.message.clone()).unwrap_or_default(),
        })
    }
}

/// What went wrong in a span.
#[derive(Debug, Clone)]
struct SpanError {
    /// `error.type` or `exception.type`.
    kind: Option<String>,
    /// The status or exception message.
    message: String,
}

impl SpanError {
    fn describe(&self) -> String {
        match (&self.kind, self.message.is_empty()) {
            (Some(kind), true) => kind.clone(),
            (Some(kind), false) => format!("{kind}: {}", self.message),
            (None, false) => self.message.clone(),
            (None, true) => "error status".to_owned(),
        }
    }

    fn mentions(&self, word: &str) -> bool {
        self.describe().to_ascii_lowercase().contains(word)
    }
}

/// A run's exit status from its root span's `error.type`.
fn exit_status_of(kind: Option<&str>) -> ExitStatus {
    let kind = kind.unwrap_or_default().to_ascii_lowercase();
    if kind.contains("timeout") {
        ExitStatus::ExitTimeout
    } else if kind.contains("context") {
        ExitStatus::ExitContext
    } else if kind.contains("cost") || kind.contains("budget") {
        ExitStatus::ExitCost
    } else {
        ExitStatus::ExitError
    }
}

impl Evaluation {
    /// What the attributes of a `gen_ai.evaluation.result` event (a span event or a log
    /// record) state: success from `gen_ai.evaluation.score.label`, the score from
    /// `gen_ai.evaluation.score.value` when within 0..=1.
    pub(super) fn of(attributes: &[KeyValue]) -> Evaluation {
        Evaluation {
            success: attribute_str(attributes, "gen_ai.evaluation.score.label")
                .and_then(verdict_of_label),
            score: attribute_number(attributes, "gen_ai.evaluation.score.value")
                .filter(|s| (0.0..=1.0).contains(s)),
        }
    }
}

/// `gen_ai.evaluation.score.label` → success, when the label says.
fn verdict_of_label(label: &str) -> Option<bool> {
    match label.to_ascii_lowercase().as_str() {
        "pass" | "passed" | "success" | "succeeded" | "true" | "correct" | "resolved" => Some(true),
        "fail" | "failed" | "failure" | "false" | "incorrect" | "unresolved" => Some(false),
        _ => None,
    }
}

/// Fills `d`'s prices and cost. The cost is known when the prompt and completion counts
/// are, and the cache counts are known wherever their price differs from the prompt's
/// (an unstated cache count cannot change the cost then).
fn price(prices: &Prices, d: &mut Deliberation) {
    d.prompt_price_per_mtok = Some(prices.prompt.usd_per_mtok());
    d.completion_price_per_mtok = Some(prices.completion.usd_per_mtok());
    d.cached_prompt_price_per_mtok = prices.cached_prompt.map(|p| p.usd_per_mtok());
    let split = |count: Option<u64>, separate_price: bool| match (count, separate_price) {
        (Some(n), _) => Some(n),
        (None, false) => Some(0),
        (None, true) => None,
    };
    let usage = (|| {
        Some(TokenUsage {
            input: d.input_tokens?,
            cached_input: split(d.cached_input_tokens, prices.cached_prompt.is_some())?,
            cache_write: split(d.cache_write_tokens, prices.cache_write.is_some())?,
            output: d.output_tokens?,
            reasoning: d.reasoning_tokens.unwrap_or(0),
        })
    })();
    if let Some(usage) = usage {
        d.cost_usd = Some(prices.cost(&usage).to_number());
        d.pricing_source = PricingSource::Table;
    }
}

/// The id of the event of `kind` of span `span` of trace `trace` (both hex).
pub(super) fn span_event_id(trace: &str, span: &str, kind: &str) -> Uuid {
    derived_uuid(&format!("otlp/{trace}/{span}/{kind}"))
}

/// Nanoseconds since the epoch → a time; 0 (unset) is none.
pub(super) fn time(unix_nano: u64) -> Option<DateTime<Utc>> {
    if unix_nano == 0 {
        return None;
    }
    let nanos = i64::try_from(unix_nano).ok()?;
    Some(DateTime::from_timestamp_nanos(nanos))
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};

    use super::*;

    const T0: u64 = 1_760_000_000_000_000_000;

    fn kv(key: &str, value: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value: Some(AnyValue { value: Some(value) }),
            ..KeyValue::default()
        }
    }

    fn text(key: &str, value: &str) -> KeyValue {
        kv(key, any_value::Value::StringValue(value.to_owned()))
    }

    fn int(key: &str, value: i64) -> KeyValue {
        kv(key, any_value::Value::IntValue(value))
    }

    fn span(id: u8, parent: Option<u8>, attributes: Vec<KeyValue>) -> Span {
        Span {
            trace_id: vec![7; 16],
            span_id: vec![id; 8],
            parent_span_id: parent.map(|p| vec![p; 8]).unwrap_or_default(),
            name: format!("span {id}"),
            start_time_unix_nano: T0,
            end_time_unix_nano: T0 + 1_500_000_000,
            attributes,
            ..Span::default()
        }
    }

    fn request(spans: Vec<Span>) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![text("service.name", "svc")],
                    ..Resource::default()
                }),
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            }],
        }
    }

    impl Mapper {
        /// The events of `request` to a receiver that saw nothing before.
        fn map_alone(&self, request: &ExportTraceServiceRequest) -> Mapped {
            let started = DateTime::from_timestamp_nanos(0);
            self.map(
                request,
                &Ledger::new(started, crate::runs::DEFAULT_RUN_IDLE),
            )
        }
    }

    fn mapper() -> Mapper {
        Mapper {
            host: "h".to_owned(),
            prices: None,
            experiment: bench_schemas::ExperimentRef::default(),
        }
    }

    fn chat(id: u8) -> Span {
        span(
            id,
            Some(1),
            vec![
                text("gen_ai.operation.name", "chat"),
                text("gen_ai.system", "openai"),
                int("gen_ai.usage.prompt_tokens", 10),
                int("gen_ai.usage.completion_tokens", 5),
                int("gen_ai.usage.details.cache_read_tokens", 4),
                int("gen_ai.usage.reasoning_tokens", 2),
            ],
        )
    }

    #[test]
    fn a_span_gives_the_same_events_alone_or_in_any_batch() {
        let alone = mapper().map_alone(&request(vec![chat(2)]));
        let together = mapper().map_alone(&request(vec![span(1, None, vec![]), chat(2)]));
        let chat_events = |m: &Mapped| -> Vec<BenchmarkEvent> {
            m.events
                .iter()
                .map(|(_, e)| e.clone())
                .filter(|e| e.step_id.is_some())
                .collect()
        };
        assert_eq!(chat_events(&alone), chat_events(&together));
        assert_eq!(chat_events(&alone).len(), 2, "step + deliberation");
        let types: Vec<&str> = together
            .events
            .iter()
            .map(|(_, e)| e.event_type().as_str())
            .collect();
        assert_eq!(
            types,
            ["step", "deliberation", "run_start", "run_stop"],
            "the root is a run, closed once its children are recorded"
        );
        assert!(together.events.iter().all(|(_, e)| e.seq.is_none()));
    }

    #[test]
    fn a_root_closes_its_run_with_the_calls_before_it_and_its_stated_verdict() {
        let ledger = Ledger::new(
            DateTime::from_timestamp_nanos(0),
            crate::runs::DEFAULT_RUN_IDLE,
        );
        let mut other_model = chat(3);
        other_model
            .attributes
            .push(text("gen_ai.request.model", "model-b"));
        let earlier = mapper().map(&request(vec![chat(2), other_model]), &ledger);
        assert_eq!(earlier.events.len(), 4, "two calls, no run yet");
        let mut root = span(1, None, vec![]);
        root.attributes
            .push(kv("benchstream.success", any_value::Value::BoolValue(true)));
        let closing = mapper().map(&request(vec![root, chat(4)]), &ledger);
        let (start, stop) = match &closing.events[..] {
            [_, _, (_, start), (_, stop)] => (start, stop),
            other => panic!("step, deliberation, run_start, run_stop: {other:?}"),
        };
        let (Payload::RunStart(start_payload), Payload::RunStop(stop_payload)) =
            (&start.payload, &stop.payload)
        else {
            panic!("not a run");
        };
        assert_eq!(
            start_payload.config.model, "unknown",
            "2 unknown-model calls of 3"
        );
        assert_eq!(start_payload.scoring_version, STATED_SCORING_VERSION);
        assert_eq!(start.cfg_hash, start_payload.config.canonical_hash());
        assert_eq!(
            (
                stop_payload.api_calls,
                stop_payload.total_tokens,
                stop_payload.cost_usd
            ),
            (Some(3), Some(45), None),
            "no price table: the cost is unknown"
        );
        assert_eq!(
            stop.extra["models"],
            serde_json::json!({"unknown": 2, "model-b": 1})
        );
    }

    fn run_stop_of(mapped: &Mapped) -> Option<RunStop> {
        mapped.events.iter().find_map(|(_, e)| match &e.payload {
            Payload::RunStop(stop) => Some(stop.clone()),
            _ => None,
        })
    }

    #[test]
    fn a_span_stating_run_end_closes_its_run_as_a_root_would_and_the_root_then_closes_nothing() {
        let ledger = Ledger::new(
            DateTime::from_timestamp_nanos(0),
            crate::runs::DEFAULT_RUN_IDLE,
        );
        // A final span, after the calls: it does not enclose the run.
        let mut end = span(5, Some(1), vec![text("benchstream.success", "false")]);
        end.start_time_unix_nano = T0 + 2_000_000_000;
        end.end_time_unix_nano = T0 + 2_100_000_000;
        let mut not_end = span(6, Some(1), vec![]);
        not_end
            .attributes
            .push(kv(RUN_END, any_value::Value::BoolValue(false)));
        let closing = mapper().map(&request(vec![chat(2), chat(3), not_end]), &ledger);
        assert_eq!(
            run_stop_of(&closing),
            None,
            "run_end = false closes nothing"
        );
        end.attributes
            .push(kv(RUN_END, any_value::Value::BoolValue(true)));
        let closing = mapper().map(&request(vec![end.clone()]), &ledger);
        let stop = run_stop_of(&closing).expect("closed by the span");
        assert_eq!(
            (
                stop.success,
                stop.api_calls,
                stop.total_tokens,
                stop.wall_time_ms
            ),
            (Some(false), Some(2), Some(30), None),
            "its verdict and the totals so far; no wall time: it does not enclose the run"
        );
        let start = closing
            .events
            .iter()
            .find(|(_, e)| matches!(e.payload, Payload::RunStart(_)))
            .expect("run_start");
        assert_eq!(start.1.ts, time(T0).expect("t0"), "the run's first span");
        let again = mapper().map(&request(vec![end]), &ledger);
        assert_eq!(
            again
                .events
                .iter()
                .map(|(_, e)| e.event_id)
                .collect::<Vec<_>>(),
            closing
                .events
                .iter()
                .map(|(_, e)| e.event_id)
                .collect::<Vec<_>>(),
            "sent again: the same events"
        );
        let root = mapper().map(&request(vec![span(1, None, vec![])]), &ledger);
        assert_eq!(run_stop_of(&root), None, "closed already");
        assert_eq!(ledger.late_roots(), 1);
    }

    #[test]
    fn calls_each_a_trace_of_their_own_in_a_named_run_leave_it_open_until_run_end() {
        let ledger = Ledger::new(
            DateTime::from_timestamp_nanos(0),
            crate::runs::DEFAULT_RUN_IDLE,
        );
        let named = |trace: u8, mut s: Span| {
            s.trace_id = vec![trace; 16];
            s.parent_span_id.clear();
            s.attributes.push(text(RUN_ID, "agent-7"));
            s
        };
        for trace in [1, 2] {
            let call = mapper().map(&request(vec![named(trace, chat(trace + 1))]), &ledger);
            assert_eq!(
                run_stop_of(&call),
                None,
                "a call of a named run ends nothing"
            );
        }
        let mut lone = chat(2);
        lone.trace_id = vec![3; 16];
        lone.parent_span_id.clear();
        let unnamed = mapper().map(&request(vec![lone]), &ledger);
        assert_eq!(
            run_stop_of(&unnamed).and_then(|s| s.api_calls),
            Some(1),
            "a lone call of no named run is a run of one call"
        );
        let mut end = named(4, span(9, None, vec![]));
        end.attributes
            .push(kv(RUN_END, any_value::Value::BoolValue(true)));
        let stop = run_stop_of(&mapper().map(&request(vec![end]), &ledger)).expect("run_end");
        assert_eq!(
            (stop.api_calls, stop.total_tokens),
            (Some(2), Some(30)),
            "both traces' calls are the run's"
        );
    }

    #[test]
    fn a_run_closed_by_the_timeout_is_unjudged_unless_an_evaluation_record_judged_it() {
        let context = RunContext::of(&Attributes {
            own: &[],
            resource: &[],
        });
        let at = time(T0).expect("t0");
        let expired = |evaluation| Expired {
            run_id: Uuid::from_u128(1),
            trace: "t".to_owned(),
            context: context.clone(),
            span: (at, at),
            evaluation,
        };
        let verdict = |run: &Expired| match &mapper().timed_out(run) {
            [BenchmarkEvent {
                payload: Payload::RunStart(start),
                ..
            }, BenchmarkEvent {
                payload: Payload::RunStop(stop),
                ..
            }] => (
                start.scoring_version.clone(),
                stop.success,
                stop.final_score,
            ),
            other => panic!("run_start, run_stop: {other:?}"),
        };
        assert_eq!(
            verdict(&expired(None)),
            (SCORING_VERSION.to_owned(), None, None)
        );
        let judged = Evaluation {
            success: Some(true),
            score: Some(0.5),
        };
        assert_eq!(
            verdict(&expired(Some(judged))),
            (STATED_SCORING_VERSION.to_owned(), Some(true), Some(0.5))
        );
    }

    #[test]
    fn alias_token_attributes_are_read_and_unstated_ones_are_null() {
        let mapped = mapper().map_alone(&request(vec![chat(2)]));
        let Some(Payload::Deliberation(d)) = mapped
            .events
            .iter()
            .map(|(_, e)| &e.payload)
            .find(|p| matches!(p, Payload::Deliberation(_)))
            .cloned()
        else {
            panic!("no deliberation");
        };
        assert_eq!(d.provider, "openai");
        assert_eq!(d.model, "unknown");
        assert_eq!(
            (
                d.input_tokens,
                d.cached_input_tokens,
                d.cache_write_tokens,
                d.output_tokens,
                d.reasoning_tokens
            ),
            (Some(10), Some(4), None, Some(5), Some(2))
        );
        assert_eq!((d.latency_ms, d.retries), (Some(1500), None));
        assert_eq!(
            (d.cost_usd, d.pricing_source),
            (None, PricingSource::Unknown)
        );
    }

    #[test]
    fn a_model_missing_from_the_price_table_has_a_null_cost_never_another_models_price() {
        let table = PriceTable::parse(
            "[models.\"model-a\"]\nprompt = 3\ncompletion = 15\ncached_prompt = 0.3\n",
        )
        .expect("table");
        let priced = Mapper {
            prices: Some(table),
            ..mapper()
        };
        let of_model = |model: &str| {
            let mut span = chat(2);
            span.attributes.push(text("gen_ai.request.model", model));
            let mapped = priced.map_alone(&request(vec![span]));
            mapped
                .events
                .iter()
                .find_map(|(_, e)| match &e.payload {
                    Payload::Deliberation(d) => Some(d.clone()),
                    _ => None,
                })
                .expect("a deliberation")
        };
        let a = of_model("model-a");
        // 6 uncached prompt x $3 + 4 cached x $0.3 + 5 completion x $15, per million.
        assert_eq!(a.pricing_source, PricingSource::Table);
        let expected = (6.0 * 3.0 + 4.0 * 0.3 + 5.0 * 15.0) / 1e6;
        assert!((a.cost_usd.expect("priced") - expected).abs() < 1e-15);
        let b = of_model("model-b");
        assert_eq!(
            (b.cost_usd, b.pricing_source),
            (None, PricingSource::Unknown)
        );
        assert_eq!(b.prompt_price_per_mtok, None);
    }

    fn deliberation_of(attributes: Vec<KeyValue>) -> Deliberation {
        mapper()
            .map_alone(&request(vec![span(2, Some(1), attributes)]))
            .events
            .into_iter()
            .find_map(|(_, e)| match e.payload {
                Payload::Deliberation(d) => Some(d),
                _ => None,
            })
            .expect("an inference span")
    }

    #[test]
    fn openinference_and_older_conventions_fill_the_same_columns() {
        let openinference = deliberation_of(vec![
            text("openinference.span.kind", "LLM"),
            text("llm.model_name", "model-a"),
            text("llm.system", "openai"),
            int("llm.token_count.prompt", 100),
            int("llm.token_count.completion", 10),
            int("llm.token_count.prompt_details.cache_read", 40),
            int("llm.token_count.prompt_details.cache_write", 5),
            int("llm.token_count.completion_details.reasoning", 3),
            text("llm.output_messages.0.message.content", "done"),
        ]);
        assert_eq!(
            (
                openinference.model.as_str(),
                openinference.provider.as_str(),
                openinference.input_tokens,
                openinference.cached_input_tokens,
                openinference.cache_write_tokens,
                openinference.output_tokens,
                openinference.reasoning_tokens,
                openinference.raw_output.as_str(),
            ),
            (
                "model-a",
                "openai",
                Some(100),
                Some(40),
                Some(5),
                Some(10),
                Some(3),
                "done"
            )
        );
        let older = deliberation_of(vec![
            text("llm.request.type", "chat"),
            text("gen_ai.system", "anthropic"),
            text("gen_ai.request.model", "model-b"),
            int("llm.usage.prompt_tokens", 7),
            int("llm.usage.completion_tokens", 2),
            text("gen_ai.completion.0.content", "older"),
        ]);
        assert_eq!(
            (
                older.provider.as_str(),
                older.input_tokens,
                older.output_tokens,
                older.cached_input_tokens,
                older.raw_output.as_str()
            ),
            ("anthropic", Some(7), Some(2), None, "older"),
            "what the convention does not say is NULL"
        );
        let message = AnyValue {
            value: Some(any_value::Value::StringValue("assistant".to_owned())),
        };
        let structured = deliberation_of(vec![
            text("gen_ai.operation.name", "chat"),
            kv(
                "gen_ai.output.messages",
                any_value::Value::ArrayValue(opentelemetry_proto::tonic::common::v1::ArrayValue {
                    values: vec![message],
                }),
            ),
        ]);
        assert_eq!(structured.raw_output, r#"["assistant"]"#);
    }

    #[test]
    fn spans_with_bad_ids_or_times_are_rejected_with_a_reason() {
        let mut short = chat(2);
        short.span_id = vec![1, 2];
        let mut backwards = chat(3);
        backwards.end_time_unix_nano = T0 - 1;
        let mapped = mapper().map_alone(&request(vec![short, backwards, chat(4)]));
        assert_eq!((mapped.spans, mapped.rejected), (3, 2));
        assert_eq!(mapped.reasons.len(), 2);
        assert!(mapped.events.iter().all(|(span, _)| *span == 2));
    }
}
