-- Trajectory of a bayes sweep: each finished trial of the optimizer, in trial order and
-- numbered from 0 as trials, logs and claim keys number them, with the cfg_hash of the
-- config proposed (its settings: `optimizer_updates.suggested_config`), the runs it
-- produced (run_ids: its config on every task of the sweep with every seed) and their
-- result, the objective and the best objective so far. The sweep's best config so far is
-- the row with the highest objective (is_best = 1). A trial proposed again after its
-- worker died shows once per finished proposal, each with its own runs.
--
-- A trial's proposal (optimizer_update, policy_id optimizer:tpe, task_id sweep:<name>)
-- is sent once the trial's runs ended and carries their result: the run ids, the runs
-- that solved their task (solved; NULL when some run has no verdict), the totals of cost,
-- tokens and wall time (NULL when some run's is unknown) and the objective the optimizer
-- was told: the mean over the runs of success - cost_weight * cost_usd - token_weight *
-- total_tokens / 1e6 - time_weight * wall_time_ms / 60000, with the sweep file's [bayes]
-- weights (agent-runner/docs/sweeps.md); NULL when a part it weighs is unknown. Each
-- run's own run_start (sweep_trial) and run_stop hold what the row sums, by run id.
-- Proposals recorded without a result (before migration 0023) are not shown.
-- 18.16 allows no window functions, hence the arrays.
-- param sweep String: the sweep's name
SELECT
    i - 1 AS proposal,
    tupleElement(rows[i], 2) AS proposed_at,
    tupleElement(rows[i], 1) AS trial,
    tupleElement(rows[i], 3) AS cfg_hash,
    length(tupleElement(rows[i], 4)) AS runs,
    tupleElement(rows[i], 4) AS run_ids,
    tupleElement(rows[i], 5) AS expected_improvement,
    tupleElement(rows[i], 6) AS exploration_vs_exploitation,
    tupleElement(rows[i], 7) AS solved,
    tupleElement(rows[i], 7) / length(tupleElement(rows[i], 4)) AS success_rate,
    tupleElement(rows[i], 8) AS cost_usd,
    tupleElement(rows[i], 9) AS total_tokens,
    tupleElement(rows[i], 10) AS wall_time_ms,
    objectives[i] AS objective,
    arrayReduce('max', arraySlice(objectives, 1, i)) AS best_so_far,
    (objectives[i] = arrayReduce('max', objectives) AND indexOf(objectives, objectives[i]) = i) AS is_best
FROM
(
    SELECT
        rows,
        arrayMap(r -> tupleElement(r, 11), rows) AS objectives
    FROM
    (
        SELECT arraySort(r -> (tupleElement(r, 1), tupleElement(r, 12)), groupArray((
            assumeNotNull(trial), ts, cfg_hash, trial_run_ids, expected_improvement,
            exploration_vs_exploitation, trial_solved, trial_cost_usd, trial_total_tokens,
            trial_wall_time_ms, objective, ts_ms
        ))) AS rows
        FROM optimizer_updates FINAL
        WHERE policy_id = 'optimizer:tpe' AND task_id = concat('sweep:', {sweep:String})
            AND isNotNull(trial) AND notEmpty(trial_run_ids)
    )
)
ARRAY JOIN arrayEnumerate(rows) AS i
ORDER BY proposal
