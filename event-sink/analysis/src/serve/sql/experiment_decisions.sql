-- Every stored decision of experiments run until decided (`agent-runner run
-- --until-decided`), oldest first: what the viewer's experiment page, `compare
-- --sequential` and the report show (src/compare/decisions.rs keeps the latest of each
-- experiment and pair). FINAL: each event counts once.
-- `detect` is the difference the bets were tuned to, NULL when they were learnt.
-- Bound in order: the experiments' names, comma-separated, twice (empty: every one).
SELECT experiment, baseline, candidate, decision, cs_low, cs_high, rounds, alpha,
    detect, ts_ms AS decided_ms
FROM experiment_decisions FINAL
WHERE ? = '' OR has(splitByChar(',', ?), experiment)
ORDER BY ts_ms, run_id
