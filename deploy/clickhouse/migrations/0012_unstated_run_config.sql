-- Run settings and run wall times nobody stated are NULL, never a made-up 0, `raw` or
-- `main`. `run_stops.wall_time_ms` becomes Nullable: NULL for an imported trajectory,
-- which records the time of each command but not of the whole run. The columns of
-- `run_starts` for `max_iterations`, `temperature`, `context_window`, `tool_timeout_ms`,
-- `docker_image` and `sandbox_limits.memory_mb` become Nullable (`strategy` already is,
-- since 0006). They are NULL for a run this runner did not configure (an imported
-- trajectory, a run received as a trace) that does not state them; a scenario states
-- every one.
--
-- Rows written before this migration keep their values, which this migration does not
-- rewrite: there, the `wall_time_ms` of an imported run summed its commands' times
-- only, and the 0 of the run_starts columns (`docker_image` the trajectory's environment
-- name or `otlp:<service>`, `strategy` `raw`) of an imported or traced run
-- (`scenario_name` `swe-agent` or `otlp`) meant "not stated"; read it as unknown.
--
-- MODIFY COLUMN to the type a column already has changes nothing, so this statement
-- may run twice.

ALTER TABLE run_starts
    MODIFY COLUMN max_iterations Nullable(UInt32),
    MODIFY COLUMN temperature Nullable(Float64),
    MODIFY COLUMN context_window Nullable(UInt32),
    MODIFY COLUMN tool_timeout_ms Nullable(UInt64),
    MODIFY COLUMN docker_image Nullable(String),
    MODIFY COLUMN sandbox_memory_mb Nullable(UInt64);

ALTER TABLE run_stops MODIFY COLUMN wall_time_ms Nullable(UInt64);
