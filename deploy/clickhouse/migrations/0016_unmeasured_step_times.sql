-- A step's wall time and context size nobody measured are NULL, never a made-up 0:
-- `steps.wall_time_ms` and `steps.context_kb` become Nullable. `wall_time_ms` is NULL for
-- a step not timed separately (a `reason` or `act` step, whose time is its model or tool
-- call's), `context_kb` for a step that sent nothing to a model (`observe`, `conclude`)
-- and for a run received as a trace.
--
-- Rows written before this migration keep their values, which this migration does not
-- rewrite: there, a 0 of either meant "not measured"; read it as unknown.
--
-- MODIFY COLUMN to the type a column already has changes nothing, so this statement
-- may run twice.

ALTER TABLE steps
    MODIFY COLUMN wall_time_ms Nullable(UInt64),
    MODIFY COLUMN context_kb Nullable(Float64);
