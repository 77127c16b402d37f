-- The judged tests of SWE-bench-format tasks across runs (`test_outcomes`, one row per
-- test of a run's final verdict): per task and test, the runs that judged it, how many
-- of them it passed in, whether no run ever got it passing (never_passed: a test no
-- agent solves, or a broken one), and in how many configurations (policy x cfg_hash) it
-- both passed and failed (flipping_configs > 0: the same agent and config get it right
-- only some of the time, or the test is flaky; `tasks validate --repeat K` tells
-- which). Tests that are never solved come first, then those that flip.
-- Dedup: read with FINAL, so a redelivered outcome counts once.
-- param policy String = '': only this policy_id; empty = every policy
-- param task String = '': only this task_id; empty = every task
SELECT
    task_id,
    test_id,
    test_set,
    sum(config_runs) AS runs,
    sum(config_passed) AS passed,
    toUInt8(sum(config_passed) = 0) AS never_passed,
    countIf(config_passed > 0 AND config_passed < config_runs) AS flipping_configs,
    if(sum(timed_runs) = 0, NULL, round(sum(timed_ms) / sum(timed_runs), 1)) AS avg_duration_ms
FROM
(
    SELECT
        task_id,
        test_id,
        test_set,
        policy_id,
        cfg_hash,
        count() AS config_runs,
        countIf(after = 1) AS config_passed,
        countIf(isNotNull(duration_ms)) AS timed_runs,
        sumIf(assumeNotNull(duration_ms), isNotNull(duration_ms)) AS timed_ms
    FROM test_outcomes FINAL
    WHERE ({policy:String} = '' OR policy_id = {policy:String})
        AND ({task:String} = '' OR task_id = {task:String})
    GROUP BY task_id, test_id, test_set, policy_id, cfg_hash
)
GROUP BY task_id, test_id, test_set
ORDER BY never_passed DESC, flipping_configs DESC, task_id, test_id
