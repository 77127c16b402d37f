-- Every stored event of a run in seq order, each once (bench-analysis serve, a run's
-- page and the side-by-side view). Bound: the run id (a String, parsed by toUUID).
SELECT seq, type, raw
FROM events_raw FINAL
WHERE run_id = toUUID(?)
ORDER BY seq, event_id
