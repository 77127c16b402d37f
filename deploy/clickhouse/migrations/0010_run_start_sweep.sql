-- Which experiment a run belongs to: `run_starts` gains the sweep of `run_start.sweep`.
--
-- - sweep_name: the sweep's name; NULL for a run outside any sweep.
-- - sweep_key: the claim key of the run's job (`<sweep>.trial.<n>` for a bayes trial, the
--   configuration x task x seed key for a grid sweep); NULL outside a sweep.
-- - sweep_trial: the bayes trial, numbered from 0; NULL for a grid sweep's run and
--   outside a sweep.
--
-- Rows written before this migration read NULL: no run said its sweep then (a sweep's
-- runs can still be found by its claim board, not from ClickHouse).
--
-- ADD COLUMN (18.16 has no IF NOT EXISTS) is guarded, so this file may run twice.

-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_starts' AND name = 'sweep_name'
ALTER TABLE run_starts
    ADD COLUMN sweep_name Nullable(String) AFTER runner_version,
    ADD COLUMN sweep_key Nullable(String) AFTER sweep_name,
    ADD COLUMN sweep_trial Nullable(UInt64) AFTER sweep_key;
