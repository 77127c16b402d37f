-- The objective of each finished trial of a bayes sweep, stored with its proposal
-- (agent-runner/src/sweep/trials.rs). FINAL: a proposal delivered twice counts once.
-- Bound by the runner: the run ids of the proposals' streams (Array(String)), which the
-- trials' claims hold. objective stays NULL when unknown.
SELECT
    toString(run_id) AS run_id,
    objective
FROM optimizer_updates FINAL
WHERE has(?, toString(run_id)) AND notEmpty(trial_run_ids)
