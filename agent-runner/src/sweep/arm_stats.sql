-- Finished runs of each config (arm) of an adaptive sweep on the sweep's tasks
-- (agent-runner/src/sweep/adaptive.rs). FINAL: a run_stop delivered twice counts once.
-- Bound by the runner, in order: the arms' cfg hashes, the task ids (both Array(String)).
-- A run with an unknown cost (cost_usd NULL) counts as free in avg_cost_usd.
SELECT
    cfg_hash,
    count() AS runs,
    -- Sweep runs are this runner's own, whose success and tokens are always known; the
    -- -If forms skip NULLs (imported runs) and keep the columns non-Nullable.
    avgIf(assumeNotNull(success), isNotNull(success)) AS success_rate,
    avg(ifNull(cost_usd, 0)) AS avg_cost_usd,
    avgIf(assumeNotNull(total_tokens), isNotNull(total_tokens)) AS avg_tokens,
    avg(wall_time_ms) AS avg_wall_time_ms
FROM run_stops FINAL
WHERE has(?, cfg_hash) AND has(?, task_id)
GROUP BY cfg_hash
