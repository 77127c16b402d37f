-- Messages the sink could not accept: undecodable or invalid events (see
-- `schemas::DecodeError`) and rows ClickHouse itself rejected. One row per message; the
-- message is terminated in JetStream afterwards, so this is the only copy.
--
-- Keyed by (stream, stream_seq): a dead letter redelivered before its termination
-- reached the server folds into one row under `FINAL`.
CREATE TABLE IF NOT EXISTS dead_letters
(
    received_at DateTime,
    -- JetStream stream name and sequence of the message.
    stream      String,
    stream_seq  UInt64,
    subject     String,
    -- Message headers, one `Name: value` per line.
    headers     String,
    -- The message body byte for byte (may be invalid UTF-8).
    raw         String,
    -- Short stable class: `oversize`, `invalid_utf8`, `malformed_json`,
    -- `not_an_object`, `unknown_version`, `unknown_type`, `invalid_field`,
    -- `rejected_by_clickhouse`.
    error_class String,
    -- Human-readable reason, naming the offending field where known.
    error       String,
    -- How many times JetStream had delivered the message.
    delivered   UInt64
)
ENGINE = ReplacingMergeTree(received_at)
PARTITION BY toYYYYMM(received_at)
ORDER BY (stream, stream_seq);
