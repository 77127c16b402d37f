-- LLM call latency distribution per policy and model: calls and timed-out calls per
-- latency bucket. Buckets double from 250 ms; bucket 10 is 64 s and above (upper_ms
-- NULL). Empty buckets are omitted. Calls whose producer did not time them (latency_ms
-- NULL) are in no bucket.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
-- param experiment String = '': only runs of these experiments, comma-separated; empty = every run
-- param sweep String = '': only runs of these sweeps, comma-separated; empty = every run
-- param scenario String = '': only runs of these scenarios (names), comma-separated; empty = every scenario
SELECT
    policy_id,
    model,
    bucket,
    toUInt32(if(bucket = 1, 0, 250 * exp2(bucket - 2))) AS lower_ms,
    if(bucket = 10, NULL, toUInt32(250 * exp2(bucket - 1))) AS upper_ms,
    count() AS calls,
    countIf(status = 'timeout') AS timeouts
FROM
(
    -- floor(log2(latency / 250)) + 2 is the bucket for 250 ms and above; exact at the
    -- bounds, which are powers of two times 250.
    SELECT policy_id, model, status,
        toUInt8(least(10, greatest(1, floor(log2(assumeNotNull(latency_ms) / 250)) + 2)))
            AS bucket
    FROM deliberations FINAL
    WHERE isNotNull(latency_ms) AND run_id IN (
        -- The runs selected by the time range and policy filter.
        SELECT run_id FROM run_starts FINAL
        WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
            AND ({policy:String} = '' OR policy_id = {policy:String})
            AND ({experiment:String} = '' OR has(splitByChar(',', {experiment:String}), ifNull(experiment, '')))
            AND ({sweep:String} = '' OR has(splitByChar(',', {sweep:String}), ifNull(sweep_name, '')))
            AND ({scenario:String} = '' OR has(splitByChar(',', {scenario:String}), ifNull(scenario_name, '')))
    )
)
GROUP BY policy_id, model, bucket
ORDER BY policy_id, model, bucket
