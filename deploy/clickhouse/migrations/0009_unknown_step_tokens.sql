-- A step's token counts nobody measured are NULL, never a made-up 0: `steps.tokens_in`
-- and `steps.tokens_out` become Nullable. They hold the tokens of the model calls the
-- step made (a turn's calls are on its first step: its `reason` step, else its first
-- `act` step), and NULL for a step that made no model call or one of whose calls has
-- unknown tokens.
--
-- Rows written before this migration keep their values, which this migration does not
-- rewrite: there, only `reason` steps carried tokens; the 0 of every other native step
-- means "not recorded here", read it as unknown.
--
-- MODIFY COLUMN to the type a column already has changes nothing, so this statement
-- may run twice.

ALTER TABLE steps
    MODIFY COLUMN tokens_in Nullable(UInt64),
    MODIFY COLUMN tokens_out Nullable(UInt64);
