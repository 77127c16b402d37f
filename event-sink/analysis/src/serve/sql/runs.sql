-- The latest runs of an experiment or of a task, newest first (bench-analysis serve).
-- FINAL: each event counts once.
-- Bound in order: what to match ('experiment' or 'task'), its value, the most rows.
-- The run id is `id`: an alias `run_id` would replace the JOIN key on 18.16. A run
-- without a run_stop reads NULL from the joined side whatever its type, hence the ifNull.
SELECT toString(run_id) AS id, task_id, policy_id, experiment,
    toUInt32(ts) AS started, toUInt8(ifNull(s_stopped, 0)) AS stopped,
    ifNull(s_exit, '') AS exit_status, s_success AS success, s_cost AS cost_usd
FROM
(
    SELECT run_id, task_id, policy_id, experiment, ts
    FROM run_starts FINAL
    WHERE if(? = 'experiment', ifNull(experiment, ''), task_id) = ?
) AS started_runs
ANY LEFT JOIN
(
    SELECT run_id, toUInt8(1) AS s_stopped, exit_status AS s_exit,
        success AS s_success, cost_usd AS s_cost
    FROM run_stops FINAL
) AS stopped_runs USING run_id
ORDER BY started DESC, id
LIMIT ?
