-- Experiments run until decided: what each concluded (`agent-runner run --until-decided`).
--
-- `experiment_decisions` holds one row per `experiment_decision` event (the envelope
-- columns as in every event table; `run_id` is the decision's own stream, `task_id`
-- `experiment:<name>`, `policy_id` `decision`), then:
-- - experiment: the experiment's name (`run_starts.experiment` of its runs);
-- - baseline, candidate: the two policies compared (`policy_id`);
-- - decision: `candidate_better` | `baseline_better` | `equivalent` | `undecided`;
-- - cs_low, cs_high: the anytime-valid confidence sequence for the difference in solve
--   rate (candidate minus baseline) at the last look; NULL when no round was complete;
-- - rounds: complete rounds the decision used;
-- - alpha: its level.
--
-- CREATE ... IF NOT EXISTS lets this file run twice.

CREATE TABLE IF NOT EXISTS experiment_decisions
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
    seed        Nullable(UInt64),
    host        Nullable(String),
    received_at DateTime,
    experiment  String,
    baseline    String,
    candidate   String,
    decision    String,
    cs_low      Nullable(Float64),
    cs_high     Nullable(Float64),
    rounds      UInt64,
    alpha       Float64,
    protocol    String DEFAULT 'benchstream',
    stream_seq  Nullable(UInt64),
    -- As in the other event tables: the earliest stream message of an event wins.
    precedence  UInt64 MATERIALIZED bitNot(ifNull(stream_seq, 0))
)
ENGINE = ReplacingMergeTree(precedence)
PARTITION BY toYear(ts)
ORDER BY (run_id, event_id);
