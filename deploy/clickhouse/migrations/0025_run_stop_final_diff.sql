-- The submitted diff itself travels with the run's result (`run_stop.final_diff`), so a
-- reader without the runner's files (the viewer on another host, SQL) reads what was
-- judged. `run_stops` gains:
--
-- - final_diff: the diff `diff_sha256` hashes, its first 262,144 chars; NULL when the run
--   has no diff (no base repository), the diff is not UTF-8 text, it was left out for the
--   event's size, and for every row written before this migration;
-- - final_diff_truncated: 1 when final_diff is the head of the diff only, or the diff was
--   left out for size; 0 when it is whole; NULL when there is no text and nothing was
--   cut.
--
-- The guarded ADD COLUMN (18.16 has no IF NOT EXISTS there) lets this file run twice.

-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_stops' AND name = 'final_diff'
ALTER TABLE run_stops
    ADD COLUMN final_diff Nullable(String) AFTER forged_events,
    ADD COLUMN final_diff_truncated Nullable(UInt8) AFTER final_diff;
