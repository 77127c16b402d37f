-- Lost-event check: runs with a gap in their seq numbers (seq starts at 0 with
-- run_start and grows by 1 per event, so a gap is a lost event), and runs without a
-- run_stop whose last event is more than stale_minutes old (the runner died or its
-- run_stop was lost). Reads events_raw, which holds every accepted event once (FINAL).
-- A sweep optimizer's stream (only optimizer_update events) and a task validation's
-- (one task_validation event) and an experiment's decision (one experiment_decision
-- event), which have no run_start/run_stop by design, are checked
-- for gaps but never reported as a run without run_stop. Runs whose
-- events carry no seq (seq NULL: the Smith protocol has none, and runs received as
-- OpenTelemetry traces cannot be numbered in advance) cannot be checked for gaps: their
-- last_seq and missing are NULL (unknown, not 0), and they are only checked for a
-- missing run_stop.
--
-- gaps lists the missing seqs as ranges ('3', '7-9'); missing = how many.
-- param stale_minutes UInt32 = '30': minutes without an event before an unstopped run counts as lost
SELECT
    run_id,
    policy_id,
    events,
    if(sequenced = 0, NULL, max_seq) AS last_seq,
    if(sequenced = 0, NULL, toUInt64(max_seq + 1 - distinct_seqs)) AS missing,
    arrayMap((before, after) -> if(after - before = 2, toString(before + 1),
            concat(toString(before + 1), '-', toString(after - 1))),
        arrayFilter((before, after) -> after - before > 1, arrayPopBack(seqs), arrayPopFront(seqs)),
        arrayFilter((after, before) -> after - before > 1, arrayPopFront(seqs), arrayPopBack(seqs)))
        AS gaps,
    has_run_stop,
    toString(last_ts, 'UTC') AS last_event_utc,
    arrayStringConcat(arrayFilter(p -> p != '',
        [if(ifNull(missing, 0) > 0, 'seq_gap', ''), if(stale = 1, 'no_run_stop', '')]), ',') AS problem
FROM
(
    SELECT
        run_id,
        any(policy_id) AS policy_id,
        count() AS events,
        countIf(isNotNull(seq)) AS sequenced,
        maxIf(assumeNotNull(seq), isNotNull(seq)) AS max_seq,
        uniqExactIf(assumeNotNull(seq), isNotNull(seq)) AS distinct_seqs,
        -- Sorted distinct seqs after a -1 sentinel, so a missing seq 0 is a gap too.
        arrayConcat([toInt64(-1)], arrayMap(s -> toInt64(s),
            arraySort(groupUniqArrayIf(assumeNotNull(seq), isNotNull(seq))))) AS seqs,
        max(type = 'run_stop') AS has_run_stop,
        max(ts) AS last_ts,
        max(type NOT IN ('optimizer_update', 'task_validation', 'experiment_decision')) AS is_run,
        toUInt8(is_run = 1 AND has_run_stop = 0
            AND last_ts < now() - {stale_minutes:UInt32} * 60) AS stale
    FROM events_raw FINAL
    -- FINAL over the runs with a problem only: the tests of a gap and of a stale run
    -- give the same answer over the copies of an event as over one (maxima, distinct
    -- seqs), so they pick the runs without FINAL, the key (run_id first) reads just
    -- those, and their events are counted once. GLOBAL: the picking runs once (18.16
    -- runs a plain IN's subquery again for each SELECT around it) and, on a cluster,
    -- over every shard's events.
    WHERE run_id GLOBAL IN
    (
        SELECT run_id
        FROM events_raw
        GROUP BY run_id
        HAVING (countIf(isNotNull(seq)) > 0
                AND maxIf(assumeNotNull(seq), isNotNull(seq)) + 1
                    - uniqExactIf(assumeNotNull(seq), isNotNull(seq)) > 0)
            OR (max(type NOT IN ('optimizer_update', 'task_validation', 'experiment_decision')) = 1
                AND max(type = 'run_stop') = 0
                AND max(ts) < now() - {stale_minutes:UInt32} * 60)
    )
    GROUP BY run_id
)
WHERE ifNull(missing, 0) > 0 OR stale = 1
ORDER BY toString(run_id)
