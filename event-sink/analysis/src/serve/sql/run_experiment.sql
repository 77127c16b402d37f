-- The experiment of a run, from its run_start (bench-analysis serve, filtering live
-- events by experiment). Bound: the run id (a String, parsed by toUUID).
SELECT experiment
FROM run_starts FINAL
WHERE run_id = toUUID(?)
LIMIT 1
