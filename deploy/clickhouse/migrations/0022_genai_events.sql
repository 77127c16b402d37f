-- Runs received as OpenTelemetry data (`agent-runner otlp`): their GenAI events.
--
-- `genai_events` holds one row per `genai_event` event: a log record of the GenAI
-- semantic conventions sent to the receiver's `/v1/logs` (captured prompts and
-- completions, inference details, evaluation results), kept beside the call it belongs
-- to, never merged into the call's `deliberations` row (the envelope columns as in every
-- event table; `step_id` is that of the `steps`/`deliberations` rows of the inference
-- span the record names, NULL when it names no span), then:
-- - name: the event's name (`gen_ai.client.inference.operation.details`,
--   `gen_ai.user.message`, `gen_ai.choice`, `gen_ai.evaluation.result`, ...);
-- - trace_id, span_id: the trace and span it belongs to (hex; span_id NULL when none);
-- - body: the record's body as JSON text (`null` when it has none);
-- - attributes: its attributes as a JSON object text (read with visitParam* or, on
--   current ClickHouse, JSONExtract*);
-- - content_truncated: 1 when body or attributes was cut to 64 Ki chars (then not valid
--   JSON).
--
-- CREATE ... IF NOT EXISTS lets this file run twice.

CREATE TABLE IF NOT EXISTS genai_events
(
    event_id          UUID,
    run_id            UUID,
    task_id           String,
    step_id           Nullable(UUID),
    seq               Nullable(UInt64),
    ts                DateTime,
    ts_ms             Int64,
    policy_id         String,
    cfg_hash          String,
    env_hash          String,
    seed              Nullable(UInt64),
    host              Nullable(String),
    received_at       DateTime,
    name              String,
    trace_id          String,
    span_id           Nullable(String),
    body              String,
    attributes        String,
    content_truncated UInt8,
    protocol          String DEFAULT 'benchstream',
    stream_seq        Nullable(UInt64),
    -- As in the other event tables: the earliest stream message of an event wins.
    precedence        UInt64 MATERIALIZED bitNot(ifNull(stream_seq, 0))
)
ENGINE = ReplacingMergeTree(precedence)
PARTITION BY toYear(ts)
ORDER BY (run_id, event_id);
