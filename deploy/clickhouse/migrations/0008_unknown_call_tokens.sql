-- Token counts nobody reported are NULL, never a made-up 0: the token columns of
-- `deliberations` become Nullable. A call that got no answer (timeout, HTTP error,
-- unreadable reply), or whose answer reported no usage, stores NULL in all five; its
-- `cost_usd` is NULL too (`pricing_source = 'unknown'`), as before.
--
-- Rows written before this migration keep their values, which this migration does not
-- rewrite: those of calls that got no answer (status 'timeout' or 'api_error', and
-- 'parse_failure' with an empty raw_output) hold 0 for tokens; read them as unknown.
--
-- MODIFY COLUMN to the type a column already has changes nothing, so this statement
-- may run twice.

ALTER TABLE deliberations
    MODIFY COLUMN input_tokens Nullable(UInt64),
    MODIFY COLUMN cached_input_tokens Nullable(UInt64),
    MODIFY COLUMN cache_write_tokens Nullable(UInt64),
    MODIFY COLUMN output_tokens Nullable(UInt64),
    MODIFY COLUMN reasoning_tokens Nullable(UInt64);
