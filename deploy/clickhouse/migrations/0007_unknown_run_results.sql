-- Run results nobody established are NULL, never a made-up 0: the `run_stops` columns
-- of facts a run can end without become Nullable.
--
-- - success: NULL when a submission was never judged (an imported trajectory nobody
--   judged). A run that ended without a submission stores 0: it did not solve the task.
-- - final_score, tests_passed, tests_failed: NULL when no judge ran (the run was shut
--   down, or its sandbox could not be set up).
-- - total_tokens: NULL when the run's model usage is unknown (an imported trajectory
--   that records none).
-- - stability_variance: NULL unless the judge was repeated and the variance computed.
--
-- Rows written before this migration keep their values, which this migration does not
-- rewrite: those of runs shut down before judging (early_stop_reason = 'shutdown') hold
-- 0 for tests and score, and every older row 0 for a variance never computed; read
-- them as unknown.
--
-- MODIFY COLUMN to the type a column already has changes nothing, so this statement
-- may run twice.

ALTER TABLE run_stops
    MODIFY COLUMN success Nullable(UInt8),
    MODIFY COLUMN final_score Nullable(Float64),
    MODIFY COLUMN total_tokens Nullable(UInt64),
    MODIFY COLUMN stability_variance Nullable(Float64),
    MODIFY COLUMN tests_passed Nullable(UInt32),
    MODIFY COLUMN tests_failed Nullable(UInt32);
