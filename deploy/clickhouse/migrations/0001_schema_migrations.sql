-- Which migrations ran on this database. Written by `event-sink` after it applied a
-- migration (at start and by `event-sink migrate`); never edited by hand.
--
-- ReplacingMergeTree on `version`: two sinks migrating at the same moment both record
-- the same version, and `FINAL` shows it once.
CREATE TABLE IF NOT EXISTS schema_migrations
(
    version    UInt32,
    name       String,
    -- SHA-256 (hex) of the migration file as applied; a mismatch means the file was
    -- edited after it ran, which the sink refuses.
    checksum   String,
    applied_at DateTime
)
ENGINE = ReplacingMergeTree(applied_at)
ORDER BY version;
