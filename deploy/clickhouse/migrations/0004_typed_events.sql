-- One table per event type: the envelope columns (same in every table, same meaning as
-- in events_raw) followed by the typed payload columns. Enums are String (no Enum8, so
-- a new value needs no ALTER), booleans UInt8, absent optional values NULL.
--
-- Dedup as in events_raw: ReplacingMergeTree keyed by (run_id, seq, event_id), version
-- `received_at`; every shipped query reads these tables with FINAL.

-- `run_start`: the run config and replay metadata, one row per run.
CREATE TABLE IF NOT EXISTS run_starts
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         UInt64,
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
    runner_version               String
)
ENGINE = ReplacingMergeTree(received_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (run_id, seq, event_id);

-- `run_stop`: the result of a run. `cost_usd` is NULL when some call had an unknown
-- price.
CREATE TABLE IF NOT EXISTS run_stops
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         UInt64,
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
    turns              UInt32
)
ENGINE = ReplacingMergeTree(received_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (run_id, seq, event_id);

-- `step`: one agent step.
CREATE TABLE IF NOT EXISTS steps
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         UInt64,
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
    context_kb        Float64
)
ENGINE = ReplacingMergeTree(received_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (run_id, seq, event_id);

-- `tool_call`: one tool invocation; `evidence_footprint` flattened into `files_*` ..
-- `bytes_written`.
CREATE TABLE IF NOT EXISTS tool_calls
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         UInt64,
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
    intent_accuracy     Nullable(Float64)
)
ENGINE = ReplacingMergeTree(received_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (run_id, seq, event_id);

-- `deliberation`: one LLM call. `input_tokens` INCLUDES `cached_input_tokens`,
-- `output_tokens` INCLUDES `reasoning_tokens`; `cost_usd` is NULL when the price is
-- unknown (never 0). `actions[]` is stored as four parallel arrays (same length, same
-- order; use ARRAY JOIN).
CREATE TABLE IF NOT EXISTS deliberations
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         UInt64,
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
    error                        Nullable(String)
)
ENGINE = ReplacingMergeTree(received_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (run_id, seq, event_id);

-- `context_decision`: one keep/prune decision about one context segment.
CREATE TABLE IF NOT EXISTS context_decisions
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         UInt64,
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
    confidence_score  Float64
)
ENGINE = ReplacingMergeTree(received_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (run_id, seq, event_id);

-- `failure`: root cause and recoveries. `first_failure_root` and `recovery_attempts` are
-- JSON text (nested lists make columns awkward; read them with
-- visitParamExtract*/JSONExtract*); `root_kind` and the final state are columns.
CREATE TABLE IF NOT EXISTS failures
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         UInt64,
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
    remediation_suggestions Array(String)
)
ENGINE = ReplacingMergeTree(received_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (run_id, seq, event_id);

-- `optimizer_update`: a config suggested by the sweep optimizer. `suggested_config` is
-- the config as JSON text; model and strategy are also columns.
CREATE TABLE IF NOT EXISTS optimizer_updates
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    step_id     Nullable(UUID),
    seq         UInt64,
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
    reasoning                   String
)
ENGINE = ReplacingMergeTree(received_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (run_id, seq, event_id);
