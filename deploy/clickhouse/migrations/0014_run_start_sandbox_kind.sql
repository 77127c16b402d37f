-- Which isolation a run had: `run_starts` gains `sandbox_kind`, the `kind` of
-- `run_start.sandbox`, so that results under different isolation are never pooled (the
-- leaderboard keeps a row per sandbox kind).
--
-- - sandbox_kind: `bwrap` (the agent's processes ran in the bubblewrap sandbox) or `none`
--   (plain processes on the host: `--unsandboxed`, or a scripted run on a host without
--   bwrap); NULL when the run_start says nothing of its sandbox (a Smith run, an imported
--   trajectory, a receiver of foreign traces).
--
-- Rows written before this migration read NULL: their sandbox is not known here (the raw
-- run_start in events_raw still holds it).
--
-- ADD COLUMN (18.16 has no IF NOT EXISTS) is guarded, so this file may run twice.

-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_starts' AND name = 'sandbox_kind'
ALTER TABLE run_starts
    ADD COLUMN sandbox_kind Nullable(String) AFTER sweep_trial;
