-- Leaderboard: one row per policy (policy_id, model, strategy) and scoring version, best
-- success rate first; with by = 'cfg', one row per policy, run config (cfg_hash, NULL
-- otherwise) and scoring version, so runs of one model:strategy under different
-- temperatures, windows, endpoints or task mixes are not merged. Verdicts of different
-- scoring versions (run_start.scoring_version: the judge's rules) are never pooled: a
-- policy judged under two versions has two rows (NULL: a Smith run, which names none).
-- Nor are runs under different isolation (run_start.sandbox.kind, `sandbox_kind`: `bwrap`,
-- `none` for plain processes on the host, NULL when the run did not say): a policy run
-- both in the sandbox and without it has a row for each.
--
-- runs = runs started; finished = runs with a run_stop; infra_failures = finished runs
-- that are infrastructure failures, no result of the policy (success NULL and exit_status
-- exit_api or exit_environment: the provider failed, or the sandbox could not be
-- set up; agent-runner/README.md, "Infrastructure failures are not results"); judged =
-- finished runs whose success is known (NULL success: a submission nobody judged, e.g.
-- an imported trajectory, or an infrastructure failure); success_rate = successes /
-- judged, NULL when none is. solved_per_usd = tasks solved per dollar over the judged
-- runs whose cost is known (successes among them / their summed cost), NULL when there is
-- none or they cost nothing. Every average and sum below is over the finished runs that
-- are results (infrastructure failures left out: they measure the provider or the host,
-- not the policy). avg_cost_usd averages those whose cost is known (priced_runs); NULL
-- when none is. avg_turns averages those whose turns are known (NULL turns: an exec
-- agent's run, whose turns nobody counted, or a Smith run_stop), NULL when none is, never
-- counting unknown turns as 0. avg_wall_time_s averages those whose wall time is known
-- (NULL: an imported trajectory, which times its commands, not the run), NULL when none
-- is.
-- api_calls sums the model calls of those that counted them (NULL: an exec agent that
-- reported no call, a trajectory or trace that states no count, a Smith run), NULL when
-- none did. Tokens are
-- summed over every LLM call of the runs whose tokens are known (token_runs; a run not
-- finished yet counts with its calls so far): a run with a call whose tokens are unknown
-- (NULL: no answer, or no usage in it), or a finished run whose calls do not add up to
-- its total_tokens (NULL total: an exec agent that reported no call; a total without its
-- calls: an imported trajectory, a Smith run), is left out of the sums, never counted
-- as 0; the sums are NULL when no run is left. input_tokens INCLUDES
-- cached_input_tokens, output_tokens INCLUDES reasoning_tokens; cache_hit_rate = cached
-- / input, NULL when there are no input tokens. Token sums are Float64 (exact up to
-- 2^53, never wrapping): sum() over UInt64 wraps past 2^64, which any producer's token
-- counts could reach.
-- Dedup: every table is read with FINAL. 18.16 allows one JOIN per SELECT, hence the
-- nesting; current ClickHouse wants every joined subquery named, hence the aliases.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
-- param experiment String = '': only runs of these experiments, comma-separated; empty = every run
-- param sweep String = '': only runs of these sweeps, comma-separated; empty = every run
-- param scenario String = '': only runs of these scenarios (names), comma-separated; empty = every scenario
-- param by String = 'policy': 'cfg' splits each policy by cfg_hash; anything else does not
SELECT
    policy_id,
    nullIf(cfg_key, '') AS cfg_hash,
    model,
    strategy,
    scoring_version,
    sandbox_kind,
    count() AS runs,
    sum(stopped) AS finished,
    countIf(stopped = 1 AND infra = 1) AS infra_failures,
    countIf(stopped = 1 AND isNotNull(succeeded)) AS judged,
    countIf(stopped = 1 AND succeeded = 1) AS successes,
    if(judged = 0, NULL, round(successes / judged, 4)) AS success_rate,
    if(sumIf(assumeNotNull(run_cost), stopped = 1 AND isNotNull(succeeded)
            AND isNotNull(run_cost)) = 0, NULL,
        round(countIf(stopped = 1 AND succeeded = 1 AND isNotNull(run_cost))
            / sumIf(assumeNotNull(run_cost), stopped = 1 AND isNotNull(succeeded)
                AND isNotNull(run_cost)), 4)) AS solved_per_usd,
    countIf(stopped = 1 AND infra = 0 AND isNotNull(run_cost)) AS priced_runs,
    if(priced_runs = 0, NULL,
        round(sumIf(assumeNotNull(run_cost), stopped = 1 AND infra = 0
            AND isNotNull(run_cost)) / priced_runs, 6)) AS avg_cost_usd,
    if(countIf(stopped = 1 AND infra = 0 AND isNotNull(run_turns)) = 0, NULL,
        round(sumIf(assumeNotNull(run_turns), stopped = 1 AND infra = 0 AND isNotNull(run_turns))
            / countIf(stopped = 1 AND infra = 0 AND isNotNull(run_turns)), 2)) AS avg_turns,
    if(countIf(stopped = 1 AND infra = 0 AND isNotNull(run_api_calls)) = 0, NULL,
        sumIf(assumeNotNull(run_api_calls), stopped = 1 AND infra = 0
            AND isNotNull(run_api_calls))) AS api_calls,
    countIf(tokens_known = 1) AS token_runs,
    if(token_runs = 0, NULL, sumIf(call_input, tokens_known = 1)) AS input_tokens,
    if(token_runs = 0, NULL, sumIf(call_cached, tokens_known = 1)) AS cached_input_tokens,
    if(token_runs = 0, NULL, sumIf(call_output, tokens_known = 1)) AS output_tokens,
    if(token_runs = 0, NULL, sumIf(call_reasoning, tokens_known = 1)) AS reasoning_tokens,
    if(input_tokens > 0, round(cached_input_tokens / input_tokens, 4), NULL) AS cache_hit_rate,
    if(countIf(stopped = 1 AND infra = 0 AND isNotNull(run_wall_ms)) = 0, NULL,
        round(sumIf(assumeNotNull(run_wall_ms), stopped = 1 AND infra = 0 AND isNotNull(run_wall_ms))
            / countIf(stopped = 1 AND infra = 0 AND isNotNull(run_wall_ms)) / 1000, 2))
        AS avg_wall_time_s
FROM
(
    SELECT policy_id, cfg_key, model, strategy, scoring_version, sandbox_kind,
        stopped, succeeded, run_exit, run_cost, run_turns, run_api_calls, run_wall_ms,
        call_input, call_cached, call_output, call_reasoning,
        -- An infrastructure failure (agent-runner/README.md): no result of the policy.
        toUInt8(stopped = 1 AND isNull(succeeded)
            AND ifNull(run_exit IN ('exit_api', 'exit_environment'), 0)) AS infra,
        -- Every call's counts known, and (once finished) its calls add up to the run's
        -- total: a run whose calls are not in the stream (an imported trajectory, a Smith
        -- run) or whose total is NULL is left out rather than counted as 0 tokens.
        toUInt8(tokens_unknown = 0 AND (stopped = 0
            OR ifNull(toFloat64(run_total) = call_input + call_output, 0))) AS tokens_known
    FROM
    (
        SELECT run_id, policy_id, cfg_key, model, strategy, scoring_version, sandbox_kind,
            stopped, succeeded, run_exit, run_cost, run_turns, run_api_calls, run_wall_ms,
            run_total
        FROM
        (
            SELECT run_id, policy_id, if({by:String} = 'cfg', cfg_hash, '') AS cfg_key,
                model, strategy, scoring_version, sandbox_kind
            FROM run_starts FINAL
            WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
                AND ({policy:String} = '' OR policy_id = {policy:String})
                AND ({experiment:String} = '' OR has(splitByChar(',', {experiment:String}), ifNull(experiment, '')))
                AND ({sweep:String} = '' OR has(splitByChar(',', {sweep:String}), ifNull(sweep_name, '')))
                AND ({scenario:String} = '' OR has(splitByChar(',', {scenario:String}), ifNull(scenario_name, '')))
        ) AS started
        ANY LEFT JOIN
        (
            SELECT run_id, toUInt8(1) AS stopped, success AS succeeded,
                exit_status AS run_exit, cost_usd AS run_cost,
                turns AS run_turns, api_calls AS run_api_calls, wall_time_ms AS run_wall_ms,
                total_tokens AS run_total
            FROM run_stops FINAL
        ) AS stopped_runs USING run_id
    ) AS selected_runs
    ANY LEFT JOIN
    (
        -- A run without calls joins no row here: 0 tokens, none unknown.
        SELECT run_id,
            sum(toFloat64(ifNull(input_tokens, 0))) AS call_input,
            sum(toFloat64(ifNull(cached_input_tokens, 0))) AS call_cached,
            sum(toFloat64(ifNull(output_tokens, 0))) AS call_output,
            sum(toFloat64(ifNull(reasoning_tokens, 0))) AS call_reasoning,
            toUInt8(countIf(isNull(input_tokens) OR isNull(cached_input_tokens)
                OR isNull(output_tokens) OR isNull(reasoning_tokens)) > 0) AS tokens_unknown
        FROM deliberations FINAL
        GROUP BY run_id
    ) AS run_tokens USING run_id
) AS runs_with_tokens
GROUP BY policy_id, cfg_key, model, strategy, scoring_version, sandbox_kind
ORDER BY success_rate DESC, avg_cost_usd ASC, policy_id, cfg_key, scoring_version, sandbox_kind
