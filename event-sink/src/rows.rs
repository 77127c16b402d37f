//! ClickHouse rows: one struct per table, built from a decoded [`BenchmarkEvent`] by
//! borrowing its strings (no copy of the text on the way to the insert buffer), and
//! encoded by `rowbinary` in field order: a field's type is its column's
//! encoding (`Option<T>` is `Nullable(T)`).
//!
//! The column lists here and the DDL in `deploy/clickhouse/migrations/` must agree: inserts
//! run without schema validation (18.16 lacks `RowBinaryWithNamesAndTypes`), and the
//! integration tests read every column back to catch drift. Encodings: enums as their wire
//! names (String), booleans as UInt8, `ts` as DateTime (seconds) plus `ts_ms` (epoch
//! milliseconds), absent optionals as NULL (`seq` too: it is Nullable because the Smith
//! protocol has none, and runs received as OpenTelemetry traces send it null), `protocol` naming the wire protocol of the row.
//!
//! Events of both wire protocols map onto the same rows. A Smith protocol event
//! ([`bench_schemas::smith`]) fills what it sends and leaves NULL what it does not (host, model,
//! provider, strategy, replay pins, exit status, call counts); its own short hashes go
//! into `cfg_hash`/`env_hash`/`tool_args_hash` verbatim, and `protocol` tells the rows
//! apart.
//!
//! This module owns the event → row mapping only; which rows go into which insert is the
//! writer's business.

use bench_schemas::smith::{
    SmithEvent, SmithPayload, SmithRunConfig, SmithRunResult, SmithStep, SmithSuggestion,
    SmithToolCall,
};
use bench_schemas::{
    BenchmarkEvent, ContextDecision, ContextStrategy, Decoded, Deliberation, EventType,
    ExperimentDecision, Failure, GenAiEvent, OptimizerUpdate, Payload, Protocol, RunStart, RunStop,
    Step, TaskValidation, TestOutcome, ToolCall,
};
use chrono::{DateTime, Utc};
use clickhouse::Row;
use serde::{Serialize, Serializer};
use uuid::Uuid;

/// Every table the sink writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    /// `events_raw`: every accepted event's body.
    EventsRaw,
    /// `dead_letters`: what the sink could not accept.
    DeadLetters,
    /// The typed table of one event type.
    Typed(EventType),
}

impl Table {
    /// The table's name in ClickHouse.
    pub const fn name(self) -> &'static str {
        match self {
            Table::EventsRaw => "events_raw",
            Table::DeadLetters => "dead_letters",
            Table::Typed(t) => typed_table(t),
        }
    }
}

/// The typed table of an event type.
pub const fn typed_table(event_type: EventType) -> &'static str {
    match event_type {
        EventType::RunStart => "run_starts",
        EventType::RunStop => "run_stops",
        EventType::Step => "steps",
        EventType::ToolCall => "tool_calls",
        EventType::Deliberation => "deliberations",
        EventType::ContextDecision => "context_decisions",
        EventType::Failure => "failures",
        EventType::OptimizerUpdate => "optimizer_updates",
        EventType::TestOutcome => "test_outcomes",
        EventType::TaskValidation => "task_validations",
        EventType::GenaiEvent => "genai_events",
        EventType::ExperimentDecision => "experiment_decisions",
    }
}

/// Where and when the sink got the message holding an event: the columns every row of it
/// shares besides the event's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// When the sink decoded it, epoch seconds (`received_at`).
    pub received_at: u32,
    /// JetStream stream sequence of the message (`stream_seq`); the lowest one of an
    /// event's copies wins under FINAL.
    pub stream_seq: u64,
}

/// Seconds since the epoch as ClickHouse `DateTime` (UInt32), clamped to its range.
pub fn datetime(epoch_seconds: i64) -> u32 {
    u32::try_from(epoch_seconds.max(0)).unwrap_or(u32::MAX)
}

/// Bytes stored in a `String` column as they are (RowBinary), or as lossy UTF-8 text for
/// human-readable serializers (JSON), which cannot carry arbitrary bytes.
#[derive(Debug, Clone, Copy)]
pub struct RawBytes<'a>(pub &'a [u8]);

impl Serialize for RawBytes<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(&String::from_utf8_lossy(self.0))
        } else {
            serializer.serialize_bytes(self.0)
        }
    }
}

/// What an `events_raw` row needs of an accepted event: kept per message in place of
/// the decoded event, which is several times the size of the JSON (the typed row decodes
/// the body again when it is written).
#[derive(Debug, Clone, PartialEq)]
pub struct RawEnvelope {
    /// The event's id: the dedup key.
    pub event_id: Uuid,
    /// The run it belongs to.
    pub run_id: Uuid,
    /// Its type, which picks the typed table.
    pub event_type: EventType,
    /// The benchmark task.
    pub task_id: String,
    /// Per-run sequence number; `None` when the protocol has none (Smith) or the
    /// producer sent null (runs received as OpenTelemetry traces).
    pub seq: Option<u64>,
    /// When it happened, epoch seconds (DateTime).
    pub ts: u32,
    /// When it happened, epoch milliseconds.
    pub ts_ms: i64,
    /// The producing host; `None` when the protocol does not say (Smith).
    pub host: Option<String>,
    /// The agent policy under test.
    pub policy_id: String,
    /// Which wire protocol the event came in.
    pub protocol: Protocol,
}

impl RawEnvelope {
    /// The envelope of `event`.
    pub fn of(event: &Decoded) -> Self {
        let env = Envelope::of(event);
        RawEnvelope {
            event_id: env.event_id,
            run_id: env.run_id,
            event_type: event.event_type(),
            task_id: env.task_id.to_owned(),
            seq: env.seq,
            ts: datetime(env.ts.timestamp()),
            ts_ms: env.ts.timestamp_millis(),
            host: env.host.map(str::to_owned),
            policy_id: env.policy_id.to_owned(),
            protocol: env.protocol,
        }
    }
}

/// `events_raw`: every accepted event as received. Columns as in the DDL.
#[derive(Debug, Row, Serialize)]
pub struct EventRawRow<'a> {
    /// The event's id.
    #[serde(with = "clickhouse::serde::uuid")]
    pub event_id: Uuid,
    /// Its run.
    #[serde(with = "clickhouse::serde::uuid")]
    pub run_id: Uuid,
    /// Its task.
    pub task_id: &'a str,
    /// Its type's wire name.
    #[serde(rename = "type")]
    pub event_type: &'static str,
    /// Per-run sequence number; NULL when the protocol has none.
    pub seq: Option<u64>,
    /// When it happened, epoch seconds.
    pub ts: u32,
    /// When it happened, epoch milliseconds.
    pub ts_ms: i64,
    /// The producing host; NULL when the protocol does not say.
    pub host: Option<&'a str>,
    /// The policy under test.
    pub policy_id: &'a str,
    /// The message body byte for byte.
    pub raw: RawBytes<'a>,
    /// The subject it was published on.
    pub subject: &'a str,
    /// JetStream stream sequence of the message.
    pub stream_seq: u64,
    /// When the sink decoded it, epoch seconds.
    pub received_at: u32,
    /// Which wire protocol produced it.
    pub protocol: &'static str,
}

impl<'a> EventRawRow<'a> {
    /// The raw row of an event with envelope `env`, whose message body was `raw`.
    pub fn new(env: &'a RawEnvelope, raw: &'a [u8], subject: &'a str, arrival: Arrival) -> Self {
        EventRawRow {
            event_id: env.event_id,
            run_id: env.run_id,
            task_id: &env.task_id,
            event_type: env.event_type.as_str(),
            seq: env.seq,
            ts: env.ts,
            ts_ms: env.ts_ms,
            host: env.host.as_deref(),
            policy_id: &env.policy_id,
            raw: RawBytes(raw),
            subject,
            stream_seq: arrival.stream_seq,
            received_at: arrival.received_at,
            protocol: env.protocol.as_str(),
        }
    }
}

/// `dead_letters`: a message the sink could not accept. Columns as in the DDL.
#[derive(Debug, Row, Serialize)]
pub struct DeadLetterRow<'a> {
    /// When the sink decoded it, epoch seconds.
    pub received_at: u32,
    /// The JetStream stream.
    pub stream: &'a str,
    /// Its stream sequence.
    pub stream_seq: u64,
    /// The subject it was published on.
    pub subject: &'a str,
    /// Its headers, `Name: value` lines.
    pub headers: String,
    /// The body byte for byte.
    pub raw: RawBytes<'a>,
    /// Short stable class of the reason.
    pub error_class: &'a str,
    /// The reason, readable.
    pub error: &'a str,
    /// How many times JetStream had delivered it.
    pub delivered: u64,
    /// The event_id it carries when it decoded; `None` when it did not.
    #[serde(with = "clickhouse::serde::uuid::option")]
    pub event_id: Option<Uuid>,
}

/// Defines a typed row struct: the envelope columns, then the payload columns given.
macro_rules! typed_row {
    ($(#[$doc:meta])* $name:ident { $($(#[$attr:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$doc])*
        // One field per column, named as the column: the columns are documented where
        // they are defined (deploy/clickhouse/README.md, PROVENANCE.md), not twice.
        #[allow(missing_docs)]
        #[derive(Debug, Row, Serialize)]
        pub struct $name<'a> {
            #[serde(with = "clickhouse::serde::uuid")]
            pub event_id: Uuid,
            #[serde(with = "clickhouse::serde::uuid")]
            pub run_id: Uuid,
            pub task_id: &'a str,
            #[serde(with = "clickhouse::serde::uuid::option")]
            pub step_id: Option<Uuid>,
            pub seq: Option<u64>,
            pub ts: u32,
            pub ts_ms: i64,
            pub policy_id: &'a str,
            pub cfg_hash: &'a str,
            pub env_hash: &'a str,
            pub seed: Option<u64>,
            pub host: Option<&'a str>,
            pub received_at: u32,
            $($(#[$attr])* pub $field: $ty,)*
            /// Which wire protocol produced the row.
            pub protocol: &'static str,
            /// JetStream stream sequence of the message; the lowest wins under FINAL.
            pub stream_seq: Option<u64>,
        }
    };
}

/// The envelope of an event of either protocol, borrowed: what the envelope columns of
/// its rows are taken from.
#[derive(Debug, Clone, Copy)]
struct Envelope<'a> {
    /// The dedup key (derived for Smith events without a UUID `Nats-Msg-Id`).
    event_id: Uuid,
    /// The run.
    run_id: Uuid,
    /// The task.
    task_id: &'a str,
    /// The step; always set by Smith, null for native run-level events.
    step_id: Option<Uuid>,
    /// `None`: Smith events have no seq.
    seq: Option<u64>,
    /// When it happened.
    ts: &'a DateTime<Utc>,
    /// The policy under test.
    policy_id: &'a str,
    /// SHA-256 for native events, Smith's own short hash for Smith events.
    cfg_hash: &'a str,
    /// As `cfg_hash`.
    env_hash: &'a str,
    /// The producer's seed; `None` when it states none (Smith always does).
    seed: Option<u64>,
    /// `None`: Smith events name no host.
    host: Option<&'a str>,
    /// The `protocol` column.
    protocol: Protocol,
}

impl<'a> Envelope<'a> {
    fn of(event: &'a Decoded) -> Self {
        match event {
            Decoded::Benchstream(e) => Envelope::native(e),
            Decoded::Smith(e) => Envelope::smith(e),
        }
    }

    fn native(e: &'a BenchmarkEvent) -> Self {
        Envelope {
            event_id: e.event_id,
            run_id: e.run_id,
            task_id: &e.task_id,
            step_id: e.step_id,
            seq: e.seq,
            ts: &e.ts,
            policy_id: &e.policy_id,
            cfg_hash: e.cfg_hash.as_str(),
            env_hash: e.env_hash.as_str(),
            seed: e.seed,
            host: Some(&e.host),
            protocol: Protocol::Benchstream,
        }
    }

    fn smith(e: &'a SmithEvent) -> Self {
        Envelope {
            event_id: e.event_id,
            run_id: e.run_id,
            task_id: &e.task_id,
            step_id: Some(e.step_id),
            seq: None,
            ts: &e.ts,
            policy_id: &e.policy_id,
            cfg_hash: &e.cfg_hash,
            env_hash: &e.env_hash,
            seed: Some(e.seed),
            host: None,
            protocol: Protocol::Smith,
        }
    }
}

/// An event's envelope and when the sink received it.
#[derive(Debug, Clone, Copy)]
struct Received<'a> {
    /// The event's envelope columns.
    env: Envelope<'a>,
    /// When and in which stream message it arrived.
    arrival: Arrival,
}

/// Builds a typed row from the envelope columns of a [`Received`] event and the payload
/// column values.
macro_rules! with_envelope {
    ($name:ident, $received:expr, { $($field:ident: $value:expr),* $(,)? }) => {{
        let Received { env, arrival } = *$received;
        $name {
            event_id: env.event_id,
            run_id: env.run_id,
            task_id: env.task_id,
            step_id: env.step_id,
            seq: env.seq,
            ts: datetime(env.ts.timestamp()),
            ts_ms: env.ts.timestamp_millis(),
            policy_id: env.policy_id,
            cfg_hash: env.cfg_hash,
            env_hash: env.env_hash,
            seed: env.seed,
            host: env.host,
            received_at: arrival.received_at,
            protocol: env.protocol.as_str(),
            stream_seq: Some(arrival.stream_seq),
            $($field: $value,)*
        }
    }};
}

typed_row! {
    /// `run_starts`: the run config (flattened) and replay metadata.
    RunStartRow {
        model: Option<&'a str>,
        provider: Option<&'a str>,
        strategy: Option<&'static str>,
        observation_window: Option<u32>,
        summary_interval: Option<u32>,
        summary_keep: Option<u32>,
        summarizer_model: Option<&'a str>,
        max_iterations: Option<u32>,
        temperature: Option<f64>,
        context_window: Option<u32>,
        pruning_threshold: f64,
        planner_depth: u32,
        debate_rounds: u32,
        available_tools: &'a [String],
        tool_timeout_ms: Option<u64>,
        retry_max_retries: u32,
        retry_backoff_ms: u64,
        retry_exponential_backoff: bool,
        retry_on_flake: bool,
        retry_on_timeout: bool,
        execution_timeout_ms: u64,
        failing_tests_patience: u32,
        no_progress_timeout_ms: u64,
        docker_image: Option<&'a str>,
        tools_commit: &'a str,
        sandbox_memory_mb: Option<u64>,
        sandbox_cpu_cores: f64,
        sandbox_disk_mb: u64,
        sandbox_network_enabled: bool,
        sandbox_execution_timeout_ms: u64,
        cost_limit_usd: Option<f64>,
        scenario_name: Option<&'a str>,
        scenario_sha256: Option<&'a str>,
        fixture_sha256: Option<&'a str>,
        scoring_version: Option<&'a str>,
        runner_version: Option<&'a str>,
        sweep_name: Option<&'a str>,
        sweep_key: Option<&'a str>,
        sweep_trial: Option<u64>,
        sandbox_kind: Option<&'a str>,
        experiment: Option<&'a str>,
        repeat: Option<u32>,
        planned_runs: Option<u32>,
        tag_keys: Vec<&'a str>,
        tag_values: Vec<&'a str>,
        endpoint: Option<&'a str>,
        max_tokens: Option<u32>,
        system_prompt_sha256: Option<&'a str>,
        tool_definitions_sha256: Option<&'a str>,
        image_reference: Option<&'a str>,
        image_digest: Option<&'a str>,
    }
}

typed_row! {
    /// `run_stops`: the result of a run.
    RunStopRow {
        success: Option<bool>,
        final_score: Option<f64>,
        wall_time_ms: Option<u64>,
        total_tokens: Option<u64>,
        tool_errors: Option<u32>,
        stability_variance: Option<f64>,
        failing_tests: &'a [String],
        tests_passed: Option<u32>,
        tests_failed: Option<u32>,
        files_modified: Option<u32>,
        early_stopped: bool,
        early_stop_reason: Option<&'a str>,
        exit_status: Option<&'static str>,
        cost_usd: Option<f64>,
        api_calls: Option<u32>,
        turns: Option<u32>,
        diff_sha256: Option<&'a str>,
        test_files_edited: Option<u32>,
        history_commands: Option<u32>,
        network_commands: Option<u32>,
        gold_similarity: Option<f64>,
        regrade_judgings: Option<u32>,
        regrade_resolved: Option<u32>,
        diff_excluded: Option<u32>,
        workspace_verdict_differs: Option<bool>,
        shadows_module: Option<u32>,
        forged_events: Option<u32>,
        final_diff: Option<&'a str>,
        final_diff_truncated: Option<bool>,
    }
}

typed_row! {
    /// `test_outcomes`: one judged test of a SWE-bench-format task.
    TestOutcomeRow {
        test_id: &'a str,
        test_set: &'static str,
        before: Option<bool>,
        after: bool,
        duration_ms: Option<u64>,
        reason: Option<&'a str>,
    }
}

typed_row! {
    /// `experiment_decisions`: what an experiment run until decided concluded.
    ExperimentDecisionRow {
        experiment: &'a str,
        baseline: &'a str,
        candidate: &'a str,
        decision: &'static str,
        cs_low: Option<f64>,
        cs_high: Option<f64>,
        rounds: u64,
        alpha: f64,
        detect: Option<f64>,
    }
}

typed_row! {
    /// `task_validations`: one validation of a SWE-bench-format task.
    TaskValidationRow {
        scenario: &'a str,
        task_sha256: &'a str,
        fixture_sha256: &'a str,
        repeats: u32,
        broken: bool,
        reasons: Vec<&'a str>,
        tests: u32,
        flaky_tests: Vec<&'a str>,
    }
}

typed_row! {
    /// `genai_events`: one OpenTelemetry GenAI event of a run received as traces.
    GenAiEventRow {
        name: &'a str,
        trace_id: &'a str,
        span_id: Option<&'a str>,
        body: &'a str,
        attributes: &'a str,
        content_truncated: bool,
    }
}

typed_row! {
    /// `steps`: one agent step.
    StepRow {
        step_type: &'static str,
        content: &'a str,
        content_truncated: bool,
        tokens_in: Option<u64>,
        tokens_out: Option<u64>,
        wall_time_ms: Option<u64>,
        planned_step: Option<u32>,
        planned: bool,
        context_kb: Option<f64>,
    }
}

typed_row! {
    /// `tool_calls`: one tool invocation, evidence footprint flattened.
    ToolCallRow {
        tool_name: &'a str,
        tool_args_hash: &'a str,
        latency_ms: Option<u64>,
        retries: Option<u32>,
        exit_kind: &'static str,
        exit_message: Option<&'a str>,
        files_read: &'a [String],
        files_modified: &'a [String],
        lines_changed: u64,
        tests_added: u32,
        tests_modified: u32,
        bytes_read: u64,
        bytes_written: u64,
        user_feedback_score: Option<f64>,
        intent_accuracy: Option<f64>,
        call_id: Option<&'a str>,
    }
}

typed_row! {
    /// `deliberations`: one LLM call; `actions[]` as four parallel arrays.
    DeliberationRow {
        agent: &'a str,
        provider: &'a str,
        model: &'a str,
        status: &'static str,
        latency_ms: Option<u64>,
        input_tokens: Option<u64>,
        cached_input_tokens: Option<u64>,
        cache_write_tokens: Option<u64>,
        output_tokens: Option<u64>,
        reasoning_tokens: Option<u64>,
        cost_usd: Option<f64>,
        pricing_source: &'static str,
        prompt_price_per_mtok: Option<f64>,
        completion_price_per_mtok: Option<f64>,
        cached_prompt_price_per_mtok: Option<f64>,
        retries: Option<u32>,
        action_types: Vec<&'a str>,
        action_targets: Vec<&'a str>,
        action_priorities: Vec<u32>,
        action_reasons: Vec<&'a str>,
        summary: &'a str,
        summary_truncated: bool,
        confidence: Option<f64>,
        raw_output: &'a str,
        raw_output_truncated: bool,
        error: Option<&'a str>,
    }
}

typed_row! {
    /// `context_decisions`: one keep/prune decision.
    ContextDecisionRow {
        segment_id: &'a str,
        kept: bool,
        segment_kb: f64,
        segment_type: &'static str,
        impact_probe_ev: Option<f64>,
        pruning_algorithm: &'a str,
        confidence_score: f64,
    }
}

typed_row! {
    /// `failures`: root cause and recoveries; nested lists kept as JSON text.
    FailureRow {
        root_kind: &'static str,
        first_failure_root: String,
        recovery_attempts: String,
        recovery_attempt_count: u32,
        recovered: bool,
        recoverable: bool,
        error_category: &'a str,
        error_confidence: f64,
        similar_failures: u32,
        contributing_factors: &'a [String],
        remediation_suggestions: &'a [String],
    }
}

typed_row! {
    /// `optimizer_updates`: a suggested config (as JSON text) and why.
    OptimizerUpdateRow {
        suggested_model: Option<&'a str>,
        suggested_strategy: Option<&'static str>,
        suggested_config: String,
        confidence: f64,
        expected_improvement: f64,
        exploration_vs_exploitation: f64,
        reasoning: &'a str,
        trial: Option<u64>,
        trial_run_ids: Vec<String>,
        trial_solved: Option<u32>,
        trial_cost_usd: Option<f64>,
        trial_total_tokens: Option<u64>,
        trial_wall_time_ms: Option<u64>,
        objective: Option<f64>,
    }
}

/// The typed row of one event, whichever its type.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum TypedRow<'a> {
    /// A `run_starts` row.
    RunStart(RunStartRow<'a>),
    /// A `run_stops` row.
    RunStop(RunStopRow<'a>),
    /// A `steps` row.
    Step(StepRow<'a>),
    /// A `tool_calls` row.
    ToolCall(ToolCallRow<'a>),
    /// A `deliberations` row.
    Deliberation(DeliberationRow<'a>),
    /// A `context_decisions` row.
    ContextDecision(ContextDecisionRow<'a>),
    /// A `failures` row.
    Failure(FailureRow<'a>),
    /// An `optimizer_updates` row.
    OptimizerUpdate(OptimizerUpdateRow<'a>),
    /// A `test_outcomes` row.
    TestOutcome(TestOutcomeRow<'a>),
    /// A `task_validations` row.
    TaskValidation(TaskValidationRow<'a>),
    /// A `genai_events` row.
    GenaiEvent(GenAiEventRow<'a>),
    /// An `experiment_decisions` row.
    ExperimentDecision(ExperimentDecisionRow<'a>),
}

impl<'a> TypedRow<'a> {
    /// The typed row of `event`, delivered as `arrival`.
    pub fn new(event: &'a Decoded, arrival: Arrival) -> Self {
        let received = &Received {
            env: Envelope::of(event),
            arrival,
        };
        match event {
            Decoded::Benchstream(e) => Self::native(received, &e.payload),
            Decoded::Smith(e) => Self::smith(received, &e.payload),
        }
    }

    fn native(received: &Received<'a>, payload: &'a Payload) -> Self {
        match payload {
            Payload::RunStart(p) => TypedRow::RunStart(run_start(received, p)),
            Payload::RunStop(p) => TypedRow::RunStop(run_stop(received, p)),
            Payload::Step(p) => TypedRow::Step(step(received, p)),
            Payload::ToolCall(p) => TypedRow::ToolCall(tool_call(received, p)),
            Payload::Deliberation(p) => TypedRow::Deliberation(deliberation(received, p)),
            Payload::ContextDecision(p) => TypedRow::ContextDecision(context_decision(received, p)),
            Payload::Failure(p) => TypedRow::Failure(failure(received, p)),
            Payload::OptimizerUpdate(p) => TypedRow::OptimizerUpdate(optimizer_update(received, p)),
            Payload::TestOutcome(p) => TypedRow::TestOutcome(test_outcome(received, p)),
            Payload::TaskValidation(p) => TypedRow::TaskValidation(task_validation(received, p)),
            Payload::GenaiEvent(p) => TypedRow::GenaiEvent(genai_event(received, p)),
            Payload::ExperimentDecision(p) => {
                TypedRow::ExperimentDecision(experiment_decision(received, p))
            }
        }
    }

    /// Smith payloads: the same tables, NULL where Smith is silent.
    fn smith(received: &Received<'a>, payload: &'a SmithPayload) -> Self {
        match payload {
            SmithPayload::RunStart(p) => TypedRow::RunStart(smith_run_start(received, p)),
            SmithPayload::RunStop(p) => TypedRow::RunStop(smith_run_stop(received, p)),
            SmithPayload::Step(p) => TypedRow::Step(smith_step(received, p)),
            SmithPayload::ToolCall(p) => TypedRow::ToolCall(smith_tool_call(received, p)),
            SmithPayload::ContextDecision(p) => {
                TypedRow::ContextDecision(context_decision(received, p))
            }
            SmithPayload::Failure(p) => TypedRow::Failure(failure(received, p)),
            SmithPayload::OptimizerUpdate(p) => {
                TypedRow::OptimizerUpdate(smith_optimizer_update(received, p))
            }
        }
    }
}

/// A `run_starts` row: the run-config columns, read from `$config` (a native
/// [`bench_schemas::RunConfig`] or a [`bench_schemas::smith::SmithRunConfig`], whose shared fields have
/// the same names), plus the columns given. A setting a native config may leave unstated
/// (null) and Smith always sends is read through `Option::from`, which takes both.
macro_rules! run_start_row {
    ($received:expr, $config:expr, { $($field:ident: $value:expr),* $(,)? }) => {{
        let c = $config;
        with_envelope!(RunStartRow, $received, {
            max_iterations: Option::from(c.max_iterations),
            temperature: Option::from(c.temperature),
            context_window: Option::from(c.context_window),
            pruning_threshold: c.pruning_threshold,
            planner_depth: c.planner_depth,
            debate_rounds: c.debate_rounds,
            available_tools: &c.available_tools,
            tool_timeout_ms: Option::from(c.tool_timeout_ms),
            retry_max_retries: c.retry_policy.max_retries,
            retry_backoff_ms: c.retry_policy.backoff_ms,
            retry_exponential_backoff: c.retry_policy.exponential_backoff,
            retry_on_flake: c.retry_policy.retry_on_flake,
            retry_on_timeout: c.retry_policy.retry_on_timeout,
            execution_timeout_ms: c.execution_timeout_ms,
            failing_tests_patience: c.failing_tests_patience,
            no_progress_timeout_ms: c.no_progress_timeout_ms,
            tools_commit: &c.tools_commit,
            sandbox_memory_mb: c.sandbox_limits.memory_mb,
            sandbox_cpu_cores: c.sandbox_limits.cpu_cores,
            sandbox_disk_mb: c.sandbox_limits.disk_mb,
            sandbox_network_enabled: c.sandbox_limits.network_enabled,
            sandbox_execution_timeout_ms: c.sandbox_limits.execution_timeout_ms,
            $($field: $value,)*
        })
    }};
}

/// A `run_stops` row: the result columns both protocols send in the same shape, read
/// from `$result` (a native [`RunStop`] or a [`SmithRunResult`]), plus the columns given.
macro_rules! run_stop_row {
    ($received:expr, $result:expr, { $($field:ident: $value:expr),* $(,)? }) => {{
        let p = $result;
        with_envelope!(RunStopRow, $received, {
            wall_time_ms: Option::from(p.wall_time_ms),
            failing_tests: &p.failing_tests,
            early_stopped: p.early_stopped,
            early_stop_reason: p.early_stop_reason.as_deref(),
            $($field: $value,)*
        })
    }};
}

/// A `tool_calls` row: the columns both protocols send, read from `$call`, plus the
/// columns given.
macro_rules! tool_call_row {
    ($received:expr, $call:expr, { $($field:ident: $value:expr),* $(,)? }) => {{
        let p = $call;
        let f = &p.evidence_footprint;
        with_envelope!(ToolCallRow, $received, {
            tool_name: &p.tool_name,
            // Smith always measures both; this crate's producers may not.
            latency_ms: Option::from(p.latency_ms),
            retries: Option::from(p.retries),
            files_read: &f.files_read,
            files_modified: &f.files_modified,
            lines_changed: f.lines_changed,
            tests_added: f.tests_added,
            tests_modified: f.tests_modified,
            bytes_read: f.bytes_read,
            bytes_written: f.bytes_written,
            user_feedback_score: p.user_feedback_score,
            intent_accuracy: p.intent_accuracy,
            $($field: $value,)*
        })
    }};
}

fn run_start<'a>(received: &Received<'a>, p: &'a RunStart) -> RunStartRow<'a> {
    let c = &p.config;
    run_start_row!(received, c, {
        model: Some(&c.model),
        provider: Some(&c.provider),
        strategy: c.strategy.map(ContextStrategy::as_str),
        docker_image: c.docker_image.as_deref(),
        observation_window: c.strategy_params.observation_window,
        summary_interval: c.strategy_params.summary_interval,
        summary_keep: c.strategy_params.summary_keep,
        summarizer_model: c.strategy_params.summarizer_model.as_deref(),
        cost_limit_usd: c.cost_limit_usd,
        scenario_name: Some(&p.scenario.name),
        scenario_sha256: Some(p.scenario.sha256.as_str()),
        fixture_sha256: Some(p.fixture_sha256.as_str()),
        scoring_version: Some(&p.scoring_version),
        runner_version: Some(&p.runner_version),
        sweep_name: p.sweep.as_ref().map(|s| s.name.as_str()),
        sweep_key: p.sweep.as_ref().map(|s| s.key.as_str()),
        sweep_trial: p.sweep.as_ref().and_then(|s| s.trial),
        sandbox_kind: p.sandbox.as_ref().map(|s| s.kind.as_str()),
        experiment: p.experiment.name.as_deref(),
        repeat: p.experiment.repeat,
        planned_runs: p.experiment.planned_runs,
        tag_keys: p.experiment.tags.keys().map(String::as_str).collect(),
        tag_values: p.experiment.tags.values().map(String::as_str).collect(),
        endpoint: c.endpoint.as_deref(),
        max_tokens: c.max_tokens,
        system_prompt_sha256: c.system_prompt_sha256.as_ref().map(|h| h.as_str()),
        tool_definitions_sha256: c.tool_definitions_sha256.as_ref().map(|h| h.as_str()),
        image_reference: p.image.as_ref().map(|i| i.reference.as_str()),
        image_digest: p.image.as_ref().map(|i| i.digest.as_str()),
    })
}

/// Smith's config names no model, provider or strategy, and a Smith run pins no scenario,
/// fixture, scoring or runner version.
fn smith_run_start<'a>(received: &Received<'a>, c: &'a SmithRunConfig) -> RunStartRow<'a> {
    run_start_row!(received, c, {
        model: None,
        provider: None,
        strategy: None,
        docker_image: Some(&c.docker_image),
        observation_window: None,
        summary_interval: None,
        summary_keep: None,
        summarizer_model: None,
        cost_limit_usd: None,
        scenario_name: None,
        scenario_sha256: None,
        fixture_sha256: None,
        scoring_version: None,
        runner_version: None,
        sweep_name: None,
        sweep_key: None,
        sweep_trial: None,
        sandbox_kind: None,
        experiment: None,
        repeat: None,
        planned_runs: None,
        tag_keys: Vec::new(),
        tag_values: Vec::new(),
        endpoint: None,
        max_tokens: None,
        system_prompt_sha256: None,
        tool_definitions_sha256: None,
        image_reference: None,
        image_digest: None,
    })
}

fn run_stop<'a>(received: &Received<'a>, p: &'a RunStop) -> RunStopRow<'a> {
    run_stop_row!(received, p, {
        success: p.success,
        final_score: p.final_score,
        total_tokens: p.total_tokens,
        stability_variance: p.stability_variance,
        tests_passed: p.tests_passed,
        tests_failed: p.tests_failed,
        exit_status: Some(p.exit_status.as_str()),
        cost_usd: p.cost_usd,
        api_calls: p.api_calls,
        turns: p.turns,
        tool_errors: p.tool_errors,
        files_modified: p.files_modified,
        diff_sha256: p.diff_sha256.as_ref().map(|h| h.as_str()),
        test_files_edited: p.integrity.as_ref().map(|i| count(&i.test_files_edited)),
        history_commands: p.integrity.as_ref().and_then(|i| i.history_commands),
        network_commands: p.integrity.as_ref().and_then(|i| i.network_commands),
        gold_similarity: p.integrity.as_ref().and_then(|i| i.gold_similarity),
        regrade_judgings: p.regrade.as_ref().map(|r| r.judgings),
        regrade_resolved: p.regrade.as_ref().map(|r| r.resolved),
        diff_excluded: p.integrity.as_ref().map(|i| count(&i.diff_excluded)),
        workspace_verdict_differs: p.integrity.as_ref().and_then(|i| i.workspace_verdict_differs),
        shadows_module: p
            .integrity
            .as_ref()
            .and_then(|i| i.shadows_module.as_deref())
            .map(count),
        forged_events: p.integrity.as_ref().and_then(|i| i.forged_events),
        final_diff: p.final_diff.as_deref(),
        // Whether the text is whole is known only where there is text or it was cut.
        final_diff_truncated: (p.final_diff.is_some() || p.final_diff_truncated)
            .then_some(p.final_diff_truncated),
    })
}

/// How many `items` a flag lists, saturating.
fn count<T>(items: &[T]) -> u32 {
    u32::try_from(items.len()).unwrap_or(u32::MAX)
}

fn test_outcome<'a>(received: &Received<'a>, p: &'a TestOutcome) -> TestOutcomeRow<'a> {
    with_envelope!(TestOutcomeRow, received, {
        test_id: &p.test_id,
        test_set: p.test_set.as_str(),
        before: p.before,
        after: p.after,
        duration_ms: p.duration_ms,
        reason: p.reason.as_deref(),
    })
}

fn experiment_decision<'a>(
    received: &Received<'a>,
    p: &'a ExperimentDecision,
) -> ExperimentDecisionRow<'a> {
    with_envelope!(ExperimentDecisionRow, received, {
        experiment: &p.experiment,
        baseline: &p.baseline,
        candidate: &p.candidate,
        decision: p.decision.as_str(),
        cs_low: p.cs_low,
        cs_high: p.cs_high,
        rounds: p.rounds,
        alpha: p.alpha,
        detect: p.detect,
    })
}

fn task_validation<'a>(received: &Received<'a>, p: &'a TaskValidation) -> TaskValidationRow<'a> {
    with_envelope!(TaskValidationRow, received, {
        scenario: &p.scenario,
        task_sha256: p.task_sha256.as_str(),
        fixture_sha256: p.fixture_sha256.as_str(),
        repeats: p.repeats,
        broken: p.broken,
        reasons: p.reasons.iter().map(String::as_str).collect(),
        tests: p.tests,
        flaky_tests: p.flaky_tests.iter().map(String::as_str).collect(),
    })
}

fn genai_event<'a>(received: &Received<'a>, p: &'a GenAiEvent) -> GenAiEventRow<'a> {
    with_envelope!(GenAiEventRow, received, {
        name: &p.name,
        trace_id: &p.trace_id,
        span_id: p.span_id.as_deref(),
        body: &p.body,
        attributes: &p.attributes,
        content_truncated: p.content_truncated,
    })
}

/// Smith always sends its judged numbers, and no exit status, cost, call count or turn
/// count.
fn smith_run_stop<'a>(received: &Received<'a>, p: &'a SmithRunResult) -> RunStopRow<'a> {
    run_stop_row!(received, p, {
        success: Some(p.success),
        final_score: Some(p.final_score),
        total_tokens: Some(p.total_tokens),
        stability_variance: Some(p.stability_variance),
        tests_passed: Some(p.tests_passed),
        tests_failed: Some(p.tests_failed),
        exit_status: None,
        cost_usd: None,
        api_calls: None,
        turns: None,
        tool_errors: Some(p.tool_errors),
        files_modified: Some(p.files_modified),
        diff_sha256: None,
        test_files_edited: None,
        history_commands: None,
        network_commands: None,
        gold_similarity: None,
        regrade_judgings: None,
        regrade_resolved: None,
        diff_excluded: None,
        workspace_verdict_differs: None,
        shadows_module: None,
        forged_events: None,
        final_diff: None,
        final_diff_truncated: None,
    })
}

fn step<'a>(received: &Received<'a>, p: &'a Step) -> StepRow<'a> {
    with_envelope!(StepRow, received, {
        step_type: p.step_type.as_str(),
        content: &p.content,
        content_truncated: p.content_truncated,
        tokens_in: p.tokens_in,
        tokens_out: p.tokens_out,
        wall_time_ms: p.wall_time_ms,
        planned_step: p.planned_step,
        planned: p.planned_step.is_some(),
        context_kb: p.context_kb,
    })
}

/// Smith says whether the step was planned, not which plan item it executes.
fn smith_step<'a>(received: &Received<'a>, p: &'a SmithStep) -> StepRow<'a> {
    // KiB counts far below 2^53 are exact in f64.
    #[allow(clippy::cast_precision_loss)]
    let context_kb = p.context_kb as f64;
    with_envelope!(StepRow, received, {
        step_type: p.step_type.as_str(),
        content: &p.content,
        content_truncated: false,
        tokens_in: Some(p.tokens_in),
        tokens_out: Some(p.tokens_out),
        wall_time_ms: Some(p.wall_time_ms),
        planned_step: None,
        planned: p.planned_step,
        context_kb: Some(context_kb),
    })
}

fn tool_call<'a>(received: &Received<'a>, p: &'a ToolCall) -> ToolCallRow<'a> {
    tool_call_row!(received, p, {
        tool_args_hash: p.tool_args_hash.as_str(),
        exit_kind: p.exit_kind.as_str(),
        exit_message: p.exit_message.as_deref(),
        call_id: p.call_id.as_deref(),
    })
}

/// Smith's own argument hash, verbatim; its exit kind's message when it has one; Smith
/// gives a call no id.
fn smith_tool_call<'a>(received: &Received<'a>, p: &'a SmithToolCall) -> ToolCallRow<'a> {
    tool_call_row!(received, p, {
        tool_args_hash: &p.tool_args_hash,
        exit_kind: p.exit_kind.kind.as_str(),
        exit_message: p.exit_kind.message.as_deref(),
        call_id: None,
    })
}

fn deliberation<'a>(received: &Received<'a>, p: &'a Deliberation) -> DeliberationRow<'a> {
    with_envelope!(DeliberationRow, received, {
        agent: &p.agent,
        provider: &p.provider,
        model: &p.model,
        status: p.status.as_str(),
        latency_ms: p.latency_ms,
        input_tokens: p.input_tokens,
        cached_input_tokens: p.cached_input_tokens,
        cache_write_tokens: p.cache_write_tokens,
        output_tokens: p.output_tokens,
        reasoning_tokens: p.reasoning_tokens,
        cost_usd: p.cost_usd,
        pricing_source: p.pricing_source.as_str(),
        prompt_price_per_mtok: p.prompt_price_per_mtok,
        completion_price_per_mtok: p.completion_price_per_mtok,
        cached_prompt_price_per_mtok: p.cached_prompt_price_per_mtok,
        retries: p.retries,
        action_types: p.actions.iter().map(|a| a.action_type.as_str()).collect(),
        action_targets: p.actions.iter().map(|a| a.target.as_str()).collect(),
        action_priorities: p.actions.iter().map(|a| a.priority).collect(),
        action_reasons: p.actions.iter().map(|a| a.reason.as_str()).collect(),
        summary: &p.summary,
        summary_truncated: p.summary_truncated,
        confidence: p.confidence,
        raw_output: &p.raw_output,
        raw_output_truncated: p.raw_output_truncated,
        error: p.error.as_deref(),
    })
}

fn context_decision<'a>(received: &Received<'a>, p: &'a ContextDecision) -> ContextDecisionRow<'a> {
    with_envelope!(ContextDecisionRow, received, {
        segment_id: &p.segment_id,
        kept: p.kept,
        segment_kb: p.segment_kb,
        segment_type: p.segment_type.as_str(),
        impact_probe_ev: p.impact_probe_ev,
        pruning_algorithm: &p.pruning_algorithm,
        confidence_score: p.confidence_score,
    })
}

fn failure<'a>(received: &Received<'a>, p: &'a Failure) -> FailureRow<'a> {
    let state = &p.final_error_state;
    with_envelope!(FailureRow, received, {
        root_kind: p.first_failure_root.kind(),
        first_failure_root: json_text(&p.first_failure_root),
        recovery_attempts: json_text(&p.recovery_attempts),
        recovery_attempt_count: u32::try_from(p.recovery_attempts.len()).unwrap_or(u32::MAX),
        recovered: p.recovery_attempts.iter().any(|a| a.success),
        recoverable: state.recoverable,
        error_category: &state.error_category,
        error_confidence: state.confidence,
        similar_failures: state.similar_failures,
        contributing_factors: &p.contributing_factors,
        remediation_suggestions: &p.remediation_suggestions,
    })
}

/// An `optimizer_updates` row: the columns both protocols send, read from `$update`,
/// plus the columns given.
macro_rules! optimizer_update_row {
    ($received:expr, $update:expr, { $($field:ident: $value:expr),* $(,)? }) => {{
        let p = $update;
        with_envelope!(OptimizerUpdateRow, $received, {
            suggested_config: json_text(&p.suggested_config),
            confidence: p.confidence,
            expected_improvement: p.expected_improvement,
            exploration_vs_exploitation: p.exploration_vs_exploitation,
            reasoning: &p.reasoning,
            $($field: $value,)*
        })
    }};
}

fn optimizer_update<'a>(received: &Received<'a>, p: &'a OptimizerUpdate) -> OptimizerUpdateRow<'a> {
    let outcome = p.outcome.as_ref();
    optimizer_update_row!(received, p, {
        suggested_model: Some(&p.suggested_config.model),
        suggested_strategy: p.suggested_config.strategy.map(ContextStrategy::as_str),
        trial: p.trial,
        trial_run_ids: outcome
            .map(|o| o.run_ids.iter().map(Uuid::to_string).collect())
            .unwrap_or_default(),
        trial_solved: outcome.and_then(|o| o.solved),
        trial_cost_usd: outcome.and_then(|o| o.cost_usd),
        trial_total_tokens: outcome.and_then(|o| o.total_tokens),
        trial_wall_time_ms: outcome.and_then(|o| o.wall_time_ms),
        objective: outcome.and_then(|o| o.objective),
    })
}

/// A Smith config names no model or strategy.
fn smith_optimizer_update<'a>(
    received: &Received<'a>,
    p: &'a SmithSuggestion,
) -> OptimizerUpdateRow<'a> {
    optimizer_update_row!(received, p, {
        suggested_model: None,
        suggested_strategy: None,
        trial: None,
        trial_run_ids: Vec::new(),
        trial_solved: None,
        trial_cost_usd: None,
        trial_total_tokens: None,
        trial_wall_time_ms: None,
        objective: None,
    })
}

/// Compact JSON of a nested wire value, as stored in the JSON text columns.
fn json_text<T: Serialize>(value: &T) -> String {
    // The wire types serialize infallibly (string keys, no custom error paths); an empty
    // object marks the impossible case rather than failing an insert.
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetime_is_clamped_to_the_uint32_range() {
        assert_eq!(datetime(-5), 0);
        assert_eq!(datetime(1_700_000_000), 1_700_000_000);
        assert_eq!(datetime(i64::MAX), u32::MAX);
    }

    /// The typed rows of the Smith fixture's events, as JSON, by event type.
    fn smith_rows() -> Vec<(EventType, serde_json::Value)> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../schemas/tests/fixtures/smith/smith-events.jsonl"
        );
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let arrival = Arrival {
            received_at: 1,
            stream_seq: 2,
        };
        text.lines()
            .map(|line| {
                let event =
                    bench_schemas::decode_message(line.as_bytes(), None).expect("smith event");
                let row = serde_json::to_value(TypedRow::new(&event, arrival)).expect("row");
                (event.event_type(), row)
            })
            .collect()
    }

    #[test]
    fn smith_rows_leave_null_what_smith_does_not_send() {
        let rows = smith_rows();
        assert_eq!(rows.len(), 49);
        let silent: &[(EventType, &[&str])] = &[
            (
                EventType::RunStart,
                &[
                    "model",
                    "provider",
                    "strategy",
                    "scenario_sha256",
                    "runner_version",
                ],
            ),
            (
                EventType::RunStop,
                &["exit_status", "cost_usd", "api_calls", "turns"],
            ),
            (EventType::Step, &["planned_step"]),
            (
                EventType::OptimizerUpdate,
                &["suggested_model", "suggested_strategy"],
            ),
        ];
        for (event_type, row) in &rows {
            assert_eq!(row["protocol"], "smith");
            assert_eq!(row["seq"], serde_json::Value::Null);
            assert_eq!(row["host"], serde_json::Value::Null);
            assert_eq!(row["stream_seq"], 2);
            for column in silent
                .iter()
                .filter(|(t, _)| t == event_type)
                .flat_map(|(_, columns)| columns.iter())
            {
                assert_eq!(
                    row[*column],
                    serde_json::Value::Null,
                    "{event_type} {column}"
                );
            }
        }
        let (_, first) = &rows[0];
        assert_eq!(first["temperature"], 0.7);
        assert_eq!(first["execution_timeout_ms"], 300_000);
        assert_eq!(first["cfg_hash"], "bea1728aeeb092ec");
    }

    #[test]
    fn raw_bytes_are_text_in_json() {
        let json = serde_json::to_string(&RawBytes(b"a\"\xff")).unwrap_or_default();
        assert_eq!(json, "\"a\\\"\u{fffd}\"");
    }
}
