-- A call's time and retries nobody measured are NULL, never a made-up 0:
-- `tool_calls.latency_ms`, `tool_calls.retries`, `deliberations.latency_ms` and
-- `deliberations.retries` become Nullable. They are NULL where the producer did not
-- measure them: an imported trajectory step without an execution time (latency) and
-- every imported tool call (retries), a call received as a trace (retries: a span does not
-- say how often it was tried), an `exec` agent that sends neither.
--
-- Rows written before this migration keep their values, which this migration does not
-- rewrite: there, a 0 in a row of an imported, traced or `exec` run may mean "not
-- measured"; read it as unknown. Native and Smith rows measured both.
--
-- MODIFY COLUMN to the type a column already has changes nothing, so these statements
-- may run twice.

ALTER TABLE tool_calls
    MODIFY COLUMN latency_ms Nullable(UInt64),
    MODIFY COLUMN retries Nullable(UInt32);

ALTER TABLE deliberations
    MODIFY COLUMN latency_ms Nullable(UInt64),
    MODIFY COLUMN retries Nullable(UInt32);
