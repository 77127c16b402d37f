-- Cost breakdown per policy: LLM spend split into the agent's own calls, summariser
-- calls (agent = 'summarizer') and retries, with each part's share of the total.
--
-- A retry is a call whose answer was not used (status timeout, api_error or
-- parse_failure) and so had to be made again: its spend bought nothing. unpriced_calls
-- counts the calls whose cost is unknown (cost_usd NULL: no price, or no tokens reported,
-- as for a call that got no answer; see pricing_audit). A part with such a call has an
-- unknown cost (NULL), never the smaller sum of its known calls, and so has the total;
-- a part without calls cost 0. A share is NULL when its part or the total is unknown,
-- or the total is 0.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
-- param experiment String = '': only runs of these experiments, comma-separated; empty = every run
-- param sweep String = '': only runs of these sweeps, comma-separated; empty = every run
-- param scenario String = '': only runs of these scenarios (names), comma-separated; empty = every scenario
SELECT
    policy_id,
    count() AS calls,
    countIf(isNull(cost_usd)) AS unpriced_calls,
    if(unpriced_calls > 0, NULL, round(sum(known_cost), 6)) AS total_cost_usd,
    if(countIf(kind = 'agent' AND isNull(cost_usd)) > 0, NULL,
        round(sumIf(known_cost, kind = 'agent'), 6)) AS agent_cost_usd,
    if(countIf(kind = 'summariser' AND isNull(cost_usd)) > 0, NULL,
        round(sumIf(known_cost, kind = 'summariser'), 6)) AS summariser_cost_usd,
    if(countIf(kind = 'retry' AND isNull(cost_usd)) > 0, NULL,
        round(sumIf(known_cost, kind = 'retry'), 6)) AS retry_cost_usd,
    if(isNull(agent_cost_usd) OR ifNull(total_cost_usd, 0) = 0, NULL,
        round(assumeNotNull(agent_cost_usd) / assumeNotNull(total_cost_usd), 4)) AS agent_share,
    if(isNull(summariser_cost_usd) OR ifNull(total_cost_usd, 0) = 0, NULL,
        round(assumeNotNull(summariser_cost_usd) / assumeNotNull(total_cost_usd), 4))
        AS summariser_share,
    if(isNull(retry_cost_usd) OR ifNull(total_cost_usd, 0) = 0, NULL,
        round(assumeNotNull(retry_cost_usd) / assumeNotNull(total_cost_usd), 4)) AS retry_share
FROM
(
    SELECT
        policy_id,
        cost_usd,
        ifNull(cost_usd, 0) AS known_cost,
        multiIf(agent = 'summarizer', 'summariser', status != 'ok', 'retry', 'agent') AS kind
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
)
GROUP BY policy_id
ORDER BY policy_id
