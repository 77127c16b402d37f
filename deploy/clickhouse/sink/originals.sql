-- The stored original of each event_id in a list: what the sink looks up once per batch
-- (in chunks) to apply first write wins. The original is the copy from the lowest stream
-- sequence, as in the ReplacingMergeTree version of the event tables. The one
-- placeholder is bound by the sink to an array of event_id strings (so this comment
-- must not contain a question mark).
SELECT
    event_id,
    argMin(body_hash, stream_seq) AS original_hash,
    min(stream_seq) AS original_seq
FROM event_ids
WHERE event_id IN (SELECT toUUID(arrayJoin(?)))
GROUP BY event_id
