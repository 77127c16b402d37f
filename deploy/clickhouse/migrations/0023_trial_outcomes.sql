-- A bayes trial's result, stored with its proposal: `optimizer_updates` gains the
-- `outcome` of `optimizer_update` (a trial runs its config on every task of the sweep
-- with every seed, and its proposal is sent once those runs ended).
--
-- - trial_run_ids: the trial's runs (one per task and seed), in the order they ran;
--   empty for other optimizers' updates and for proposals sent without a result.
-- - trial_solved: runs that solved their task; NULL when some run has no verdict.
-- - trial_cost_usd, trial_total_tokens, trial_wall_time_ms: totals over the trial's runs;
--   NULL when some run's is unknown.
-- - objective: the sweep's objective (mean over the runs of success minus its weighted
--   costs), what the optimizer was told; NULL when a part it weighs is unknown.
--
-- Rows written before this migration read empty arrays and NULL: no proposal carried
-- its result then.
--
-- ADD COLUMN (18.16 has no IF NOT EXISTS) is guarded, so this file may run twice.

-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'optimizer_updates' AND name = 'objective'
ALTER TABLE optimizer_updates
    ADD COLUMN trial_run_ids Array(String) AFTER trial,
    ADD COLUMN trial_solved Nullable(UInt32) AFTER trial_run_ids,
    ADD COLUMN trial_cost_usd Nullable(Float64) AFTER trial_solved,
    ADD COLUMN trial_total_tokens Nullable(UInt64) AFTER trial_cost_usd,
    ADD COLUMN trial_wall_time_ms Nullable(UInt64) AFTER trial_total_tokens,
    ADD COLUMN objective Nullable(Float64) AFTER trial_wall_time_ms;
