-- Conflicts: messages that carried an already stored event_id with a different body.
-- First write wins: the stored original (the copy from the lowest stream sequence) is
-- what every query shows; the conflicting copy was refused and kept in dead_letters
-- (class conflict). One row per conflicting message, the stored original beside it:
-- a run_stop re-published with a flipped result shows up here, not in the leaderboard.
-- stored_* is NULL when the original is not in events_raw (e.g. it was refused itself).
SELECT
    event_id,
    run_id,
    type,
    stored_stream_seq,
    toString(stored_received_at, 'UTC') AS stored_received_utc,
    conflict_stream_seq,
    toString(conflict_received_at, 'UTC') AS conflict_received_utc,
    conflict_subject,
    stored_raw,
    conflict_raw
FROM
(
    SELECT assumeNotNull(event_id) AS event_id, stream_seq AS conflict_stream_seq,
        received_at AS conflict_received_at, subject AS conflict_subject, raw AS conflict_raw
    FROM dead_letters FINAL
    WHERE error_class = 'conflict' AND isNotNull(event_id)
) AS conflicting
ANY LEFT JOIN
(
    SELECT event_id, run_id, type, stream_seq AS stored_stream_seq,
        received_at AS stored_received_at, raw AS stored_raw
    FROM events_raw FINAL
    WHERE event_id IN
        (SELECT assumeNotNull(event_id) FROM dead_letters WHERE error_class = 'conflict')
) AS stored USING event_id
ORDER BY conflict_received_at, conflict_stream_seq
SETTINGS join_use_nulls = 1
