-- The result of each finished run of a bayes sweep's trials
-- (agent-runner/src/sweep/trials.rs). FINAL: a run_stop delivered twice counts once.
-- Bound by the runner: the runs' ids (Array(String)). cost_usd stays NULL when unknown.
SELECT
    toString(run_id) AS run_id,
    success,
    cost_usd,
    total_tokens,
    wall_time_ms
FROM run_stops FINAL
WHERE has(?, toString(run_id))
