-- Finished runs of each config (arm) of an adaptive sweep on the sweep's tasks
-- (agent-runner/src/sweep/adaptive.rs). FINAL: a run_stop delivered twice counts once.
-- Bound by the runner, in order: the arms' cfg hashes, the task ids (both Array(String)),
-- then whether the reward needs the cost, the token count and the wall time (UInt8 each:
-- their weight is not 0).
-- Only runs whose reward is known count: judged (success not NULL), and with a known
-- cost / token count / wall time when the reward needs it. A run missing one of them is no play of
-- its arm; an unknown cost is never read as free.
SELECT
    cfg_hash,
    count() AS runs,
    avg(assumeNotNull(success)) AS success_rate,
    -- Nullable: avg skips NULLs (only possible where the reward does not need the value)
    -- and is NULL when every run's value is unknown.
    avg(cost_usd) AS avg_cost_usd,
    avg(total_tokens) AS avg_tokens,
    avg(wall_time_ms) AS avg_wall_time_ms
FROM run_stops FINAL
WHERE has(?, cfg_hash) AND has(?, task_id)
    AND isNotNull(success)
    AND (? = 0 OR isNotNull(cost_usd))
    AND (? = 0 OR isNotNull(total_tokens))
    AND (? = 0 OR isNotNull(wall_time_ms))
GROUP BY cfg_hash
