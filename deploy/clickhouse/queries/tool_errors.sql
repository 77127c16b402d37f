-- Tool error rates: calls per tool and exit_kind, each kind's share of the tool's
-- calls, and the tool's overall error rate.
--
-- A tool error is a tool call whose exit_kind is not 'ok', a command exiting non-zero
-- ('deterministic') included. The runner uses the same definition: each such call has a
-- `failure` event (root `tool` or `path`) and counts in run_stop.tool_errors, so the
-- calls here with exit_kind != 'ok' add up to the runs' tool_errors.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
SELECT
    tool_name,
    exit_kind,
    calls,
    round(calls / tool_calls, 4) AS share,
    tool_calls,
    round(tool_failures / tool_calls, 4) AS tool_error_rate,
    avg_latency_ms,
    retries
FROM
(
    SELECT tool_name, groupArray(kind) AS kinds, groupArray(n) AS counts,
        groupArray(latency) AS latencies, groupArray(kind_retries) AS retry_counts,
        sum(n) AS tool_calls, sumIf(n, kind != 'ok') AS tool_failures
    FROM
    (
        SELECT tool_name, exit_kind AS kind, count() AS n,
            round(avg(latency_ms), 1) AS latency, sum(retries) AS kind_retries
        FROM tool_calls FINAL
        WHERE run_id IN (
    -- The runs selected by the time range and policy filter.
    SELECT run_id FROM run_starts FINAL
    WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
        AND ({policy:String} = '' OR policy_id = {policy:String})
)
        GROUP BY tool_name, kind
    )
    GROUP BY tool_name
)
ARRAY JOIN kinds AS exit_kind, counts AS calls, latencies AS avg_latency_ms,
    retry_counts AS retries
ORDER BY tool_name, calls DESC, exit_kind
