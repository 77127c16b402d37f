-- Per-instance results, as sweep studies report them: one row per task and policy with
-- the runs started, finished, judged (finished with a known success; NULL success: a
-- submission nobody judged) and solved (success in run_stop), the average cost of the
-- finished runs whose cost is known (NULL when none is) and the average turns of the
-- finished runs whose turns are known (NULL when none is: a Smith run_stop may omit them),
-- both over the runs that are results (infrastructure failures, agent-runner/README.md,
-- left out).
-- Dedup: both tables are read with FINAL; an unfinished run counts in runs only.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
-- param experiment String = '': only runs of these experiments, comma-separated; empty = every run
-- param sweep String = '': only runs of these sweeps, comma-separated; empty = every run
-- param scenario String = '': only runs of these scenarios (names), comma-separated; empty = every scenario
SELECT
    task_id,
    policy_id,
    scoring_version,
    count() AS runs,
    sum(stopped) AS finished,
    countIf(stopped = 1 AND isNotNull(succeeded)) AS judged,
    -- A comparison with the Nullable success would make 18.16's count NULL when no run
    -- was judged (current ClickHouse counts 0): assumeNotNull after the isNotNull test.
    countIf(stopped = 1 AND isNotNull(succeeded) AND assumeNotNull(succeeded) = 1) AS solved,
    countIf(stopped = 1 AND infra = 0 AND isNotNull(run_cost)) AS priced_runs,
    if(priced_runs = 0, NULL,
        round(sumIf(assumeNotNull(run_cost), stopped = 1 AND infra = 0 AND isNotNull(run_cost))
            / priced_runs, 6)) AS avg_cost_usd,
    if(countIf(stopped = 1 AND infra = 0 AND isNotNull(run_turns)) = 0, NULL,
        round(sumIf(assumeNotNull(run_turns), stopped = 1 AND infra = 0 AND isNotNull(run_turns))
            / countIf(stopped = 1 AND infra = 0 AND isNotNull(run_turns)), 2)) AS avg_turns
FROM
(
    SELECT run_id, task_id, policy_id, scoring_version
    FROM run_starts FINAL
    WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
        AND ({policy:String} = '' OR policy_id = {policy:String})
        AND ({experiment:String} = '' OR has(splitByChar(',', {experiment:String}), ifNull(experiment, '')))
        AND ({sweep:String} = '' OR has(splitByChar(',', {sweep:String}), ifNull(sweep_name, '')))
        AND ({scenario:String} = '' OR has(splitByChar(',', {scenario:String}), ifNull(scenario_name, '')))
) AS started
ANY LEFT JOIN
(
    SELECT run_id, toUInt8(1) AS stopped, success AS succeeded, cost_usd AS run_cost,
        turns AS run_turns,
        toUInt8(isNull(success)
            AND ifNull(exit_status IN ('exit_api', 'exit_environment'), 0)) AS infra
    FROM run_stops FINAL
) AS stopped_runs USING run_id
GROUP BY task_id, policy_id, scoring_version
ORDER BY task_id, policy_id, scoring_version
