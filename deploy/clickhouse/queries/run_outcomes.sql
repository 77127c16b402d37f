-- Run outcomes: one row per counted run (the runs `paired_outcomes` counts: finished,
-- judged, task not broken, no lost event, no infrastructure failure; see
-- paired_outcomes.sql for the rules, which this query applies in the same order and
-- which must change in both files together), with its task, policy config and start
-- time, in start order per task and policy; what `bench-analysis compare --sequential`
-- builds its rounds from (a task's k-th run of a policy, by `repeat` when set, otherwise
-- by start time, is round k).
-- repeat = which repeat of its task the run is, from 0 (`run --repeats`, the rounds of
-- `run --until-decided`); NULL when the producer did not repeat.
-- solved = 1 when the judge said solved, else 0.
-- started_ms = the run_start's time, Unix milliseconds.
-- Dedup: every table is read with FINAL. 18.16 allows one JOIN per SELECT, hence the
-- nesting.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
-- param scenario String = '': only runs of these scenarios (names), comma-separated; empty = every scenario
-- param experiment String = '': only runs of these experiments, comma-separated; empty = every run
-- param sweep String = '': only runs of these sweeps, comma-separated; empty = every run
-- param tasks String = '': only these task_ids, comma-separated; empty = every task
SELECT task_id, policy_id, cfg_hash, model, strategy, scoring_version, experiment, tags,
    repeat, started_ms, run_id, solved
FROM
(
    SELECT run_id, task_id, policy_id, cfg_hash, model, strategy, scoring_version, experiment,
        tags, repeat, started_ms,
        -- assumeNotNull only after the isNull test: 18.16 gives NULL for a comparison
        -- with a Nullable column.
        toUInt8(isNotNull(succeeded) AND assumeNotNull(succeeded) = 1) AS solved,
        multiIf(task_broken = 1, 'broken_task',
            stopped = 0, 'unfinished',
            missing > 0, 'lost_events',
            status IN ('exit_environment', 'exit_api'), 'infrastructure',
            isNull(succeeded), 'unjudged',
            '') AS excluded
    FROM
    (
        SELECT run_id, task_id, policy_id, cfg_hash, model, strategy, scoring_version,
            experiment, tags, repeat, started_ms, stopped, succeeded, status, missing,
            task_broken
        FROM
        (
            SELECT run_id, task_id, fixture_key, policy_id, cfg_hash, model, strategy,
                scoring_version, experiment, tags, repeat, started_ms, stopped, succeeded,
                status, missing
            FROM
            (
                SELECT run_id, task_id, fixture_key, policy_id, cfg_hash, model, strategy,
                    scoring_version, experiment, tags, repeat, started_ms, stopped, succeeded,
                    status
                FROM
                (
                    SELECT run_id, task_id, ifNull(fixture_sha256, '') AS fixture_key,
                        policy_id, cfg_hash, model, strategy, scoring_version, experiment,
                        arrayStringConcat(arrayMap((k, v) -> concat(k, '=', v), tag_keys,
                            tag_values), '\n') AS tags,
                        repeat, ts_ms AS started_ms
                    FROM run_starts FINAL
                    WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
                        AND ({policy:String} = '' OR policy_id = {policy:String})
                        AND ({scenario:String} = '' OR has(splitByChar(',', {scenario:String}), ifNull(scenario_name, '')))
                        AND ({experiment:String} = '' OR has(splitByChar(',', {experiment:String}), ifNull(experiment, '')))
                        AND ({sweep:String} = '' OR has(splitByChar(',', {sweep:String}), ifNull(sweep_name, '')))
                        AND ({tasks:String} = '' OR has(splitByChar(',', {tasks:String}), task_id))
                ) AS started
                ANY LEFT JOIN
                (
                    SELECT run_id, toUInt8(1) AS stopped, success AS succeeded,
                        ifNull(exit_status, '') AS status
                    FROM run_stops FINAL
                ) AS stopped_runs USING run_id
            ) AS run_results
            ANY LEFT JOIN
            (
                -- The seq-gap test of lost_events: seq starts at 0 and grows by 1 per event,
                -- so fewer distinct seqs than max + 1 is a lost event; runs without seq
                -- (Smith) have none. Read without FINAL: the maximum and the distinct
                -- seqs are the same over the copies of an event as over one, and FINAL
                -- over every event is most of the query's time.
                SELECT run_id,
                    toUInt64(if(countIf(isNotNull(seq)) = 0, 0,
                        maxIf(assumeNotNull(seq), isNotNull(seq)) + 1
                            - uniqExactIf(assumeNotNull(seq), isNotNull(seq)))) AS missing
                FROM events_raw
                GROUP BY run_id
            ) AS sequences USING run_id
        ) AS sequenced_runs
        ANY LEFT JOIN
        (
            -- The latest validation of each task and fixture (a run of a task never
            -- validated joins no row: 0, not broken). Picked by time rather than by
            -- FINAL: on a cluster two validations of a task can sit on different shards,
            -- which FINAL does not fold together. Only validations `tasks validate`
            -- published count: its mark is policy_id 'validation' on a run_id that has no
            -- run_start (a validation is no run), which no event of a run can carry.
            SELECT task_id, fixture_sha256 AS fixture_key, argMax(broken, ts_ms) AS task_broken
            FROM task_validations
            WHERE policy_id = 'validation' AND run_id NOT IN (SELECT run_id FROM run_starts)
            GROUP BY task_id, fixture_key
        ) AS validations USING task_id, fixture_key
    ) AS checked_runs
) AS classified_runs
WHERE excluded = ''
ORDER BY task_id, policy_id, cfg_hash, started_ms, run_id
