-- Per-run timeline: every event of one run in seq order, with what it was (detail),
-- its tokens, cost and latency. t_ms is milliseconds since the run's first event.
-- A seq missing from the list is a lost event (see lost_events).
--
-- tokens/cost/latency by type: deliberation = the LLM call (tokens NULL when unknown,
-- cost NULL when the price or the tokens are unknown); step = tokens_in/out and wall time; tool_call = latency; run_stop = total
-- tokens (NULL when unknown), run cost (NULL when unknown) and wall time; its detail
-- says `unjudged` when nobody judged the run's submission. Other types have only a detail. A fact the producer
-- did not send (model, strategy, exit_status of Smith protocol events) reads `unknown`.
-- (The run_stop detail tests a Nullable success with if() and assumeNotNull(): 18.16
-- fails this join, asking for 128 TiB, when multiIf() compares the Nullable column.)
-- param run_id UUID: the run to show
SELECT
    seq,
    type,
    ts_ms - (SELECT min(ts_ms) FROM events_raw FINAL WHERE run_id = {run_id:UUID}) AS t_ms,
    detail,
    tokens_in,
    tokens_out,
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
    SELECT event_id, concat(ifNull(model, 'unknown'), ' ', ifNull(strategy, 'unknown')) AS detail, toUInt64(0) AS tokens_in,
        toUInt64(0) AS tokens_out, CAST(NULL AS Nullable(Float64)) AS cost_usd,
        toUInt64(0) AS latency_ms
    FROM run_starts FINAL WHERE run_id = {run_id:UUID}
    UNION ALL
    SELECT event_id, concat(agent, ' ', model, ' ', status), input_tokens, output_tokens,
        cost_usd, latency_ms
    FROM deliberations FINAL WHERE run_id = {run_id:UUID}
    UNION ALL
    SELECT event_id, concat(tool_name, ' ', exit_kind), toUInt64(0), toUInt64(0),
        CAST(NULL AS Nullable(Float64)), latency_ms
    FROM tool_calls FINAL WHERE run_id = {run_id:UUID}
    UNION ALL
    SELECT event_id, step_type, tokens_in, tokens_out, CAST(NULL AS Nullable(Float64)),
        wall_time_ms
    FROM steps FINAL WHERE run_id = {run_id:UUID}
    UNION ALL
    SELECT event_id, concat(if(kept = 1, 'kept ', 'pruned '), segment_type), toUInt64(0),
        toUInt64(0), CAST(NULL AS Nullable(Float64)), toUInt64(0)
    FROM context_decisions FINAL WHERE run_id = {run_id:UUID}
    UNION ALL
    SELECT event_id, concat(root_kind, ' ', error_category), toUInt64(0), toUInt64(0),
        CAST(NULL AS Nullable(Float64)), toUInt64(0)
    FROM failures FINAL WHERE run_id = {run_id:UUID}
    UNION ALL
    SELECT event_id, concat(ifNull(exit_status, 'unknown'),
        if(isNull(success), ' unjudged', if(assumeNotNull(success) = 1, ' success', ' failure'))),
        total_tokens, toUInt64(0), cost_usd, wall_time_ms
    FROM run_stops FINAL WHERE run_id = {run_id:UUID}
) AS details USING event_id
ORDER BY seq, toString(event_id)
