-- Rows of the Smith protocol (`protocol = 'smith'`) in the same tables as native events:
-- every column holding a fact Smith does not send becomes Nullable, so such rows store
-- NULL there rather than a made-up value. Native rows are unchanged: they always have
-- these values.
--
-- - host (every event table): Smith names no producing host.
-- - run_starts: model, provider, strategy, scenario_name, scenario_sha256,
--   fixture_sha256, scoring_version, runner_version: Smith's run config has none of them.
-- - run_stops: exit_status, api_calls, turns (cost_usd already is Nullable).
-- - optimizer_updates: suggested_model, suggested_strategy.
-- - steps.planned (new): whether the step executes a plan item. Smith sends only this
--   bool, native events the plan index (`planned_step`), so rows written before this
--   migration read it as `planned_step IS NOT NULL`, which is what the index meant.
--
-- MODIFY COLUMN to the type a column already has changes nothing, so these statements
-- may run twice; ADD COLUMN (18.16 has no IF NOT EXISTS) is guarded.

ALTER TABLE events_raw MODIFY COLUMN host Nullable(String);

ALTER TABLE run_starts
    MODIFY COLUMN host Nullable(String),
    MODIFY COLUMN model Nullable(String),
    MODIFY COLUMN provider Nullable(String),
    MODIFY COLUMN strategy Nullable(String),
    MODIFY COLUMN scenario_name Nullable(String),
    MODIFY COLUMN scenario_sha256 Nullable(String),
    MODIFY COLUMN fixture_sha256 Nullable(String),
    MODIFY COLUMN scoring_version Nullable(String),
    MODIFY COLUMN runner_version Nullable(String);

ALTER TABLE run_stops
    MODIFY COLUMN host Nullable(String),
    MODIFY COLUMN exit_status Nullable(String),
    MODIFY COLUMN api_calls Nullable(UInt32),
    MODIFY COLUMN turns Nullable(UInt32);

ALTER TABLE steps MODIFY COLUMN host Nullable(String);

-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'steps' AND name = 'planned'
ALTER TABLE steps ADD COLUMN planned UInt8 DEFAULT isNotNull(planned_step) AFTER planned_step;

ALTER TABLE tool_calls MODIFY COLUMN host Nullable(String);

ALTER TABLE deliberations MODIFY COLUMN host Nullable(String);

ALTER TABLE context_decisions MODIFY COLUMN host Nullable(String);

ALTER TABLE failures MODIFY COLUMN host Nullable(String);

ALTER TABLE optimizer_updates
    MODIFY COLUMN host Nullable(String),
    MODIFY COLUMN suggested_model Nullable(String),
    MODIFY COLUMN suggested_strategy Nullable(String);
