-- Cost-vs-success Pareto frontier over policies: on_frontier = 1 when no other policy
-- is at least as cheap and at least as successful, and strictly better in one. One row
-- per policy and scoring version (run_start.scoring_version, NULL for Smith runs): a
-- policy is only compared with policies judged under the same scoring rules.
--
-- Over finished runs; success_rate is over the runs whose success is known (NULL
-- success: a submission nobody judged), avg_cost_usd averages the runs with a known
-- cost (priced_runs) that are results (infrastructure failures, agent-runner/README.md,
-- left out: they measure the provider or the host), and policies without any of either
-- are left out (unknown).
-- Window functions are not in 18.16, so every policy is compared with all the others
-- through arrays.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
-- param experiment String = '': only runs of these experiments, comma-separated; empty = every run
-- param sweep String = '': only runs of these sweeps, comma-separated; empty = every run
-- param scenario String = '': only runs of these scenarios (names), comma-separated; empty = every scenario
SELECT
    policy_id,
    nullIf(version, '') AS scoring_version,
    runs,
    priced_runs,
    round(rate, 4) AS success_rate,
    round(cost, 6) AS avg_cost_usd,
    toUInt8(NOT arrayExists(
        (other_cost, other_rate, other_version) -> other_version = version
            AND other_cost <= cost AND other_rate >= rate
            AND (other_cost < cost OR other_rate > rate),
        costs, rates, versions)) AS on_frontier
FROM
(
    SELECT groupArray(policy_id) AS policies, groupArray(scoring) AS versions,
        groupArray(finished) AS run_counts, groupArray(priced) AS priced_counts,
        groupArray(policy_rate) AS rates, groupArray(policy_cost) AS costs
    FROM
    (
        SELECT
            policy_id,
            -- '' for NULL: groupArray leaves NULLs out, which would misalign the arrays.
            ifNull(scoring_version, '') AS scoring,
            count() AS finished,
            countIf(isNotNull(cost_usd) AND infra = 0) AS priced,
            countIf(isNotNull(success)) AS judged,
            countIf(success = 1) / judged AS policy_rate,
            sumIf(assumeNotNull(cost_usd), isNotNull(cost_usd) AND infra = 0) / priced
                AS policy_cost
        FROM
        (
            -- The runs selected by the time range and policy filter.
            SELECT run_id, policy_id, scoring_version FROM run_starts FINAL
            WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
                AND ({policy:String} = '' OR policy_id = {policy:String})
                AND ({experiment:String} = '' OR has(splitByChar(',', {experiment:String}), ifNull(experiment, '')))
                AND ({sweep:String} = '' OR has(splitByChar(',', {sweep:String}), ifNull(sweep_name, '')))
                AND ({scenario:String} = '' OR has(splitByChar(',', {scenario:String}), ifNull(scenario_name, '')))
        ) AS started
        ANY INNER JOIN
        (
            SELECT run_id, success, cost_usd,
                toUInt8(isNull(success)
                    AND ifNull(exit_status IN ('exit_api', 'exit_environment'), 0)) AS infra
            FROM run_stops FINAL
        ) AS stopped_runs USING run_id
        GROUP BY policy_id, scoring
        HAVING priced > 0 AND judged > 0
    )
)
ARRAY JOIN policies AS policy_id, versions AS version, run_counts AS runs,
    priced_counts AS priced_runs, rates AS rate, costs AS cost
ORDER BY avg_cost_usd, success_rate DESC, policy_id, scoring_version
