-- The dead letters `event-sink dead-letters replay` considers, oldest message first: those
-- of one stream, of one error class (or every class when the class is empty), received
-- at or after a time (epoch seconds). The raw bytes come hex-encoded, so that a body that
-- is not UTF-8 travels intact. The four placeholders are bound by the sink in that order:
-- stream, class, class again, since (so this comment must not contain a question mark).
SELECT
    stream_seq,
    subject,
    headers,
    hex(raw) AS raw_hex,
    error_class
FROM dead_letters FINAL
WHERE stream = ?
  AND (? = '' OR error_class = ?)
  AND received_at >= toDateTime(?)
ORDER BY stream_seq
