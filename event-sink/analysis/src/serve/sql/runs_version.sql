-- How far the runs of an experiment have come, in one cheap read (bench-analysis serve
-- keeps an experiment's comparison until this changes): its runs started, its runs
-- finished, the latest time the sink received a run_stop of them, and the latest task
-- validation of any task (a task found broken excludes its runs). Without FINAL: a copy
-- of an event delivered twice counts until merged, which can only change the answer, so
-- a comparison is computed again, never kept too long.
-- Bound in order: the experiment's name four times ('' = every run).
-- One JOIN per SELECT (18.16): the runs, then the validations.
SELECT started, finished, last_stop, last_validation
FROM
(
    SELECT started, finished, last_stop
    FROM
    (
        SELECT count() AS started
        FROM run_starts
        WHERE ? = '' OR ifNull(experiment, '') = ?
    ) AS started_runs
    CROSS JOIN
    (
        SELECT count() AS finished, toUInt32(max(received_at)) AS last_stop
        FROM run_stops
        WHERE run_id IN
        (
            SELECT run_id FROM run_starts WHERE ? = '' OR ifNull(experiment, '') = ?
        )
    ) AS finished_runs
) AS runs
CROSS JOIN
(
    SELECT toUInt32(max(received_at)) AS last_validation FROM task_validations
) AS validations
