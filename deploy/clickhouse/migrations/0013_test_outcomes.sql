-- SWE-bench-format tasks: each judged test of a run, and the run's final diff.
--
-- `test_outcomes` holds one row per `test_outcome` event: a `FAIL_TO_PASS` or
-- `PASS_TO_PASS` test of a run's final verdict (the envelope columns as in every event
-- table, then):
-- - test_id: the test's id as the dataset names it (a pytest node id);
-- - test_set: `fail_to_pass` | `pass_to_pass`;
-- - before: whether it passed at the base with test_patch applied, as the task's
--   validation found; NULL when the task was not validated;
-- - after: whether it passed after the agent (1) or not (0);
-- - duration_ms: time it took in the judged run; NULL when its report gave none;
-- - reason: why it did not pass; NULL when it passed.
--
-- `run_stops` gains, from `run_stop` (NULL for runs of other tasks and for rows written
-- before this migration):
-- - diff_sha256: SHA-256 of the run's final diff (`final.diff` beside its events);
-- - test_files_edited: how many files of test_patch (or pytest's own) the agent had
--   changed, restored before judging (`integrity.test_files_edited`, counted);
-- - history_commands, network_commands: the agent's commands that read git history or
--   tried the network while it was off (`integrity.*`; NULL when the runner did not see
--   the commands, as for `exec` agents, and network_commands when the network was on);
-- - gold_similarity: similarity of the final diff to the gold patch, 0..1;
-- - regrade_judgings, regrade_resolved: with `run --regrade K`, the judgings of the
--   final diff (K + 1) and how many resolved the task (stable: 0 or all); NULL when the
--   run was not regraded.
--
-- CREATE ... IF NOT EXISTS and the guarded ADD COLUMN (18.16 has no IF NOT EXISTS
-- there) let this file run twice.

CREATE TABLE IF NOT EXISTS test_outcomes
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
    test_id     String,
    test_set    String,
    before      Nullable(UInt8),
    after       UInt8,
    duration_ms Nullable(UInt64),
    reason      Nullable(String),
    protocol    String DEFAULT 'benchstream',
    stream_seq  Nullable(UInt64),
    -- As in the other event tables: the earliest stream message of an event wins.
    precedence  UInt64 MATERIALIZED bitNot(ifNull(stream_seq, 0))
)
ENGINE = ReplacingMergeTree(precedence)
PARTITION BY toYear(ts)
ORDER BY (run_id, event_id);

-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_stops' AND name = 'diff_sha256'
ALTER TABLE run_stops
    ADD COLUMN diff_sha256 Nullable(String) AFTER turns,
    ADD COLUMN test_files_edited Nullable(UInt32) AFTER diff_sha256,
    ADD COLUMN history_commands Nullable(UInt32) AFTER test_files_edited,
    ADD COLUMN network_commands Nullable(UInt32) AFTER history_commands,
    ADD COLUMN gold_similarity Nullable(Float64) AFTER network_commands,
    ADD COLUMN regrade_judgings Nullable(UInt32) AFTER gold_similarity,
    ADD COLUMN regrade_resolved Nullable(UInt32) AFTER regrade_judgings;
