-- How the sequence of an experiment run until decided bet: `experiment_decisions` gains
-- `detect`, the difference in solve rate its bets were tuned to (`agent-runner run
-- --until-decided --detect D`); NULL when the bets were learnt from the outcomes
-- (aGRAPA), and on rows written before this migration (their events did not say).
--
-- ADD COLUMN (18.16 has no IF NOT EXISTS) is guarded, so this file may run twice.

-- only if: SELECT count() = 0 FROM system.columns WHERE database = currentDatabase() AND table = 'experiment_decisions' AND name = 'detect'
ALTER TABLE experiment_decisions
    ADD COLUMN detect Nullable(Float64) AFTER alpha;
