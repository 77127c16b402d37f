-- Per-run timeline, "why did run X stop?": every event of one run in seq order, with what
-- it was (detail), what it said (message), its tokens, cost and latency. t_ms is
-- milliseconds since the run's first event. A seq missing from the list is a lost event
-- (see lost_events).
--
-- Every number is the event's own and measured, or NULL: NULL where the event type has
-- no such number, and where its producer did not measure it.
-- - deliberation: the LLM call's tokens (NULL when unknown), cost (NULL when the price or
--   the tokens are unknown), latency; message = its error.
-- - step: tokens of the model calls the step made (NULL when it made none or they are
--   unknown), wall time (NULL when not measured: stored as 0).
-- - tool_call: latency; message = its exit message.
-- - failure: message = its first_failure_root (JSON text: the root kind and what failed,
--   e.g. the provider's last error).
-- - run_stop: total_tokens (NULL when unknown), run cost (NULL when unknown), wall time;
--   message = early_stop_reason (e.g. "3 model calls in a row failed; last: no answer
--   within 1500 ms"), NULL for a submission; its detail says `unjudged` when nobody
--   judged the run (a submission nobody judged, or an infrastructure failure).
-- - run_start, context_decision: a detail only. A fact the producer did not send (model,
--   strategy, exit_status of Smith protocol events) reads `unknown`.
-- (The run_stop detail tests a Nullable success with if() and assumeNotNull(): 18.16
-- fails this join, asking for 128 TiB, when multiIf() compares the Nullable column.)
-- param run_id UUID: the run to show
SELECT
    seq,
    type,
    ts_ms - (SELECT min(ts_ms) FROM events_raw FINAL WHERE run_id = {run_id:UUID}) AS t_ms,
    detail,
    message,
    tokens_in,
    tokens_out,
    total_tokens,
    cost_usd,
    latency_ms,
    event_id
FROM
(
    SELECT event_id, seq, type, ts_ms
    FROM events_raw FINAL
    WHERE run_id = {run_id:UUID}
) AS run_events
ANY LEFT JOIN
(
    SELECT event_id, concat(ifNull(model, 'unknown'), ' ', ifNull(strategy, 'unknown')) AS detail,
        CAST(NULL AS Nullable(String)) AS message,
        CAST(NULL AS Nullable(UInt64)) AS tokens_in, CAST(NULL AS Nullable(UInt64)) AS tokens_out,
        CAST(NULL AS Nullable(UInt64)) AS total_tokens, CAST(NULL AS Nullable(Float64)) AS cost_usd,
        CAST(NULL AS Nullable(UInt64)) AS latency_ms
    FROM run_starts FINAL WHERE run_id = {run_id:UUID}
    UNION ALL
    SELECT event_id, concat(agent, ' ', model, ' ', status), CAST(error AS Nullable(String)),
        CAST(input_tokens AS Nullable(UInt64)), CAST(output_tokens AS Nullable(UInt64)),
        CAST(NULL AS Nullable(UInt64)), CAST(cost_usd AS Nullable(Float64)),
        CAST(latency_ms AS Nullable(UInt64))
    FROM deliberations FINAL WHERE run_id = {run_id:UUID}
    UNION ALL
    SELECT event_id, concat(tool_name, ' ', exit_kind), CAST(exit_message AS Nullable(String)),
        CAST(NULL AS Nullable(UInt64)), CAST(NULL AS Nullable(UInt64)),
        CAST(NULL AS Nullable(UInt64)), CAST(NULL AS Nullable(Float64)),
        CAST(latency_ms AS Nullable(UInt64))
    FROM tool_calls FINAL WHERE run_id = {run_id:UUID}
    UNION ALL
    SELECT event_id, step_type, CAST(NULL AS Nullable(String)),
        CAST(tokens_in AS Nullable(UInt64)), CAST(tokens_out AS Nullable(UInt64)),
        CAST(NULL AS Nullable(UInt64)), CAST(NULL AS Nullable(Float64)),
        -- 0 in rows written before migration 0016 meant "not measured".
        CAST(nullIf(wall_time_ms, 0) AS Nullable(UInt64))
    FROM steps FINAL WHERE run_id = {run_id:UUID}
    UNION ALL
    SELECT event_id, concat(if(kept = 1, 'kept ', 'pruned '), segment_type),
        CAST(NULL AS Nullable(String)),
        CAST(NULL AS Nullable(UInt64)), CAST(NULL AS Nullable(UInt64)),
        CAST(NULL AS Nullable(UInt64)), CAST(NULL AS Nullable(Float64)),
        CAST(NULL AS Nullable(UInt64))
    FROM context_decisions FINAL WHERE run_id = {run_id:UUID}
    UNION ALL
    SELECT event_id, concat(root_kind, ' ', error_category),
        CAST(first_failure_root AS Nullable(String)),
        CAST(NULL AS Nullable(UInt64)), CAST(NULL AS Nullable(UInt64)),
        CAST(NULL AS Nullable(UInt64)), CAST(NULL AS Nullable(Float64)),
        CAST(NULL AS Nullable(UInt64))
    FROM failures FINAL WHERE run_id = {run_id:UUID}
    UNION ALL
    SELECT event_id, concat(ifNull(exit_status, 'unknown'),
        if(isNull(success), ' unjudged', if(assumeNotNull(success) = 1, ' success', ' failure'))),
        CAST(early_stop_reason AS Nullable(String)),
        CAST(NULL AS Nullable(UInt64)), CAST(NULL AS Nullable(UInt64)),
        CAST(total_tokens AS Nullable(UInt64)), CAST(cost_usd AS Nullable(Float64)),
        CAST(wall_time_ms AS Nullable(UInt64))
    FROM run_stops FINAL WHERE run_id = {run_id:UUID}
) AS details USING event_id
ORDER BY seq, toString(event_id)
