-- Exit-status distribution: finished runs per policy and exit_status, with each
-- status's share of the policy's finished runs (the shares of a policy add up to 1).
-- Runs whose producer sent no exit status (Smith protocol) count as `unknown`.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
-- param experiment String = '': only runs of these experiments, comma-separated; empty = every run
-- param sweep String = '': only runs of these sweeps, comma-separated; empty = every run
-- param scenario String = '': only runs of these scenarios (names), comma-separated; empty = every scenario
SELECT
    policy_id,
    exit_status,
    runs,
    round(runs / policy_runs, 4) AS share,
    policy_runs
FROM
(
    SELECT policy_id, groupArray(status) AS statuses, groupArray(n) AS counts,
        sum(n) AS policy_runs
    FROM
    (
        SELECT policy_id, ifNull(exit_status, 'unknown') AS status, count() AS n
        FROM run_stops FINAL
        WHERE run_id IN (
    -- The runs selected by the time range and policy filter.
    SELECT run_id FROM run_starts FINAL
    WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
        AND ({policy:String} = '' OR policy_id = {policy:String})
        AND ({experiment:String} = '' OR has(splitByChar(',', {experiment:String}), ifNull(experiment, '')))
        AND ({sweep:String} = '' OR has(splitByChar(',', {sweep:String}), ifNull(sweep_name, '')))
        AND ({scenario:String} = '' OR has(splitByChar(',', {scenario:String}), ifNull(scenario_name, '')))
)
        GROUP BY policy_id, status
    )
    GROUP BY policy_id
)
ARRAY JOIN statuses AS exit_status, counts AS runs
ORDER BY policy_id, runs DESC, exit_status
