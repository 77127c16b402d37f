-- The verdict comes from the submitted diff alone; `run_stops` gains the integrity flags
-- of every judged run (NULL for runs not judged here, imported or traced runs, and rows
-- written before this migration):
-- - diff_excluded: how many changed paths of the workspace were left out of the diff (a
--   file over the per-file cap, with more than one hard link, a special file, one past
--   the submission's cap, an unreadable one; `integrity.diff_excluded`, counted);
-- - workspace_verdict_differs: 1 when the judge's verdict on the workspace as the agent
--   left it (a cross-check) differs from the verdict on the submitted diff, the run's;
-- - shadows_module: how many modules the diff adds with the name of a standard-library
--   or installed module (`integrity.shadows_module`, counted; NULL for tasks not judged
--   by pytest);
-- - forged_events: lines of an `exec` agent refused as other producers' events (NULL for
--   native runs).
--
-- The guarded ADD COLUMN (18.16 has no IF NOT EXISTS there) lets this file run twice.

-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_stops' AND name = 'diff_excluded'
ALTER TABLE run_stops
    ADD COLUMN diff_excluded Nullable(UInt32) AFTER regrade_resolved,
    ADD COLUMN workspace_verdict_differs Nullable(UInt8) AFTER diff_excluded,
    ADD COLUMN shadows_module Nullable(UInt32) AFTER workspace_verdict_differs,
    ADD COLUMN forged_events Nullable(UInt32) AFTER shadows_module;
