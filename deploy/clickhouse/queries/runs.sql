-- Runs: one row per run started in the range, newest first, with its result (NULL
-- columns: no run_stop yet; success is also NULL for a submission nobody judged, and
-- cost_usd and turns for a run whose cost or turn count is unknown). The report's run list
-- and time range come from here.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
-- param experiment String = '': only runs of these experiments, comma-separated; empty = every run
-- param sweep String = '': only runs of these sweeps, comma-separated; empty = every run
-- param scenario String = '': only runs of these scenarios (names), comma-separated; empty = every scenario
-- param limit UInt32 = '4294967295': at most this many runs, the latest
SELECT
    run_id,
    task_id,
    policy_id,
    toString(ts, 'UTC') AS started_utc,
    start_ms AS started_ms,
    stopped,
    if(stopped = 1, toNullable(succeeded), NULL) AS success,
    if(stopped = 1, toNullable(exit), NULL) AS exit_status,
    run_cost AS cost_usd,
    if(stopped = 1, toNullable(run_turns), NULL) AS turns,
    if(stopped = 1, toNullable(run_wall_ms), NULL) AS wall_time_ms
FROM
(
    SELECT run_id, task_id, policy_id, ts, ts_ms AS start_ms
    FROM run_starts FINAL
    WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
        AND ({policy:String} = '' OR policy_id = {policy:String})
        AND ({experiment:String} = '' OR has(splitByChar(',', {experiment:String}), ifNull(experiment, '')))
        AND ({sweep:String} = '' OR has(splitByChar(',', {sweep:String}), ifNull(sweep_name, '')))
        AND ({scenario:String} = '' OR has(splitByChar(',', {scenario:String}), ifNull(scenario_name, '')))
) AS started
ANY LEFT JOIN
(
    SELECT run_id, toUInt8(1) AS stopped, success AS succeeded, exit_status AS exit,
        cost_usd AS run_cost, turns AS run_turns, wall_time_ms AS run_wall_ms
    FROM run_stops FINAL
) AS stopped_runs USING run_id
ORDER BY started_ms DESC, toString(run_id)
LIMIT {limit:UInt32}
