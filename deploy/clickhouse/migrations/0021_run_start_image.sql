-- The OCI image a task ran in (`run_start.image`): `run_starts` gains
--
-- - image_reference: the image as the task names it (`docker://REGISTRY/NAME:TAG`,
--   `oci:DIR:TAG` or `docker-archive:FILE`);
-- - image_digest: the manifest digest it was fetched at (`sha256:` and 64 hex digits),
--   the one `pins.toml` pins and `env_hash` covers.
--
-- Both are NULL for a task run on the host's system directories, for runs imported from
-- elsewhere, and for every row written before this migration.
--
-- ADD COLUMN (18.16 has no IF NOT EXISTS) is guarded, so this file may run twice.

-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_starts' AND name = 'image_reference'
ALTER TABLE run_starts
    ADD COLUMN image_reference Nullable(String) AFTER tool_definitions_sha256,
    ADD COLUMN image_digest Nullable(String) AFTER image_reference;
