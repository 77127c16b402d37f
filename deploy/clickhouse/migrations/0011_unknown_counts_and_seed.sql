-- Counts and seeds nobody stated are NULL, never a made-up 0:
--
-- - run_stops.tool_errors and run_stops.files_modified become Nullable (api_calls
--   already is, since 0006): NULL when the producer did not count tool errors, did not
--   compare the task's files, or did not count model calls (a run received as a trace,
--   an imported trajectory, an `exec` agent's run);
-- - `seed` of every event table becomes Nullable: NULL when the producer states no seed
--   (an imported trajectory, a run received as a trace).
--
-- Rows written before this migration keep their values, which this migration does not
-- rewrite: there, a 0 in these columns of an imported or traced run (`scenario_name`
-- `swe-agent` or `otlp`) meant "not stated"; a 0 of a native run is a real 0.
--
-- MODIFY COLUMN to the type a column already has changes nothing, so these statements
-- may run twice.

ALTER TABLE run_starts MODIFY COLUMN seed Nullable(UInt64);

ALTER TABLE run_stops
    MODIFY COLUMN seed Nullable(UInt64),
    MODIFY COLUMN tool_errors Nullable(UInt32),
    MODIFY COLUMN files_modified Nullable(UInt32);

ALTER TABLE steps MODIFY COLUMN seed Nullable(UInt64);

ALTER TABLE tool_calls MODIFY COLUMN seed Nullable(UInt64);

ALTER TABLE deliberations MODIFY COLUMN seed Nullable(UInt64);

ALTER TABLE context_decisions MODIFY COLUMN seed Nullable(UInt64);

ALTER TABLE failures MODIFY COLUMN seed Nullable(UInt64);

ALTER TABLE optimizer_updates MODIFY COLUMN seed Nullable(UInt64);
