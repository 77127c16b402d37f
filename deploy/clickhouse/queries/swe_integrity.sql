-- Judged runs of SWE-bench-format tasks per policy, with and without the runs their
-- integrity flags single out (`run_stops.test_files_edited`, `history_commands`,
-- `network_commands`: the agent changed the tests' files, read git history or tried the
-- network while it was off). A run is flagged when a flag it has says so; otherwise it
-- is unknown when a flag could not be established (history_commands NULL: the runner did
-- not see the agent's commands, as for an `exec` agent's, which leaves network_commands
-- unknown too), and clean only when every flag is known (network_commands alone is NULL
-- when the network was on, where trying it is no flag). An unknown run is never counted
-- as clean: `unknown_runs` says how many there are. `resolve_rate` is over every judged
-- run, `clean_resolve_rate` over the clean ones (NULL when none is). Mean
-- `gold_similarity` of the final diffs to the gold patches, over the runs that have one.
-- Dedup: read with FINAL.
-- param policy String = '': only this policy_id; empty = every policy
SELECT
    policy_id,
    count() AS runs,
    countIf(resolved_run = 1) AS resolved,
    round(resolved / runs, 4) AS resolve_rate,
    countIf(integrity = 'flagged') AS flagged_runs,
    countIf(integrity = 'unknown') AS unknown_runs,
    countIf(integrity = 'clean') AS clean_runs,
    countIf(integrity = 'clean' AND resolved_run = 1) AS clean_resolved,
    if(clean_runs = 0, NULL, round(clean_resolved / clean_runs, 4)) AS clean_resolve_rate,
    if(countIf(isNotNull(similarity)) = 0, NULL,
        round(sumIf(assumeNotNull(similarity), isNotNull(similarity))
            / countIf(isNotNull(similarity)), 4)) AS avg_gold_similarity
FROM
(
    SELECT
        policy_id,
        toUInt8(assumeNotNull(success) = 1) AS resolved_run,
        multiIf(assumeNotNull(test_files_edited) > 0
                OR ifNull(history_commands, 0) > 0
                OR ifNull(network_commands, 0) > 0, 'flagged',
            isNull(history_commands), 'unknown',
            'clean') AS integrity,
        gold_similarity AS similarity
    FROM run_stops FINAL
    WHERE isNotNull(test_files_edited) AND isNotNull(success)
        AND ({policy:String} = '' OR policy_id = {policy:String})
)
GROUP BY policy_id
ORDER BY policy_id
