-- Trajectory of a bayes sweep: each proposal of the optimizer, in the order it was made
-- and numbered from 0 as trials, logs and claim keys number them, with its trial, the
-- cfg_hash of the config proposed (its settings: `optimizer_updates.suggested_config`),
-- the run it produced (run_id) and that run's task and result, the objective (reward)
-- and the best objective so far. The sweep's best config so far is the row with the
-- highest objective (is_best = 1). A proposal whose run has not finished has NULL run and
-- result columns; a trial proposed again after its worker died shows once per proposal,
-- each with the trial's finished run.
--
-- A proposal's optimizer_update (policy_id optimizer:tpe, task_id sweep:<name>) carries
-- its trial, which its run's run_start carries as sweep_trial of the same sweep_name:
-- that is the link, never the cfg_hash (two trials, or two sweeps, may propose one
-- config). A proposal stored before its trial was recorded (optimizer_updates.trial NULL)
-- links to no run.
-- objective = success - cost_weight * cost_usd - token_weight * total_tokens / 1e6 -
-- time_weight * wall_time_ms / 60000, the sweep's [bayes] weights (agent-runner/docs/
-- sweeps.md); NULL when nobody judged the run, or when its cost (token count, wall time)
-- is unknown and cost_weight (token_weight, time_weight) is not 0, as the optimizer's
-- reward.
-- 18.16 allows one JOIN per SELECT and no window functions, hence the arrays; current
-- ClickHouse wants every joined subquery named, hence the aliases.
-- param sweep String: the sweep's name
-- param cost_weight Float64 = '0': reward lost per USD
-- param token_weight Float64 = '0': reward lost per million tokens
-- param time_weight Float64 = '0': reward lost per minute of wall time
SELECT
    i - 1 AS proposal,
    tupleElement(rows[i], 2) AS proposed_at,
    tupleElement(rows[i], 11) AS trial,
    tupleElement(rows[i], 3) AS cfg_hash,
    tupleElement(rows[i], 12) AS run_id,
    tupleElement(rows[i], 10) AS task_id,
    tupleElement(rows[i], 4) AS expected_improvement,
    tupleElement(rows[i], 5) AS exploration_vs_exploitation,
    tupleElement(rows[i], 6) AS success,
    tupleElement(rows[i], 7) AS cost_usd,
    tupleElement(rows[i], 8) AS total_tokens,
    tupleElement(rows[i], 9) AS wall_time_ms,
    objectives[i] AS objective,
    arrayReduce('max', arraySlice(objectives, 1, i)) AS best_so_far,
    (objectives[i] = arrayReduce('max', objectives) AND indexOf(objectives, objectives[i]) = i) AS is_best
FROM
(
    SELECT
        rows,
        arrayMap(r -> if(
            tupleElement(r, 6) IS NULL
                OR (tupleElement(r, 7) IS NULL AND {cost_weight:Float64} != 0)
                OR (tupleElement(r, 8) IS NULL AND {token_weight:Float64} != 0)
                OR (tupleElement(r, 9) IS NULL AND {time_weight:Float64} != 0),
            NULL,
            toNullable(toFloat64(assumeNotNull(tupleElement(r, 6))))
                - {cost_weight:Float64} * ifNull(tupleElement(r, 7), 0)
                - {token_weight:Float64} * toFloat64(ifNull(tupleElement(r, 8), 0)) / 1000000
                - {time_weight:Float64} * toFloat64(ifNull(tupleElement(r, 9), 0)) / 60000
        ), rows) AS objectives
    FROM
    (
        SELECT arraySort(r -> tupleElement(r, 1), groupArray((
            ts_ms, ts, cfg_hash, expected_improvement, exploration_vs_exploitation,
            success, cost_usd, total_tokens, wall_time_ms, task_id, trial, linked_run
        ))) AS rows
        FROM
        (
            SELECT
                cfg_hash, ts_ms, ts, expected_improvement, exploration_vs_exploitation, trial,
                -- No trial matches no run (the largest UInt64 is no trial's number).
                ifNull(trial, toUInt64(18446744073709551615)) AS trial_key
            FROM optimizer_updates FINAL
            WHERE policy_id = 'optimizer:tpe' AND task_id = concat('sweep:', {sweep:String})
        ) AS proposals
        ANY LEFT JOIN
        (
            -- The sweep's finished run of each trial.
            SELECT trial_key, toNullable(toString(run_id)) AS linked_run, task_id, success,
                cost_usd, total_tokens, wall_time_ms
            FROM
            (
                SELECT run_id, assumeNotNull(sweep_trial) AS trial_key,
                    toNullable(task_id) AS task_id
                FROM run_starts FINAL
                WHERE ifNull(sweep_name, '') = {sweep:String} AND isNotNull(sweep_trial)
            ) AS trial_runs
            ANY INNER JOIN
            (
                SELECT
                    run_id,
                    toNullable(success) AS success,
                    cost_usd,
                    toNullable(total_tokens) AS total_tokens,
                    toNullable(wall_time_ms) AS wall_time_ms
                FROM run_stops FINAL
            ) AS stops USING run_id
        ) AS results USING trial_key
    )
)
ARRAY JOIN arrayEnumerate(rows) AS i
ORDER BY proposal
