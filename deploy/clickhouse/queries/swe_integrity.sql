-- Judged runs of SWE-bench-format tasks per policy, with and without the runs their
-- integrity flags single out (`run_stops.test_files_edited`, `history_commands`,
-- `network_commands`: the agent changed the tests' files, read git history or tried the
-- network while it was off). A flag nobody could establish (NULL: an `exec` agent's
-- commands) does not flag a run. `resolve_rate` is over every judged run,
-- `clean_resolve_rate` over the unflagged ones (NULL when none is left). Mean
-- `gold_similarity` of the final diffs to the gold patches, over the runs that have one.
-- Dedup: read with FINAL.
-- param policy String = '': only this policy_id; empty = every policy
SELECT
    policy_id,
    count() AS runs,
    countIf(resolved_run = 1) AS resolved,
    round(resolved / runs, 4) AS resolve_rate,
    countIf(flagged = 1) AS flagged_runs,
    countIf(flagged = 0) AS clean_runs,
    countIf(flagged = 0 AND resolved_run = 1) AS clean_resolved,
    if(clean_runs = 0, NULL, round(clean_resolved / clean_runs, 4)) AS clean_resolve_rate,
    if(countIf(isNotNull(similarity)) = 0, NULL,
        round(sumIf(assumeNotNull(similarity), isNotNull(similarity))
            / countIf(isNotNull(similarity)), 4)) AS avg_gold_similarity
FROM
(
    SELECT
        policy_id,
        toUInt8(assumeNotNull(success) = 1) AS resolved_run,
        toUInt8(assumeNotNull(test_files_edited) > 0
            OR ifNull(history_commands, 0) > 0
            OR ifNull(network_commands, 0) > 0) AS flagged,
        gold_similarity AS similarity
    FROM run_stops FINAL
    WHERE isNotNull(test_files_edited) AND isNotNull(success)
        AND ({policy:String} = '' OR policy_id = {policy:String})
)
GROUP BY policy_id
ORDER BY policy_id
