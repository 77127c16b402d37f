-- Every accepted event, exactly as received: `raw` holds the message body byte for
-- byte (extra fields a newer producer added included), plus where it came from.
--
-- Dedup: a redelivered or replayed event has the same (run_id, seq, event_id), so
-- ReplacingMergeTree folds its copies into one row; read with `FINAL` to count each
-- event once before merges have run. `received_at` is the version: the latest copy wins
-- (copies are identical apart from `subject`/`stream_seq`/`received_at`).
CREATE TABLE IF NOT EXISTS events_raw
(
    event_id    UUID,
    run_id      UUID,
    task_id     String,
    -- The event type (`run_start`, `step`, ...).
    type        String,
    seq         UInt64,
    -- When it happened on the runner, to the second (DateTime64 is not in 18.16) ...
    ts          DateTime,
    -- ... and to the millisecond, as Unix epoch milliseconds.
    ts_ms       Int64,
    host        String,
    policy_id   String,
    raw         String,
    subject     String,
    -- JetStream stream sequence of the message that delivered this copy.
    stream_seq  UInt64,
    -- When the sink decoded it (sink clock).
    received_at DateTime
)
ENGINE = ReplacingMergeTree(received_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (run_id, seq, event_id);
