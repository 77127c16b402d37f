-- The id a tool call was given: `tool_calls` gains `call_id`, from `tool_call.call_id`
-- (the model's `tool_call_id` for a native run, `gen_ai.tool.call.id` for a run received
-- as a trace). NULL when the call had none (a scripted action, an imported trajectory,
-- a Smith event) and in rows written before this migration.
--
-- ADD COLUMN (18.16 has no IF NOT EXISTS) is guarded, so this file may run twice.

-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'tool_calls' AND name = 'call_id'
ALTER TABLE tool_calls ADD COLUMN call_id Nullable(String) AFTER intent_accuracy;
