-- Trajectory of a bayes sweep: each proposal of the optimizer, in the order it was made
-- and numbered from 0 as trials, logs and claim keys number them, with the cfg_hash of the
-- config proposed (its settings: `optimizer_updates.suggested_config` or `run_starts` of
-- that cfg_hash), its run's task and result, the objective (reward) and the best
-- objective so far. The sweep's best config so far is the row with the highest objective
-- (is_best = 1). A proposal whose run has not finished has NULL task and result columns;
-- a trial proposed again after its worker died shows once per proposal.
--
-- A proposal's optimizer_update (policy_id optimizer:tpe, task_id sweep:<name>) carries the
-- cfg_hash of the config it proposes, which its run carries too: that is the link.
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
    tupleElement(rows[i], 3) AS cfg_hash,
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
            success, cost_usd, total_tokens, wall_time_ms, task_id
        ))) AS rows
        FROM
        (
            SELECT
                cfg_hash, ts_ms, ts, expected_improvement, exploration_vs_exploitation
            FROM optimizer_updates FINAL
            WHERE policy_id = 'optimizer:tpe' AND task_id = concat('sweep:', {sweep:String})
        ) AS proposals
        ANY LEFT JOIN
        (
            SELECT
                cfg_hash,
                toNullable(task_id) AS task_id,
                toNullable(success) AS success,
                cost_usd,
                toNullable(total_tokens) AS total_tokens,
                toNullable(wall_time_ms) AS wall_time_ms
            FROM run_stops FINAL
        ) AS results USING cfg_hash
    )
)
ARRAY JOIN arrayEnumerate(rows) AS i
ORDER BY proposal
