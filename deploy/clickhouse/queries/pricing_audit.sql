-- Pricing-source audit: every LLM call whose cost is unknown (cost_usd NULL or
-- pricing_source 'unknown'), so that prices can be added (or overridden) for them. A
-- call that got no completion (status timeout, api_error, parse_failure), or whose
-- reply reported no usage, is listed with its model's prices when they are known and
-- NULL tokens: its tokens, not its price, are unknown.
-- Runs holding one have a NULL run cost and are left out of cost averages.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
-- param experiment String = '': only runs of these experiments, comma-separated; empty = every run
-- param sweep String = '': only runs of these sweeps, comma-separated; empty = every run
-- param scenario String = '': only runs of these scenarios (names), comma-separated; empty = every scenario
SELECT
    run_id,
    seq,
    event_id,
    policy_id,
    provider,
    model,
    agent,
    pricing_source,
    input_tokens,
    output_tokens,
    prompt_price_per_mtok,
    completion_price_per_mtok,
    toString(ts, 'UTC') AS ts_utc
FROM deliberations FINAL
WHERE run_id IN (
    -- The runs selected by the time range and policy filter.
    SELECT run_id FROM run_starts FINAL
    WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
        AND ({policy:String} = '' OR policy_id = {policy:String})
        AND ({experiment:String} = '' OR has(splitByChar(',', {experiment:String}), ifNull(experiment, '')))
        AND ({sweep:String} = '' OR has(splitByChar(',', {sweep:String}), ifNull(sweep_name, '')))
        AND ({scenario:String} = '' OR has(splitByChar(',', {scenario:String}), ifNull(scenario_name, '')))
)
    AND (isNull(cost_usd) OR pricing_source = 'unknown')
ORDER BY toString(run_id), seq
