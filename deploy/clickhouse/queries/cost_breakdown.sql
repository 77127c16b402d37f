-- Cost breakdown per policy: LLM spend split into the agent's own calls, summariser
-- calls (agent = 'summarizer') and retries, with each part's share of the total.
--
-- A retry is a call whose answer was not used (status timeout, api_error or
-- parse_failure) and so had to be made again: its spend bought nothing. Costs are the
-- known ones; unpriced_calls counts calls whose price is unknown (cost_usd NULL, see
-- pricing_audit), which are left out of every sum.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
SELECT
    policy_id,
    count() AS calls,
    countIf(isNull(cost_usd)) AS unpriced_calls,
    round(sum(known_cost), 6) AS total_cost_usd,
    round(sumIf(known_cost, kind = 'agent'), 6) AS agent_cost_usd,
    round(sumIf(known_cost, kind = 'summariser'), 6) AS summariser_cost_usd,
    round(sumIf(known_cost, kind = 'retry'), 6) AS retry_cost_usd,
    round(sumIf(known_cost, kind = 'agent') / greatest(sum(known_cost), 1e-12), 4) AS agent_share,
    round(sumIf(known_cost, kind = 'summariser') / greatest(sum(known_cost), 1e-12), 4)
        AS summariser_share,
    round(sumIf(known_cost, kind = 'retry') / greatest(sum(known_cost), 1e-12), 4) AS retry_share
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
)
)
GROUP BY policy_id
ORDER BY policy_id
