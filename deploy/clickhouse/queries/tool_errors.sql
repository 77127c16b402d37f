-- Tool error rates: calls per tool and exit_kind, each kind's share of the tool's
-- calls, and the tool's overall error rate.
--
-- A tool error is a tool call whose exit_kind is not 'ok', a command exiting non-zero
-- ('deterministic') included. The runner uses the same definition: each such call has a
-- `failure` event (root `tool` or `path`) and counts in run_stop.tool_errors, so the
-- calls here with exit_kind != 'ok' add up to the runs' tool_errors.
--
-- avg_latency_ms is over the calls that were timed (NULL when none was); retries is the
-- sum of the calls' retries, NULL when some call's retries were not counted (an imported
-- trajectory, a trace, an exec agent that sent none): a partial sum would read as a
-- count. (One array of tuples, not one array per column: groupArray skips NULLs, which
-- would shift the columns against each other.)
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
-- param experiment String = '': only runs of these experiments, comma-separated; empty = every run
-- param sweep String = '': only runs of these sweeps, comma-separated; empty = every run
-- param scenario String = '': only runs of these scenarios (names), comma-separated; empty = every scenario
SELECT
    tool_name,
    tupleElement(k, 1) AS exit_kind,
    tupleElement(k, 2) AS calls,
    round(calls / tool_calls, 4) AS share,
    tool_calls,
    round(tool_failures / tool_calls, 4) AS tool_error_rate,
    tupleElement(k, 3) AS avg_latency_ms,
    tupleElement(k, 4) AS retries
FROM
(
    SELECT tool_name, groupArray((kind, n, latency, kind_retries)) AS per_kind,
        sum(n) AS tool_calls, sumIf(n, kind != 'ok') AS tool_failures
    FROM
    (
        SELECT tool_name, exit_kind AS kind, count() AS n,
            round(avg(latency_ms), 1) AS latency,
            if(countIf(isNull(retries)) > 0, NULL, sum(retries)) AS kind_retries
        FROM tool_calls FINAL
        WHERE run_id IN (
    -- The runs selected by the time range and policy filter.
    SELECT run_id FROM run_starts FINAL
    WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
        AND ({policy:String} = '' OR policy_id = {policy:String})
        AND ({experiment:String} = '' OR has(splitByChar(',', {experiment:String}), ifNull(experiment, '')))
        AND ({sweep:String} = '' OR has(splitByChar(',', {sweep:String}), ifNull(sweep_name, '')))
        AND ({scenario:String} = '' OR has(splitByChar(',', {scenario:String}), ifNull(scenario_name, '')))
)
        GROUP BY tool_name, kind
    )
    GROUP BY tool_name
)
ARRAY JOIN per_kind AS k
ORDER BY tool_name, calls DESC, exit_kind
