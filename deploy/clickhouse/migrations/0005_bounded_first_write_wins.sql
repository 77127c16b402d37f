-- Rebuilds the event tables for bounded partitions, first write wins and the Smith
-- protocol; one rebuild for all three, so existing data is copied once.
--
-- What changes in events_raw and every typed table:
-- - PARTITION BY toYear(ts) (was toYYYYMM(ts)). The sink dead-letters events whose ts
--   is before 2015-01-01 or more than a day after it received them (`implausible_ts`),
--   so a table holds at most one partition per year since 2015 (12 in 2026) and no
--   insert can touch more than that, far under the 100 partitions current servers
--   accept per INSERT. Every copy of an event has the same ts, hence the same partition,
--   so FINAL still folds copies.
-- - ORDER BY (run_id, event_id): event_id identifies a row; seq is no longer in the key.
-- - seq Nullable(UInt64): the Smith protocol has no seq; NULL = unknown.
-- - protocol String DEFAULT 'benchstream': which wire protocol produced the row.
-- - The ReplacingMergeTree version is `precedence` = bitNot(stream_seq): the copy from
--   the EARLIEST stream message wins, never a later one (first write wins). Typed tables
--   gain `stream_seq` for it; rows copied here have NULL there (they predate the column)
--   and count as earliest.
-- - dead_letters gains `event_id`, the id a refused event carries (NULL when it did not
--   decode).
-- - event_ids (new): one row per stored event_id with the SipHash-2-4 (`sipHash64`) of
--   its body, which the sink looks up to tell a duplicate (same bytes) from a conflict
--   (a different body under a known event_id). ClickHouse fills it from every insert
--   into events_raw (materialized view event_ids_feed), so the sink hashes no body of
--   a new event, only copies of known ones.
--
-- How a table moves: create `<table>_0005`, copy the rows whose ts is inside the window,
-- swap the names with RENAME, drop the old table (`<table>_0004`). Rows of events_raw
-- outside the window become `dead_letters` rows of class `implausible_ts` (raw bytes
-- kept) and their typed rows are left behind.
--
-- Safe to re-run after a crash at any point: every step that moves data runs only while
-- the table still has its old shape (`-- only if:` guard: the migration runner skips a
-- statement whose guard query returns 0), and a half-filled `<table>_0005` is dropped
-- and refilled. Stop every sink of an older version before upgrading: rows they insert
-- into an old table while it is being copied would be dropped with it.

CREATE TABLE IF NOT EXISTS event_ids
(
    event_id    UUID,
    run_id      UUID,
    -- The event type (`run_start`, `step`, ...).
    type        String,
    -- sipHash64 of the message body (SipHash-2-4, zero key): equal bodies, equal hash.
    body_hash   UInt64,
    -- JetStream stream sequence of the message that stored the event.
    stream_seq  UInt64,
    -- When the sink stored it (sink clock).
    received_at DateTime,
    -- bitNot(stream_seq): as in the event tables, the earliest stream message wins. A
    -- plain column (not MATERIALIZED) because event_ids_feed writes it.
    precedence  UInt64
)
ENGINE = ReplacingMergeTree(precedence)
ORDER BY event_id;

-- dead_letters.event_id: the event_id a refused message carries when it decoded
-- (conflict, implausible_ts, subject_mismatch, rejected_by_clickhouse); NULL when it did
-- not. The `conflicts` query joins on it. (18.16 has no ADD COLUMN IF NOT EXISTS.)
-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'dead_letters' AND name = 'event_id'
ALTER TABLE dead_letters ADD COLUMN event_id Nullable(UUID);

-- events_raw rows outside the ts window become dead letters. `stream` is empty: the
-- stream name was never stored in events_raw.
-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'events_raw'
INSERT INTO dead_letters
    (received_at, stream, stream_seq, subject, headers, raw, error_class, error, delivered,
    event_id)
SELECT received_at, '', stream_seq, subject, '', raw, 'implausible_ts',
    concat('ts ', toString(ts, 'UTC'),
        ' is outside the accepted window (2015-01-01 .. one day after receipt); ',
        'moved out of events_raw by migration 0005'),
    0, event_id
FROM events_raw
WHERE NOT (ts >= toDateTime(1420070400) AND ts <= received_at + 86400);

-- Every stored event's body hash, for the sink's first-write-wins lookups.
-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'events_raw'
INSERT INTO event_ids (event_id, run_id, type, body_hash, stream_seq, received_at, precedence)
SELECT event_id, run_id, type, sipHash64(raw), stream_seq, received_at, bitNot(stream_seq)
FROM events_raw
WHERE ts >= toDateTime(1420070400) AND ts <= received_at + 86400;

-- events_raw
-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'events_raw'
DROP TABLE IF EXISTS events_raw_0005;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'events_raw'
CREATE TABLE IF NOT EXISTS events_raw_0005
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    -- The event type (`run_start`, `step`, ...).
    type        String,
    seq         Nullable(UInt64),
    -- When it happened on the runner, to the second (DateTime64 is not in 18.16) ...
    ts          DateTime,
    -- ... and to the millisecond, as Unix epoch milliseconds.
    ts_ms       Int64,
    host        String,
    policy_id   String,
    raw         String,
    subject     String,
    -- JetStream stream sequence of the message that delivered this copy.
    stream_seq  UInt64,
    -- When the sink decoded it (sink clock).
    received_at DateTime,
    -- Which wire protocol produced the event: `benchstream` (schema_version 1) or
    -- `smith` (the Smith protocol's own producers).
    protocol    String DEFAULT 'benchstream',
    -- ReplacingMergeTree keeps the row with the highest version: bitNot makes that the
    -- copy with the LOWEST stream sequence, so the earliest message of an event wins.
    precedence  UInt64 MATERIALIZED bitNot(stream_seq)
)
ENGINE = ReplacingMergeTree(precedence)
PARTITION BY toYear(ts)
ORDER BY (run_id, event_id);

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'events_raw'
INSERT INTO events_raw_0005
SELECT *, 'benchstream' FROM events_raw
WHERE ts >= toDateTime(1420070400) AND ts <= received_at + 86400;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'events_raw'
RENAME TABLE events_raw TO events_raw_0004, events_raw_0005 TO events_raw;

DROP TABLE IF EXISTS events_raw_0004;

-- run_starts
-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_starts'
DROP TABLE IF EXISTS run_starts_0005;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_starts'
CREATE TABLE IF NOT EXISTS run_starts_0005
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         Nullable(UInt64),
    ts          DateTime,
    ts_ms       Int64,
    policy_id   String,
    cfg_hash    String,
    env_hash    String,
    seed        UInt64,
    host        String,
    received_at DateTime,
    model                        String,
    provider                     String,
    strategy                     String,
    observation_window           Nullable(UInt32),
    summary_interval             Nullable(UInt32),
    summary_keep                 Nullable(UInt32),
    summarizer_model             Nullable(String),
    max_iterations               UInt32,
    temperature                  Float64,
    context_window               UInt32,
    pruning_threshold            Float64,
    planner_depth                UInt32,
    debate_rounds                UInt32,
    available_tools              Array(String),
    tool_timeout_ms              UInt64,
    retry_max_retries            UInt32,
    retry_backoff_ms             UInt64,
    retry_exponential_backoff    UInt8,
    retry_on_flake               UInt8,
    retry_on_timeout             UInt8,
    execution_timeout_ms         UInt64,
    failing_tests_patience       UInt32,
    no_progress_timeout_ms       UInt64,
    docker_image                 String,
    tools_commit                 String,
    sandbox_memory_mb            UInt64,
    sandbox_cpu_cores            Float64,
    sandbox_disk_mb              UInt64,
    sandbox_network_enabled      UInt8,
    sandbox_execution_timeout_ms UInt64,
    cost_limit_usd               Nullable(Float64),
    scenario_name                String,
    scenario_sha256              String,
    fixture_sha256               String,
    scoring_version              String,
    runner_version               String,
    protocol    String DEFAULT 'benchstream',
    stream_seq  Nullable(UInt64),
    precedence  UInt64 MATERIALIZED bitNot(ifNull(stream_seq, 0))
)
ENGINE = ReplacingMergeTree(precedence)
PARTITION BY toYear(ts)
ORDER BY (run_id, event_id);

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_starts'
INSERT INTO run_starts_0005
SELECT *, 'benchstream', NULL FROM run_starts
WHERE ts >= toDateTime(1420070400) AND ts <= received_at + 86400;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_starts'
RENAME TABLE run_starts TO run_starts_0004, run_starts_0005 TO run_starts;

DROP TABLE IF EXISTS run_starts_0004;

-- run_stops
-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_stops'
DROP TABLE IF EXISTS run_stops_0005;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_stops'
CREATE TABLE IF NOT EXISTS run_stops_0005
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         Nullable(UInt64),
    ts          DateTime,
    ts_ms       Int64,
    policy_id   String,
    cfg_hash    String,
    env_hash    String,
    seed        UInt64,
    host        String,
    received_at DateTime,
    success            UInt8,
    final_score        Float64,
    wall_time_ms       UInt64,
    total_tokens       UInt64,
    tool_errors        UInt32,
    stability_variance Float64,
    failing_tests      Array(String),
    tests_passed       UInt32,
    tests_failed       UInt32,
    files_modified     UInt32,
    early_stopped      UInt8,
    early_stop_reason  Nullable(String),
    exit_status        String,
    cost_usd           Nullable(Float64),
    api_calls          UInt32,
    turns              UInt32,
    protocol    String DEFAULT 'benchstream',
    stream_seq  Nullable(UInt64),
    precedence  UInt64 MATERIALIZED bitNot(ifNull(stream_seq, 0))
)
ENGINE = ReplacingMergeTree(precedence)
PARTITION BY toYear(ts)
ORDER BY (run_id, event_id);

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_stops'
INSERT INTO run_stops_0005
SELECT *, 'benchstream', NULL FROM run_stops
WHERE ts >= toDateTime(1420070400) AND ts <= received_at + 86400;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_stops'
RENAME TABLE run_stops TO run_stops_0004, run_stops_0005 TO run_stops;

DROP TABLE IF EXISTS run_stops_0004;

-- steps
-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'steps'
DROP TABLE IF EXISTS steps_0005;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'steps'
CREATE TABLE IF NOT EXISTS steps_0005
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         Nullable(UInt64),
    ts          DateTime,
    ts_ms       Int64,
    policy_id   String,
    cfg_hash    String,
    env_hash    String,
    seed        UInt64,
    host        String,
    received_at DateTime,
    step_type         String,
    content           String,
    content_truncated UInt8,
    tokens_in         UInt64,
    tokens_out        UInt64,
    wall_time_ms      UInt64,
    planned_step      Nullable(UInt32),
    context_kb        Float64,
    protocol    String DEFAULT 'benchstream',
    stream_seq  Nullable(UInt64),
    precedence  UInt64 MATERIALIZED bitNot(ifNull(stream_seq, 0))
)
ENGINE = ReplacingMergeTree(precedence)
PARTITION BY toYear(ts)
ORDER BY (run_id, event_id);

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'steps'
INSERT INTO steps_0005
SELECT *, 'benchstream', NULL FROM steps
WHERE ts >= toDateTime(1420070400) AND ts <= received_at + 86400;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'steps'
RENAME TABLE steps TO steps_0004, steps_0005 TO steps;

DROP TABLE IF EXISTS steps_0004;

-- tool_calls
-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'tool_calls'
DROP TABLE IF EXISTS tool_calls_0005;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'tool_calls'
CREATE TABLE IF NOT EXISTS tool_calls_0005
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         Nullable(UInt64),
    ts          DateTime,
    ts_ms       Int64,
    policy_id   String,
    cfg_hash    String,
    env_hash    String,
    seed        UInt64,
    host        String,
    received_at DateTime,
    tool_name           String,
    tool_args_hash      String,
    latency_ms          UInt64,
    retries             UInt32,
    exit_kind           String,
    exit_message        Nullable(String),
    files_read          Array(String),
    files_modified      Array(String),
    lines_changed       UInt64,
    tests_added         UInt32,
    tests_modified      UInt32,
    bytes_read          UInt64,
    bytes_written       UInt64,
    user_feedback_score Nullable(Float64),
    intent_accuracy     Nullable(Float64),
    protocol    String DEFAULT 'benchstream',
    stream_seq  Nullable(UInt64),
    precedence  UInt64 MATERIALIZED bitNot(ifNull(stream_seq, 0))
)
ENGINE = ReplacingMergeTree(precedence)
PARTITION BY toYear(ts)
ORDER BY (run_id, event_id);

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'tool_calls'
INSERT INTO tool_calls_0005
SELECT *, 'benchstream', NULL FROM tool_calls
WHERE ts >= toDateTime(1420070400) AND ts <= received_at + 86400;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'tool_calls'
RENAME TABLE tool_calls TO tool_calls_0004, tool_calls_0005 TO tool_calls;

DROP TABLE IF EXISTS tool_calls_0004;

-- deliberations
-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'deliberations'
DROP TABLE IF EXISTS deliberations_0005;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'deliberations'
CREATE TABLE IF NOT EXISTS deliberations_0005
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         Nullable(UInt64),
    ts          DateTime,
    ts_ms       Int64,
    policy_id   String,
    cfg_hash    String,
    env_hash    String,
    seed        UInt64,
    host        String,
    received_at DateTime,
    agent                        String,
    provider                     String,
    model                        String,
    status                       String,
    latency_ms                   UInt64,
    input_tokens                 UInt64,
    cached_input_tokens          UInt64,
    cache_write_tokens           UInt64,
    output_tokens                UInt64,
    reasoning_tokens             UInt64,
    cost_usd                     Nullable(Float64),
    pricing_source               String,
    prompt_price_per_mtok        Nullable(Float64),
    completion_price_per_mtok    Nullable(Float64),
    cached_prompt_price_per_mtok Nullable(Float64),
    retries                      UInt32,
    action_types                 Array(String),
    action_targets               Array(String),
    action_priorities            Array(UInt32),
    action_reasons               Array(String),
    summary                      String,
    summary_truncated            UInt8,
    confidence                   Nullable(Float64),
    raw_output                   String,
    raw_output_truncated         UInt8,
    error                        Nullable(String),
    protocol    String DEFAULT 'benchstream',
    stream_seq  Nullable(UInt64),
    precedence  UInt64 MATERIALIZED bitNot(ifNull(stream_seq, 0))
)
ENGINE = ReplacingMergeTree(precedence)
PARTITION BY toYear(ts)
ORDER BY (run_id, event_id);

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'deliberations'
INSERT INTO deliberations_0005
SELECT *, 'benchstream', NULL FROM deliberations
WHERE ts >= toDateTime(1420070400) AND ts <= received_at + 86400;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'deliberations'
RENAME TABLE deliberations TO deliberations_0004, deliberations_0005 TO deliberations;

DROP TABLE IF EXISTS deliberations_0004;

-- context_decisions
-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'context_decisions'
DROP TABLE IF EXISTS context_decisions_0005;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'context_decisions'
CREATE TABLE IF NOT EXISTS context_decisions_0005
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         Nullable(UInt64),
    ts          DateTime,
    ts_ms       Int64,
    policy_id   String,
    cfg_hash    String,
    env_hash    String,
    seed        UInt64,
    host        String,
    received_at DateTime,
    segment_id        String,
    kept              UInt8,
    segment_kb        Float64,
    segment_type      String,
    impact_probe_ev   Nullable(Float64),
    pruning_algorithm String,
    confidence_score  Float64,
    protocol    String DEFAULT 'benchstream',
    stream_seq  Nullable(UInt64),
    precedence  UInt64 MATERIALIZED bitNot(ifNull(stream_seq, 0))
)
ENGINE = ReplacingMergeTree(precedence)
PARTITION BY toYear(ts)
ORDER BY (run_id, event_id);

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'context_decisions'
INSERT INTO context_decisions_0005
SELECT *, 'benchstream', NULL FROM context_decisions
WHERE ts >= toDateTime(1420070400) AND ts <= received_at + 86400;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'context_decisions'
RENAME TABLE context_decisions TO context_decisions_0004, context_decisions_0005 TO context_decisions;

DROP TABLE IF EXISTS context_decisions_0004;

-- failures
-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'failures'
DROP TABLE IF EXISTS failures_0005;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'failures'
CREATE TABLE IF NOT EXISTS failures_0005
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         Nullable(UInt64),
    ts          DateTime,
    ts_ms       Int64,
    policy_id   String,
    cfg_hash    String,
    env_hash    String,
    seed        UInt64,
    host        String,
    received_at DateTime,
    root_kind               String,
    first_failure_root      String,
    recovery_attempts       String,
    recovery_attempt_count  UInt32,
    recovered               UInt8,
    recoverable             UInt8,
    error_category          String,
    error_confidence        Float64,
    similar_failures        UInt32,
    contributing_factors    Array(String),
    remediation_suggestions Array(String),
    protocol    String DEFAULT 'benchstream',
    stream_seq  Nullable(UInt64),
    precedence  UInt64 MATERIALIZED bitNot(ifNull(stream_seq, 0))
)
ENGINE = ReplacingMergeTree(precedence)
PARTITION BY toYear(ts)
ORDER BY (run_id, event_id);

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'failures'
INSERT INTO failures_0005
SELECT *, 'benchstream', NULL FROM failures
WHERE ts >= toDateTime(1420070400) AND ts <= received_at + 86400;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'failures'
RENAME TABLE failures TO failures_0004, failures_0005 TO failures;

DROP TABLE IF EXISTS failures_0004;

-- optimizer_updates
-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'optimizer_updates'
DROP TABLE IF EXISTS optimizer_updates_0005;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'optimizer_updates'
CREATE TABLE IF NOT EXISTS optimizer_updates_0005
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         Nullable(UInt64),
    ts          DateTime,
    ts_ms       Int64,
    policy_id   String,
    cfg_hash    String,
    env_hash    String,
    seed        UInt64,
    host        String,
    received_at DateTime,
    suggested_model             String,
    suggested_strategy          String,
    suggested_config            String,
    confidence                  Float64,
    expected_improvement        Float64,
    exploration_vs_exploitation Float64,
    reasoning                   String,
    protocol    String DEFAULT 'benchstream',
    stream_seq  Nullable(UInt64),
    precedence  UInt64 MATERIALIZED bitNot(ifNull(stream_seq, 0))
)
ENGINE = ReplacingMergeTree(precedence)
PARTITION BY toYear(ts)
ORDER BY (run_id, event_id);

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'optimizer_updates'
INSERT INTO optimizer_updates_0005
SELECT *, 'benchstream', NULL FROM optimizer_updates
WHERE ts >= toDateTime(1420070400) AND ts <= received_at + 86400;

-- only if: SELECT count() > 0 AND countIf(name = 'protocol') = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'optimizer_updates'
RENAME TABLE optimizer_updates TO optimizer_updates_0004, optimizer_updates_0005 TO optimizer_updates;

DROP TABLE IF EXISTS optimizer_updates_0004;

-- From now on every row inserted into events_raw also lands in event_ids, hashed by
-- ClickHouse. Created after the rebuild, on the new events_raw.
CREATE MATERIALIZED VIEW IF NOT EXISTS event_ids_feed TO event_ids AS
SELECT event_id, run_id, type, sipHash64(raw) AS body_hash, stream_seq, received_at,
    bitNot(stream_seq) AS precedence
FROM events_raw;
