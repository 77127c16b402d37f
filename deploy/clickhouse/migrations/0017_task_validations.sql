-- SWE-bench-format tasks: what `agent-runner tasks validate` found, so that queries and
-- `bench-analysis compare` can leave the runs of broken tasks out.
--
-- `task_validations` holds one row per `task_validation` event (the envelope columns as
-- in every event table; `run_id` is the validation's own, `policy_id` `validation`),
-- then:
-- - scenario: the scenario the task was validated in;
-- - task_sha256, fixture_sha256: the task's pins (`task.toml`, which holds the gold patch
--   and the test lists, and the fixture tree); runs carry the latter as
--   `run_starts.fixture_sha256`;
-- - repeats: judgings of each state (the base, the gold patch);
-- - broken: 1 when validation failed (the runs of the task are no results), else 0;
-- - reasons: why it is broken, empty when it is not;
-- - tests: FAIL_TO_PASS and PASS_TO_PASS tests judged (0: could not be validated);
-- - flaky_tests: ids of the tests whose outcome differed between repetitions.
--
-- The latest validation of a task wins: one row per (task_id, fixture_sha256) under
-- FINAL, the one with the latest `ts_ms` (a re-validation replaces the one before; the
-- same event delivered twice is the same row). A task whose fixture changed is another
-- key, so runs of the old fixture keep the validation they ran under.
--
-- CREATE ... IF NOT EXISTS lets this file run twice.

CREATE TABLE IF NOT EXISTS task_validations
(
    event_id       UUID,
    run_id         UUID,
    task_id        String,
    step_id        Nullable(UUID),
    seq            Nullable(UInt64),
    ts             DateTime,
    ts_ms          Int64,
    policy_id      String,
    cfg_hash       String,
    env_hash       String,
    seed           Nullable(UInt64),
    host           Nullable(String),
    received_at    DateTime,
    scenario       String,
    task_sha256    String,
    fixture_sha256 String,
    repeats        UInt32,
    broken         UInt8,
    reasons        Array(String),
    tests          UInt32,
    flaky_tests    Array(String),
    protocol       String DEFAULT 'benchstream',
    stream_seq     Nullable(UInt64),
    -- The version of ReplacingMergeTree must be unsigned: the validation time in ms,
    -- which is never before 1970.
    validated_ms   UInt64 MATERIALIZED toUInt64(greatest(ts_ms, 0))
)
ENGINE = ReplacingMergeTree(validated_ms)
PARTITION BY tuple()
ORDER BY (task_id, fixture_sha256);
