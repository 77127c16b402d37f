-- Each experiment (or sweep) with its progress, newest first (bench-analysis serve, the
-- home page and an experiment's page). FINAL: each event counts once.
-- Bound in order: the experiment's name twice (an empty name: every experiment).
-- A run without a run_stop reads NULL from the joined side whatever its type (18.16),
-- hence the ifNull. The inner name is not `experiment`: an alias shadows the column in
-- WHERE.
SELECT name AS experiment, any(sweep_name) AS sweep, uniqExact(policy_id) AS policies,
    count() AS started, toUInt64(sum(ifNull(stopped, 0))) AS done,
    toUInt64(sum(ifNull(infra, 0))) AS infrastructure,
    toUInt64(sum(ifNull(judged, 0))) AS judged, toUInt64(sum(ifNull(solved, 0))) AS solved,
    sumIf(assumeNotNull(cost), isNotNull(cost)) AS cost_usd,
    done - countIf(isNotNull(cost)) AS unpriced,
    max(planned_runs) AS planned, toUInt32(min(ts)) AS first_start
FROM
(
    SELECT run_id, assumeNotNull(experiment) AS name, sweep_name, policy_id, ts, planned_runs
    FROM run_starts FINAL
    WHERE isNotNull(experiment) AND (? = '' OR assumeNotNull(experiment) = ?)
) AS started_runs
ANY LEFT JOIN
(
    -- Infrastructure failures (the environment or the provider failed) are no result,
    -- as in paired_outcomes.
    SELECT run_id, toUInt8(1) AS stopped,
        toUInt8(exit_status IN ('exit_environment', 'exit_api')) AS infra,
        toUInt8(isNotNull(success) AND infra = 0) AS judged,
        toUInt8(judged = 1 AND assumeNotNull(success) = 1) AS solved,
        cost_usd AS cost
    FROM run_stops FINAL
) AS stopped_runs USING run_id
GROUP BY name
ORDER BY first_start DESC, name
