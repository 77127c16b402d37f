-- Paired outcomes: one row per task and policy (with the config the runs had: cfg_hash,
-- model, strategy, scoring_version, and the experiment and tags of the runs), the runs
-- that count for comparing policies on the same tasks, their successes and cost; what
-- `bench-analysis compare` computes its statistics from, and where your own statistics
-- start. tags = the runs' `key=value` tags, one per line, sorted by key. The settings
-- of the config follow (temperature, context_window, max_iterations, the strategy's
-- parameters, endpoint, max_tokens, the prompt and tool-definition hashes, the tools):
-- what labels a cfg_hash by the settings that differ.
--
-- A run counts when it is finished and judged, and its task is not broken. The others
-- are excluded, counted by reason, each run under the first that applies: broken_task
-- (the latest validation of its task and fixture, in task_validations, found the task
-- broken: its runs are no results; only validations `tasks validate` published count,
-- policy_id 'validation' on a run_id without run_start), unfinished (no run_stop), lost_events
-- (a gap in its seq numbers, the logic of lost_events), infrastructure (an
-- infrastructure failure: exit_status exit_environment or exit_api, the sandbox could
-- not be set up or the provider failed, even after answering earlier calls; whatever
-- success says, which runs recorded before this rule may hold),
-- unjudged (success NULL). An excluded run is never a failure.
-- runs, successes = counted runs and their successes. priced_runs = counted runs whose
-- cost is known; cost_usd = their summed cost, NULL unless every counted run is priced
-- (and when none counts).
-- turns and tokens are sums over the counted runs whose turns (turn_runs) and
-- total_tokens (token_runs) are known, NULL when none is. Keep scoring_version apart:
-- verdicts of different judge versions are not comparable.
-- Integrity (run_stops, SWE-bench-format tasks): a counted run is flagged when a flag
-- it has says so (test_files_edited, history_commands or network_commands > 0);
-- otherwise it is unknown when a flag could not be established (test_files_edited NULL:
-- a task without them; history_commands NULL: the agent's commands were not seen, which
-- leaves network_commands unknown too; network_commands alone is NULL when the network
-- was on, where trying it is no flag), and clean when none is NULL. flagged_runs,
-- integrity_unknown_runs, clean_runs count them; clean_successes = successes of the
-- clean runs. An unknown run is neither clean nor flagged.
-- Dedup: every table is read with FINAL. 18.16 allows one JOIN per SELECT, hence the
-- nesting.
-- param since DateTime = '1970-01-01 00:00:00': runs started at or after this time (UTC)
-- param until DateTime = '2106-01-01 00:00:00': runs started before this time (UTC)
-- param policy String = '': only this policy_id; empty = every policy
-- param scenario String = '': only runs of these scenarios (names), comma-separated; empty = every scenario
-- param tasks String = '': only these task_ids, comma-separated; empty = every task
-- param experiment String = '': only runs of these experiments, comma-separated; empty = every run
-- param sweep String = '': only runs of these sweeps, comma-separated; empty = every run
SELECT
    task_id, policy_id, cfg_hash, model, strategy, scoring_version, experiment, tags,
    runs, successes, priced_runs, cost_usd, turn_runs, turns, token_runs, tokens,
    flagged_runs, integrity_unknown_runs, clean_runs, clean_successes,
    broken_task, unfinished, lost_events, infrastructure, unjudged,
    temperature, context_window, max_iterations, observation_window, summary_interval,
    summary_keep, summarizer_model, endpoint, max_tokens, system_prompt_sha256,
    tool_definitions_sha256, tools
FROM
(
SELECT
    task_id,
    policy_id,
    cfg_hash,
    model,
    strategy,
    scoring_version,
    experiment,
    tags,
    countIf(excluded = '') AS runs,
    countIf(excluded = '' AND solved = 1) AS successes,
    countIf(excluded = '' AND isNotNull(run_cost)) AS priced_runs,
    if(runs > 0 AND priced_runs = runs, sumIf(assumeNotNull(run_cost), excluded = ''), NULL) AS cost_usd,
    countIf(excluded = '' AND isNotNull(run_turns)) AS turn_runs,
    if(turn_runs = 0, NULL,
        sumIf(toFloat64(assumeNotNull(run_turns)), excluded = '' AND isNotNull(run_turns)))
        AS turns,
    countIf(excluded = '' AND isNotNull(run_tokens)) AS token_runs,
    if(token_runs = 0, NULL,
        sumIf(toFloat64(assumeNotNull(run_tokens)), excluded = '' AND isNotNull(run_tokens)))
        AS tokens,
    countIf(excluded = '' AND integrity = 'flagged') AS flagged_runs,
    countIf(excluded = '' AND integrity = 'unknown') AS integrity_unknown_runs,
    countIf(excluded = '' AND integrity = 'clean') AS clean_runs,
    countIf(excluded = '' AND integrity = 'clean' AND solved = 1) AS clean_successes,
    countIf(excluded = 'broken_task') AS broken_task,
    countIf(excluded = 'unfinished') AS unfinished,
    countIf(excluded = 'lost_events') AS lost_events,
    countIf(excluded = 'infrastructure') AS infrastructure,
    countIf(excluded = 'unjudged') AS unjudged
FROM
(
    SELECT task_id, policy_id, cfg_hash, model, strategy, scoring_version, experiment, tags,
        run_cost, run_turns, run_tokens, integrity,
        -- assumeNotNull only after the isNull test: 18.16 gives NULL for a comparison
        -- with a Nullable column.
        toUInt8(isNotNull(succeeded) AND assumeNotNull(succeeded) = 1) AS solved,
        multiIf(task_broken = 1, 'broken_task',
            stopped = 0, 'unfinished',
            missing > 0, 'lost_events',
            status IN ('exit_environment', 'exit_api'), 'infrastructure',
            isNull(succeeded), 'unjudged',
            '') AS excluded
    FROM
    (
        SELECT run_id, task_id, policy_id, cfg_hash, model, strategy, scoring_version,
            experiment, tags, stopped, succeeded, status, run_cost, run_turns, run_tokens,
            integrity, missing, task_broken
        FROM
        (
            SELECT run_id, task_id, fixture_key, policy_id, cfg_hash, model, strategy,
                scoring_version, experiment, tags, stopped, succeeded, status, run_cost,
                run_turns, run_tokens, integrity, missing
            FROM
            (
                SELECT run_id, task_id, fixture_key, policy_id, cfg_hash, model, strategy,
                    scoring_version, experiment, tags, stopped, succeeded, status, run_cost,
                    run_turns, run_tokens, integrity
                FROM
                (
                    SELECT run_id, task_id, ifNull(fixture_sha256, '') AS fixture_key,
                        policy_id, cfg_hash, model, strategy, scoring_version, experiment,
                        arrayStringConcat(arrayMap((k, v) -> concat(k, '=', v), tag_keys,
                            tag_values), '\n') AS tags
                    FROM run_starts FINAL
                    WHERE ts >= {since:DateTime} AND ts < {until:DateTime}
                        AND ({policy:String} = '' OR policy_id = {policy:String})
                        AND ({scenario:String} = '' OR has(splitByChar(',', {scenario:String}), ifNull(scenario_name, '')))
                        AND ({experiment:String} = '' OR has(splitByChar(',', {experiment:String}), ifNull(experiment, '')))
                        AND ({sweep:String} = '' OR has(splitByChar(',', {sweep:String}), ifNull(sweep_name, '')))
                        AND ({tasks:String} = '' OR has(splitByChar(',', {tasks:String}), task_id))
                ) AS started
                ANY LEFT JOIN
                (
                    SELECT run_id, toUInt8(1) AS stopped, success AS succeeded,
                        ifNull(exit_status, '') AS status, cost_usd AS run_cost,
                        turns AS run_turns, total_tokens AS run_tokens,
                        multiIf(ifNull(test_files_edited, 0) > 0
                                OR ifNull(history_commands, 0) > 0
                                OR ifNull(network_commands, 0) > 0, 'flagged',
                            isNull(test_files_edited) OR isNull(history_commands), 'unknown',
                            'clean') AS integrity
                    FROM run_stops FINAL
                ) AS stopped_runs USING run_id
            ) AS run_results
            ANY LEFT JOIN
            (
                -- The seq-gap test of lost_events: seq starts at 0 and grows by 1 per event,
                -- so fewer distinct seqs than max + 1 is a lost event; runs without seq
                -- (Smith) have none. Read without FINAL: the maximum and the distinct
                -- seqs are the same over the copies of an event as over one, and FINAL
                -- over every event is most of the query's time.
                SELECT run_id,
                    toUInt64(if(countIf(isNotNull(seq)) = 0, 0,
                        maxIf(assumeNotNull(seq), isNotNull(seq)) + 1
                            - uniqExactIf(assumeNotNull(seq), isNotNull(seq)))) AS missing
                FROM events_raw
                GROUP BY run_id
            ) AS sequences USING run_id
        ) AS sequenced_runs
        ANY LEFT JOIN
        (
            -- The latest validation of each task and fixture (a run of a task never
            -- validated joins no row: 0, not broken). Picked by time rather than by
            -- FINAL: on a cluster two validations of a task can sit on different shards,
            -- which FINAL does not fold together. Only validations `tasks validate`
            -- published count: its mark is policy_id 'validation' on a run_id that has no
            -- run_start (a validation is no run), which no event of a run can carry.
            SELECT task_id, fixture_sha256 AS fixture_key, argMax(broken, ts_ms) AS task_broken
            FROM task_validations
            WHERE policy_id = 'validation' AND run_id NOT IN (SELECT run_id FROM run_starts)
            GROUP BY task_id, fixture_key
        ) AS validations USING task_id, fixture_key
    ) AS checked_runs
) AS classified_runs
GROUP BY task_id, policy_id, cfg_hash, model, strategy, scoring_version, experiment, tags
) AS outcomes
ANY LEFT JOIN
(
    -- The settings of each config: one value per cfg_hash, which hashes them.
    SELECT cfg_hash, any(temperature) AS temperature, any(context_window) AS context_window,
        any(max_iterations) AS max_iterations, any(observation_window) AS observation_window,
        any(summary_interval) AS summary_interval, any(summary_keep) AS summary_keep,
        any(summarizer_model) AS summarizer_model, any(endpoint) AS endpoint,
        any(max_tokens) AS max_tokens, any(system_prompt_sha256) AS system_prompt_sha256,
        any(tool_definitions_sha256) AS tool_definitions_sha256,
        any(arrayStringConcat(available_tools, ',')) AS tools
    FROM run_starts FINAL
    GROUP BY cfg_hash
) AS settings USING cfg_hash
ORDER BY task_id, policy_id, cfg_hash, experiment, tags
