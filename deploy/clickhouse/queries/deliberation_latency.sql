-- LLM call latency per provider and model: p50/p90/p99 (exact quantiles, so 18.16 and
-- current ClickHouse agree) over every timed call, timed-out ones included, plus counts of
-- timeouts, API errors and unparsable answers. A call whose producer did not time it
-- (latency_ms NULL: an exec agent that sent none) counts in `calls` but not in the
-- quantiles; they are NULL when no call was timed.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
-- param experiment String = '': only runs of these experiments, comma-separated; empty = every run
-- param sweep String = '': only runs of these sweeps, comma-separated; empty = every run
-- param scenario String = '': only runs of these scenarios (names), comma-separated; empty = every scenario
SELECT
    provider,
    model,
    count() AS calls,
    quantileExact(0.5)(latency_ms) AS p50_ms,
    quantileExact(0.9)(latency_ms) AS p90_ms,
    quantileExact(0.99)(latency_ms) AS p99_ms,
    max(latency_ms) AS max_ms,
    countIf(status = 'timeout') AS timeouts,
    round(timeouts / calls, 4) AS timeout_rate,
    countIf(status = 'api_error') AS api_errors,
    countIf(status = 'parse_failure') AS parse_failures
FROM deliberations FINAL
WHERE run_id IN (
    -- The runs selected by the time range and policy filter.
    SELECT run_id FROM run_starts FINAL
    WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
        AND ({policy:String} = '' OR policy_id = {policy:String})
        AND ({experiment:String} = '' OR has(splitByChar(',', {experiment:String}), ifNull(experiment, '')))
        AND ({sweep:String} = '' OR has(splitByChar(',', {sweep:String}), ifNull(sweep_name, '')))
        AND ({scenario:String} = '' OR has(splitByChar(',', {scenario:String}), ifNull(scenario_name, '')))
)
GROUP BY provider, model
ORDER BY provider, model
