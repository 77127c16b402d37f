-- Which experiment a run belongs to, and the settings of its policy that the columns
-- so far did not show: `run_starts` gains the experiment fields of `run_start` and the
-- policy-identity fields of its config (all part of `cfg_hash`).
--
-- - experiment: the experiment's name (`--experiment`; a sweep's runs carry the sweep's
--   name); NULL for a run outside any experiment.
-- - repeat: which repeat of its task the run is, from 0 (`run --repeats K`); NULL when
--   the producer did not repeat.
-- - planned_runs: the runs the command that made the run planned (tasks x repeats, a
--   sweep's runs); NULL when not known.
-- - tag_keys, tag_values: the run's labels (`--tag key=value`), sorted by key, the value
--   of tag_keys[i] in tag_values[i] (18.16 has no Map); empty when it has none.
-- - endpoint: where the model calls went (the provider's base URL, normalised: scheme
--   and host lower-cased, default port added, trailing `/` trimmed); NULL for a policy
--   that calls no model and when not known.
-- - max_tokens: `max_tokens` of each completion; NULL when the provider's default applied.
-- - system_prompt_sha256, tool_definitions_sha256: SHA-256 of the system prompt and of
--   the tool definitions the model was given; NULL as endpoint.
--
-- - optimizer_updates.trial: the bayes trial a proposal is (its run's sweep_trial): what
--   links a proposal to its run; NULL for other optimizers' updates.
--
-- Rows written before this migration read NULL and empty arrays: no run said its
-- experiment or these settings then, no proposal its trial.
--
-- ADD COLUMN (18.16 has no IF NOT EXISTS) is guarded, so this file may run twice.

-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'run_starts' AND name = 'experiment'
ALTER TABLE run_starts
    ADD COLUMN experiment Nullable(String) AFTER sandbox_kind,
    ADD COLUMN repeat Nullable(UInt32) AFTER experiment,
    ADD COLUMN planned_runs Nullable(UInt32) AFTER repeat,
    ADD COLUMN tag_keys Array(String) AFTER planned_runs,
    ADD COLUMN tag_values Array(String) AFTER tag_keys,
    ADD COLUMN endpoint Nullable(String) AFTER tag_values,
    ADD COLUMN max_tokens Nullable(UInt32) AFTER endpoint,
    ADD COLUMN system_prompt_sha256 Nullable(String) AFTER max_tokens,
    ADD COLUMN tool_definitions_sha256 Nullable(String) AFTER system_prompt_sha256;

-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'optimizer_updates' AND name = 'trial'
ALTER TABLE optimizer_updates
    ADD COLUMN trial Nullable(UInt64) AFTER reasoning;
