-- Leaderboard: one row per policy (policy_id, model, strategy), best success rate first.
--
-- runs = runs started; finished = runs with a run_stop; judged = finished runs whose
-- success is known (NULL success: a submission nobody judged, e.g. an imported
-- trajectory); success_rate = successes / judged, NULL when none is. avg_cost_usd averages the finished runs whose cost is known (priced_runs);
-- NULL when none is. avg_turns and avg_wall_time_s average finished runs. Tokens are
-- summed over every LLM call of the runs: input_tokens INCLUDES cached_input_tokens,
-- output_tokens INCLUDES reasoning_tokens; cache_hit_rate = cached / input. Token sums
-- are Float64 (exact up to 2^53, never wrapping): sum() over UInt64 wraps past 2^64,
-- which any producer's token counts could reach.
-- Dedup: every table is read with FINAL. 18.16 allows one JOIN per SELECT, hence the
-- nesting; current ClickHouse wants every joined subquery named, hence the aliases.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
SELECT
    policy_id,
    model,
    strategy,
    count() AS runs,
    sum(stopped) AS finished,
    countIf(stopped = 1 AND isNotNull(succeeded)) AS judged,
    countIf(stopped = 1 AND succeeded = 1) AS successes,
    if(judged = 0, NULL, round(successes / judged, 4)) AS success_rate,
    countIf(stopped = 1 AND isNotNull(run_cost)) AS priced_runs,
    if(priced_runs = 0, NULL,
        round(sumIf(assumeNotNull(run_cost), stopped = 1 AND isNotNull(run_cost)) / priced_runs, 6))
        AS avg_cost_usd,
    round(sumIf(run_turns, stopped = 1) / greatest(finished, 1), 2) AS avg_turns,
    sum(run_api_calls) AS api_calls,
    sum(call_input) AS input_tokens,
    sum(call_cached) AS cached_input_tokens,
    sum(call_output) AS output_tokens,
    sum(call_reasoning) AS reasoning_tokens,
    round(cached_input_tokens / greatest(input_tokens, 1), 4) AS cache_hit_rate,
    round(sumIf(run_wall_ms, stopped = 1) / greatest(finished, 1) / 1000, 2) AS avg_wall_time_s
FROM
(
    SELECT run_id, policy_id, model, strategy,
        stopped, succeeded, run_cost, run_turns, run_api_calls, run_wall_ms
    FROM
    (
        SELECT run_id, policy_id, model, strategy
        FROM run_starts FINAL
        WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
            AND ({policy:String} = '' OR policy_id = {policy:String})
    ) AS started
    ANY LEFT JOIN
    (
        SELECT run_id, toUInt8(1) AS stopped, success AS succeeded, cost_usd AS run_cost,
            turns AS run_turns, api_calls AS run_api_calls, wall_time_ms AS run_wall_ms
        FROM run_stops FINAL
    ) AS stopped_runs USING run_id
) AS selected_runs
ANY LEFT JOIN
(
    SELECT run_id,
        sum(toFloat64(input_tokens)) AS call_input,
        sum(toFloat64(cached_input_tokens)) AS call_cached,
        sum(toFloat64(output_tokens)) AS call_output,
        sum(toFloat64(reasoning_tokens)) AS call_reasoning
    FROM deliberations FINAL
    GROUP BY run_id
) AS run_tokens USING run_id
GROUP BY policy_id, model, strategy
ORDER BY success_rate DESC, avg_cost_usd ASC, policy_id
