-- Whether ClickHouse can answer the stored-id lookup again: what the sink runs while a
-- flush waits out its retry backoff. Through a Distributed table it reaches one replica
-- of every shard, so it fails while a whole shard is away (a sink writing shard by shard
-- runs it per shard, on one replica's event_ids_local); one primary key range of
-- `event_ids` (ordered by event_id), so it costs next to nothing.
SELECT count() FROM event_ids WHERE event_id = toUUID('00000000-0000-0000-0000-000000000000')
