//! The provenance reference, `deploy/clickhouse/PROVENANCE.md`: for every column of every
//! table, its type, where its value comes from and what it holds when nobody measured
//! it. It is generated here from the two sources that define it, so it cannot drift:
//!
//! - the columns and their types as ClickHouse 18.16 has them after every migration
//!   (`system.columns` of a freshly migrated database);
//! - the field descriptions of the JSON Schema (`schemas/benchmark-event.schema.json`),
//!   for each column that stores a wire field, and [`NOT_ON_THE_WIRE`] for the columns
//!   the sink or a migration derives.
//!
//! The test fails when the file is out of date (`BENCH_BLESS=1` rewrites it), when a
//! column has no source, and when a column that is not Nullable is neither always known
//! ([`ALWAYS_KNOWN`]) nor listed as still storing a value where nothing was measured
//! ([`NOT_NULLABLE_YET`]): so the next new column is either Nullable or says why not.

use std::fmt::Write as _;

use serde_json::Value;

use super::seeded_clickhouse;
use crate::common::repo_path;

/// The reference, relative to the repository.
const REFERENCE: &str = "deploy/clickhouse/PROVENANCE.md";

/// Columns the sink or a migration fills, not a wire field: `table.column` (or
/// `*.column` for every table), and where the value comes from.
const NOT_ON_THE_WIRE: &[(&str, &str)] = &[
    ("*.received_at", "the sink's clock when it stored the row"),
    (
        "*.protocol",
        "the wire protocol the sink read: `benchstream` or `smith`",
    ),
    (
        "*.stream_seq",
        "the JetStream stream sequence of the message (NULL for rows copied by migration 0005)",
    ),
    (
        "*.precedence",
        "`bitNot(stream_seq)`, computed by ClickHouse: the earliest copy wins under FINAL",
    ),
    ("*.ts_ms", "envelope `ts`, in epoch milliseconds"),
    (
        "task_validations.validated_ms",
        "`greatest(ts_ms, 0)`, computed by ClickHouse: the latest validation wins under FINAL",
    ),
    ("events_raw.type", "envelope `type`"),
    ("events_raw.raw", "the message body, byte for byte"),
    ("events_raw.subject", "the NATS subject of the message"),
    (
        "event_ids.type",
        "envelope `type`, from `events_raw` (view `event_ids_feed`)",
    ),
    (
        "event_ids.body_hash",
        "sipHash64 of the body, from `events_raw` (view `event_ids_feed`)",
    ),
    (
        "steps.planned",
        "`planned_step IS NOT NULL` for native events; Smith's `planned_step` bool",
    ),
    ("run_starts.scenario_name", "`scenario.name`"),
    ("run_starts.scenario_sha256", "`scenario.sha256`"),
    ("run_starts.sweep_name", "`sweep.name`"),
    ("run_starts.sweep_key", "`sweep.key`"),
    ("run_starts.sweep_trial", "`sweep.trial`"),
    ("run_starts.sandbox_kind", "`sandbox.kind`"),
    ("run_starts.image_reference", "`image.reference`"),
    ("run_starts.image_digest", "`image.digest`"),
    ("run_starts.tag_keys", "the keys of `tags`, sorted"),
    (
        "run_starts.tag_values",
        "the values of `tags`, in the order of `tag_keys`",
    ),
    ("run_starts.available_tools", "`available_tools`"),
    ("deliberations.action_types", "`actions[].type`"),
    ("deliberations.action_targets", "`actions[].target`"),
    ("deliberations.action_priorities", "`actions[].priority`"),
    ("deliberations.action_reasons", "`actions[].reason`"),
    ("failures.root_kind", "`first_failure_root.kind`"),
    (
        "run_stops.test_files_edited",
        "the length of `integrity.test_files_edited` (NULL without `integrity`)",
    ),
    (
        "run_stops.final_diff_truncated",
        "`final_diff_truncated`: 1 when `final_diff` is the head of the diff only or the diff was left out for the event's size, 0 when it is whole; NULL when there is no text and nothing was cut",
    ),
    (
        "failures.first_failure_root",
        "`first_failure_root`, as JSON text",
    ),
    (
        "failures.recovery_attempts",
        "`recovery_attempts`, as JSON text",
    ),
    (
        "failures.recovery_attempt_count",
        "the length of `recovery_attempts`",
    ),
    (
        "failures.recovered",
        "whether any of `recovery_attempts` succeeded",
    ),
    (
        "failures.error_confidence",
        "`final_error_state.confidence`",
    ),
    (
        "optimizer_updates.suggested_config",
        "`suggested_config`, as JSON text",
    ),
    (
        "optimizer_updates.suggested_model",
        "`suggested_config.model` (NULL in Smith rows)",
    ),
    (
        "optimizer_updates.suggested_strategy",
        "`suggested_config.strategy` (NULL in Smith rows)",
    ),
    (
        "dead_letters.stream",
        "the JetStream stream the message came from",
    ),
    ("dead_letters.stream_seq", "its stream sequence"),
    ("dead_letters.subject", "its NATS subject"),
    ("dead_letters.headers", "its headers, `Name: value` lines"),
    ("dead_letters.raw", "its body, byte for byte"),
    (
        "dead_letters.error_class",
        "why the sink refused it (deploy/clickhouse/README.md lists the classes)",
    ),
    ("dead_letters.error", "the sink's error message"),
    (
        "dead_letters.delivered",
        "how often JetStream had delivered it",
    ),
    (
        "dead_letters.event_id",
        "the `event_id` it carried, when it decoded that far",
    ),
    ("schema_migrations.version", "the migration's number"),
    ("schema_migrations.name", "the migration's name"),
    (
        "schema_migrations.checksum",
        "SHA-256 of the migration file",
    ),
    ("schema_migrations.applied_at", "when the sink applied it"),
];

/// Columns that are always known, and why: whoever stores the row has the value.
const ALWAYS_KNOWN: &[(&str, &str)] = &[
    ("*.event_id", "id"),
    ("*.run_id", "id"),
    ("*.task_id", "id"),
    ("*.ts", "time"),
    ("*.ts_ms", "time"),
    ("*.policy_id", "id"),
    ("*.cfg_hash", "hash"),
    ("*.env_hash", "hash"),
    ("*.received_at", "sink"),
    ("*.protocol", "sink"),
    ("*.precedence", "sink"),
    ("task_validations.validated_ms", "envelope `ts`"),
    ("*.type", "event type"),
    ("events_raw.raw", "the message"),
    ("events_raw.subject", "the message"),
    ("event_ids.body_hash", "hash"),
    ("event_ids.stream_seq", "the message"),
    ("events_raw.stream_seq", "the message"),
    ("run_starts.fixture_sha256", "hash"),
    ("genai_events.name", "the log record's event name"),
    ("genai_events.trace_id", "id"),
    (
        "genai_events.body",
        "the record as sent: `null` when it has no body",
    ),
    (
        "genai_events.attributes",
        "the record as sent: `{}` when it has none",
    ),
    ("genai_events.content_truncated", "the receiver's own cut"),
    (
        "run_starts.tag_keys",
        "the run's labels: empty when it has none",
    ),
    (
        "run_starts.tag_values",
        "the run's labels: empty when it has none",
    ),
    (
        "optimizer_updates.trial_run_ids",
        "the trial's runs: empty when the update carries no trial result",
    ),
    (
        "run_stops.early_stopped",
        "derived from how the run ended: whether it has an early-stop reason",
    ),
    ("steps.step_type", "kind"),
    ("steps.content", "the producer's text"),
    ("steps.content_truncated", "the sink's limit"),
    ("steps.planned", "derived"),
    ("tool_calls.tool_name", "id"),
    ("tool_calls.tool_args_hash", "hash"),
    ("tool_calls.exit_kind", "kind"),
    ("deliberations.agent", "the caller"),
    ("deliberations.provider", "configured"),
    ("deliberations.model", "configured"),
    ("deliberations.status", "kind"),
    (
        "deliberations.pricing_source",
        "kind (`unknown` when the price is)",
    ),
    ("deliberations.summary", "the producer's text"),
    ("deliberations.summary_truncated", "the sink's limit"),
    ("deliberations.raw_output", "the producer's text"),
    ("deliberations.raw_output_truncated", "the sink's limit"),
    ("context_decisions.segment_id", "id"),
    ("context_decisions.segment_type", "kind"),
    ("context_decisions.pruning_algorithm", "kind"),
    ("context_decisions.kept", "the decision"),
    ("failures.root_kind", "kind"),
    ("failures.first_failure_root", "the producer's text"),
    ("failures.error_category", "kind"),
    (
        "optimizer_updates.suggested_config",
        "the optimizer's output",
    ),
    ("optimizer_updates.reasoning", "the optimizer's text"),
    ("test_outcomes.test_id", "id"),
    ("test_outcomes.test_set", "kind"),
    ("test_outcomes.after", "the judge's verdict"),
    ("task_validations.scenario", "the validating runner"),
    ("task_validations.task_sha256", "the task's pin"),
    ("task_validations.fixture_sha256", "the task's pin"),
    ("task_validations.repeats", "the validation's setting"),
    ("task_validations.broken", "the validation's verdict"),
    ("task_validations.reasons", "the validation's verdict"),
    ("task_validations.tests", "count"),
    ("task_validations.flaky_tests", "the validation's finding"),
    ("experiment_decisions.experiment", "the deciding runner"),
    ("experiment_decisions.baseline", "the deciding runner"),
    ("experiment_decisions.candidate", "the deciding runner"),
    ("experiment_decisions.decision", "the decision"),
    ("experiment_decisions.rounds", "count"),
    ("experiment_decisions.alpha", "the decision's setting"),
    ("dead_letters.stream", "the message"),
    ("dead_letters.stream_seq", "the message"),
    ("dead_letters.subject", "the message"),
    ("dead_letters.headers", "the message"),
    ("dead_letters.raw", "the message"),
    ("dead_letters.error_class", "sink"),
    ("dead_letters.error", "sink"),
    ("dead_letters.delivered", "the message"),
    ("schema_migrations.version", "migration"),
    ("schema_migrations.name", "migration"),
    ("schema_migrations.checksum", "migration"),
    ("schema_migrations.applied_at", "migration"),
];

/// Columns that are not Nullable although a producer may not have measured them: they
/// store what the producer sent (0, false or an empty list when it sent that for
/// "unknown"), as their wire field's description says. Each is a column still to make
/// Nullable; no other may join this list.
const NOT_NULLABLE_YET: &[&str] = &[
    "run_starts.pruning_threshold",
    "run_starts.planner_depth",
    "run_starts.debate_rounds",
    "run_starts.available_tools",
    "run_starts.retry_max_retries",
    "run_starts.retry_backoff_ms",
    "run_starts.retry_exponential_backoff",
    "run_starts.retry_on_flake",
    "run_starts.retry_on_timeout",
    "run_starts.execution_timeout_ms",
    "run_starts.failing_tests_patience",
    "run_starts.no_progress_timeout_ms",
    "run_starts.tools_commit",
    "run_starts.sandbox_cpu_cores",
    "run_starts.sandbox_disk_mb",
    "run_starts.sandbox_network_enabled",
    "run_starts.sandbox_execution_timeout_ms",
    "run_stops.failing_tests",
    "tool_calls.files_read",
    "tool_calls.files_modified",
    "tool_calls.lines_changed",
    "tool_calls.tests_added",
    "tool_calls.tests_modified",
    "tool_calls.bytes_read",
    "tool_calls.bytes_written",
    "deliberations.action_types",
    "deliberations.action_targets",
    "deliberations.action_priorities",
    "deliberations.action_reasons",
    "context_decisions.segment_kb",
    "context_decisions.confidence_score",
    "failures.recovery_attempts",
    "failures.recovery_attempt_count",
    "failures.recovered",
    "failures.recoverable",
    "failures.error_confidence",
    "failures.similar_failures",
    "failures.contributing_factors",
    "failures.remediation_suggestions",
    "optimizer_updates.confidence",
    "optimizer_updates.expected_improvement",
    "optimizer_updates.exploration_vs_exploitation",
];

/// The wire payload each event table stores, and the nested objects flattened into it
/// (column prefix, schema definition).
fn payload_of(table: &str) -> Option<(&'static str, &'static [(&'static str, &'static str)])> {
    Some(match table {
        "run_starts" => (
            "RunStart",
            &[
                ("", "RunConfig"),
                ("", "StrategyParams"),
                ("retry_", "RetryPolicy"),
                ("sandbox_", "SandboxLimits"),
            ],
        ),
        "run_stops" => ("RunStop", &[("", "RunIntegrity"), ("regrade_", "Regrade")]),
        "test_outcomes" => ("TestOutcome", &[]),
        "task_validations" => ("TaskValidation", &[]),
        "experiment_decisions" => ("ExperimentDecision", &[]),
        "steps" => ("Step", &[]),
        "tool_calls" => ("ToolCall", &[("", "EvidenceFootprint")]),
        "deliberations" => ("Deliberation", &[]),
        "context_decisions" => ("ContextDecision", &[]),
        "failures" => ("Failure", &[("", "FinalErrorState")]),
        "optimizer_updates" => ("OptimizerUpdate", &[("trial_", "TrialOutcome")]),
        "genai_events" => ("GenAiEvent", &[]),
        _ => return None,
    })
}

/// The entry of `list` for `table.column`, else for `*.column`.
fn lookup<'a, T>(list: &'a [(&str, T)], table: &str, column: &str) -> Option<&'a T> {
    let exact = format!("{table}.{column}");
    let any = format!("*.{column}");
    list.iter()
        .find(|(key, _)| *key == exact)
        .or_else(|| list.iter().find(|(key, _)| *key == any))
        .map(|(_, value)| value)
}

/// One line of a description, safe in a Markdown table cell.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// Where `table.column` comes from, from the schema or [`NOT_ON_THE_WIRE`].
fn source(schema: &Value, table: &str, column: &str) -> Option<String> {
    if let Some(hand) = lookup(NOT_ON_THE_WIRE, table, column) {
        return Some((*hand).to_owned());
    }
    let described = |props: &Value, name: &str| {
        props
            .get(name)
            .map(|p| p.get("description").and_then(Value::as_str).unwrap_or(""))
            .map(cell)
    };
    if let Some(text) = described(&schema["properties"], column) {
        return Some(format!("envelope `{column}`: {text}"));
    }
    let (def, nested) = payload_of(table)?;
    let defs = &schema["$defs"];
    if let Some(text) = described(&defs[def]["properties"], column) {
        return Some(format!("`{column}`: {text}"));
    }
    // A nested field keeps its name (`retry_on_flake`) or gets the prefix (`retry_` +
    // `max_retries`).
    nested.iter().find_map(|(prefix, nested_def)| {
        [column.strip_prefix(prefix), Some(column)]
            .into_iter()
            .flatten()
            .find_map(|field| {
                described(&defs[*nested_def]["properties"], field)
                    .map(|text| format!("`{}`: {text}", nested_path(nested_def, field)))
            })
    })
}

/// The wire path of `field` of the nested object `def`.
fn nested_path(def: &str, field: &str) -> String {
    match def {
        "RetryPolicy" => format!("retry_policy.{field}"),
        "SandboxLimits" => format!("sandbox_limits.{field}"),
        "StrategyParams" => format!("strategy_params.{field}"),
        "EvidenceFootprint" => format!("evidence_footprint.{field}"),
        "RunIntegrity" => format!("integrity.{field}"),
        "Regrade" => format!("regrade.{field}"),
        "FinalErrorState" => format!("final_error_state.{field}"),
        "TrialOutcome" => format!("outcome.{field}"),
        _ => field.to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provenance_reference_covers_every_column_as_migrated() {
    let (server, _client) = seeded_clickhouse().await;
    // 18.16's system.columns has no position: each table's columns in order come from
    // DESCRIBE.
    let tables = server.query(
        "SELECT name FROM system.tables WHERE database = 'benchstream' \
         AND engine != 'MaterializedView' AND name NOT LIKE '.inner%' ORDER BY name FORMAT TSV",
    );
    let columns: String = tables
        .lines()
        .flat_map(|table| {
            server
                .query(&format!("DESCRIBE TABLE benchstream.{table} FORMAT TSV"))
                .lines()
                .map(|line| format!("{table}\t{line}\n"))
                .collect::<Vec<_>>()
        })
        .collect();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("schemas/benchmark-event.schema.json"))
            .expect("the JSON Schema"),
    )
    .expect("JSON");

    let mut doc = String::from(
        "# Where every stored value comes from\n\n\
         <!-- Generated by tests/tests/it/analysis/provenance.rs from the migrations and the \
         JSON Schema; do not edit: BENCH_BLESS=1 cargo test -p benchstream-tests --test it \
         analysis::provenance rewrites it. -->\n\n\
         Every column of every table, as ClickHouse has it after every migration: its type, \
         where its value comes from (the wire field and its description in \
         [`schemas/README.md`](../../schemas/README.md), or what the sink or a migration \
         derives), and what it holds when nobody measured it:\n\n\
         - **NULL**: the column is Nullable, and NULL is what it holds for a value nobody \
         measured or sent;\n\
         - **always known** (why): an id, time, hash, kind or text whoever stores the row \
         has;\n\
         - **as sent**: not Nullable yet; it stores what the producer sent, and the \
         description says what that is when nothing was measured (often 0). No new column \
         may join these.\n",
    );
    let (mut missing, mut unjustified) = (Vec::new(), Vec::new());
    let mut current = "";
    for line in columns.lines() {
        let mut parts = line.split('\t');
        let (Some(table), Some(column), Some(ty)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if table != current {
            current = table;
            let _ = write!(
                doc,
                "\n## `{table}`\n\n| column | type | from | when nobody measured it |\n|---|---|---|---|\n"
            );
        }
        let from = source(&schema, table, column).unwrap_or_else(|| {
            missing.push(format!("{table}.{column}"));
            String::new()
        });
        let key = format!("{table}.{column}");
        let unknown = if ty.starts_with("Nullable(") {
            "NULL".to_owned()
        } else if let Some(why) = lookup(ALWAYS_KNOWN, table, column) {
            format!("always known ({why})")
        } else if NOT_NULLABLE_YET.contains(&key.as_str()) {
            "as sent".to_owned()
        } else {
            unjustified.push(key);
            String::new()
        };
        let _ = writeln!(doc, "| `{column}` | `{ty}` | {from} | {unknown} |");
    }
    assert!(missing.is_empty(), "columns with no source: {missing:?}");
    assert!(
        unjustified.is_empty(),
        "columns neither Nullable nor always known: {unjustified:?}"
    );

    let path = repo_path(REFERENCE);
    if std::env::var_os("BENCH_BLESS").is_some() {
        std::fs::write(&path, &doc).expect("write the reference");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == doc,
        "{REFERENCE} is out of date: BENCH_BLESS=1 cargo test -p benchstream-tests --test it \
         analysis::provenance rewrites it"
    );
}
