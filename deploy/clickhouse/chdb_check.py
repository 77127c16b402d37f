#!/usr/bin/env python3
"""Checks that the shipped ClickHouse SQL also runs on current ClickHouse.

CI runs the sink against a real ClickHouse 18.16 (the only server package these
machines can install); this script runs the same SQL on the ClickHouse engine embedded
in chdb-core (26.x), in a throw-away session, so that nothing shipped relies on
18.16-only behaviour.

    pip install chdb-core
    python3 deploy/clickhouse/chdb_check.py          # exit 0 = every stage passed

Stages run in order in one session; each is a function `stage(session) -> None` that
raises on failure. After the DDL stages, each dataset of DATASETS is loaded into its own
migrated database and every shipped query (`queries/*.sql`) runs over it, with the
parameters of `<dataset>/params.json`; each answer must equal
`<dataset>/expected/<query>.csv`, which the Rust tests of `analysis::queries` check
against (and with BENCH_BLESS=1 write from) the real 18.16 server. The datasets: the
hand-made one (`fixtures/*.jsonl`, see fixtures/README.md) and one exported from a real
pipeline run (`fixtures/pipeline/*.jsonl`, see fixtures/pipeline/README.md). The
queries `agent-runner sweep` runs (`agent-runner/src/sweep/*.sql`, bound by position,
outside the shipped set) run over each dataset too, and must answer with the columns the
runner reads, in its order, one row per config or run of the dataset; so do the queries
of the viewer (`event-sink/analysis/src/serve/sql/*.sql`, `bench-analysis serve`). Cells
compare as numbers when both parse as numbers (relative 1e-9), otherwise as text. To
check more SQL, write a stage and append it to STAGES; to check another dataset, add it
to DATASETS. Files are split into statements with `split_statements`, which follows the
same rules as the sink (`event-sink/src/migrations.rs`): `;` ends a statement unless it
is inside a quoted string, a quoted identifier or a comment; a statement whose first
`-- only if: <query>` line's query answers 0 is skipped.
"""

import csv
import io
import json
import math
import re
import sys
import tempfile
import uuid
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIGRATIONS = HERE / "migrations"
QUERIES = HERE / "queries"
SWEEP_QUERIES = HERE.parent.parent / "agent-runner" / "src" / "sweep"
VIEWER_QUERIES = HERE.parent.parent / "event-sink" / "analysis" / "src" / "serve" / "sql"
FIXTURES = HERE / "fixtures"
# (database, directory): every dataset is loaded into its own database.
DATASETS = [
    ("benchstream_fixtures", FIXTURES),
    ("benchstream_pipeline", FIXTURES / "pipeline"),
]


def pieces(sql):
    """Cuts `sql` into consecutive ("code" | "quoted" | "comment", start, end) pieces
    covering it all, by the sink's rules (schemas/clickhouse/src/sql.rs): quotes '...', "...",
    `...` with backslash escapes and doubled quotes; comments `-- ...` to end of line and
    `/* ... */`; an unterminated quote or comment runs to the end."""
    found, code_start, i, n = [], 0, 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"`":
            kind, j = "quoted", i + 1
            while j < n:
                if sql[j] == "\\" or (sql[j] == c and j + 1 < n and sql[j + 1] == c):
                    j += 2
                elif sql[j] == c:
                    break
                else:
                    j += 1
            end = min(j + 1, n)
        elif sql.startswith("--", i):
            kind, end = "comment", sql.find("\n", i)
            end = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            kind, end = "comment", sql.find("*/", i + 2)
            end = n if end < 0 else end + 2
        else:
            i += 1
            continue
        if code_start < i:
            found.append(("code", code_start, i))
        found.append((kind, i, end))
        code_start = i = end
    if code_start < n:
        found.append(("code", code_start, n))
    return found


def split_statements(sql):
    """Splits SQL text on the `;` of code (never one in quotes or comments). Returns the
    non-empty statements, trimmed; a statement holding only comments is dropped."""
    statements, start, meaningful = [], 0, False
    for kind, begin, end in pieces(sql):
        if kind == "quoted":
            meaningful = True
        elif kind == "code":
            for at in range(begin, end):
                if sql[at] == ";":
                    if meaningful:
                        statements.append(sql[start:at].strip())
                    start, meaningful = at + 1, False
                else:
                    meaningful = meaningful or not sql[at].isspace()
    if meaningful:
        statements.append(sql[start:].strip())
    return statements


def migration_files():
    """`NNNN_name.sql` files in version order; the sink embeds exactly these."""
    files = sorted(MIGRATIONS.glob("[0-9][0-9][0-9][0-9]_*.sql"))
    if not files:
        raise RuntimeError(f"no migrations found in {MIGRATIONS}")
    return files


GUARD = "-- only if:"


def guard(statement):
    """The query after `-- only if:` on the statement's first such line, or None. The
    statement runs only when that query answers non-zero (as in the sink)."""
    for line in statement.splitlines():
        if line.lstrip().startswith(GUARD):
            return line.lstrip()[len(GUARD):].strip()
    return None


def run_file(session, path):
    for statement in split_statements(path.read_text(encoding="utf-8")):
        try:
            condition = guard(statement)
            if condition is not None and str(session.query(condition, "CSV")).strip() == "0":
                continue
            session.query(statement)
        except Exception as e:  # chdb raises its own exception types
            raise RuntimeError(f"{path.name}: {e}\n--- statement ---\n{statement}") from e


def stage_migrations(session):
    """Every migration applies, and applies again (they must be idempotent)."""
    for round_ in ("first", "second"):
        for path in migration_files():
            run_file(session, path)
        print(f"  migrations: {round_} run ok ({len(migration_files())} files)")


def stage_tables_read_with_final(session):
    """Every table the migrations create can be read with FINAL, as queries do (views
    are not tables: their target tables are read instead)."""
    tables = session.query(
        "SELECT name FROM system.tables WHERE database = currentDatabase() "
        "AND engine NOT LIKE '%View' ORDER BY name",
        "CSV",
    )
    names = [line.strip().strip('"') for line in str(tables).splitlines() if line.strip()]
    if not names:
        raise RuntimeError("migrations created no tables")
    for name in names:
        session.query(f"SELECT count() FROM {name} FINAL")
    print(f"  tables: {len(names)} readable with FINAL")


def stage_use_migrated_database(database):
    """Stage: create `database`, make it the session's current one and migrate it."""

    def stage(session):
        session.query(f"CREATE DATABASE IF NOT EXISTS {database}")
        session.query(f"USE {database}")
        for path in migration_files():
            run_file(session, path)
        print(f"{database}:")

    stage.__name__ = f"stage_use_migrated_database[{database}]"
    return stage


def stage_load_dataset(directory):
    """Stage: the rows of `directory` load into the migrated tables (JSONEachRow, one
    `<table>.jsonl` per table)."""

    def stage(session):
        files = sorted(directory.glob("*.jsonl"))
        if not files:
            raise RuntimeError(f"no fixtures in {directory}")
        for path in files:
            rows = path.read_text(encoding="utf-8")
            session.query(f"INSERT INTO {path.stem} FORMAT JSONEachRow\n{rows}")
        print(f"  fixtures: {len(files)} tables loaded from {directory.relative_to(HERE)}")

    stage.__name__ = f"stage_load_dataset[{directory.relative_to(HERE)}]"
    return stage


# Query parameters: the same declarations and literals as
# event-sink/analysis/src/queries.rs (see its module docs).
PARAM_DECL = re.compile(r"^-- param (\w+) (\w+)(?: = '([^']*)')?:", re.MULTILINE)
PLACEHOLDER = re.compile(r"\{(\w+):(\w+)\}")


def literal(type_, value):
    """The ClickHouse literal of `value` parsed as `type_`; raises if it is not one."""
    if type_ == "UUID":
        return f"toUUID('{uuid.UUID(value.strip())}')"
    if type_ == "UInt32":
        number = int(value.strip())
        if not 0 <= number <= 0xFFFFFFFF:
            raise ValueError(f"{value!r} out of UInt32 range")
        return str(number)
    if type_ == "Float64":
        number = float(value.strip())
        if not math.isfinite(number):
            raise ValueError(f"{value!r} is not finite")
        return f"toFloat64('{number!r}')"
    if type_ == "DateTime":
        text = value.strip().replace("Z", "+00:00")
        when = datetime.fromisoformat(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return f"toDateTime({int(when.timestamp())})"
    if type_ == "String":
        escapes = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}
        return "'" + "".join(escapes.get(c, c) for c in value) + "'"
    raise ValueError(f"unknown parameter type {type_}")


def code_spans(sql):
    """(start, end) of the code of `sql` (see `pieces`): only there does `{` open a
    placeholder."""
    return [(begin, end) for kind, begin, end in pieces(sql) if kind == "code"]


def render(sql, values):
    """`sql` with every `{name:Type}` outside quotes and comments replaced by the literal
    of its value or default."""
    declared = {m.group(1): (m.group(2), m.group(3)) for m in PARAM_DECL.finditer(sql)}

    def substitute(match):
        name, type_ = match.groups()
        if declared.get(name, (None,))[0] != type_:
            raise RuntimeError(f"{{{name}:{type_}}} is not declared")
        value = values.get(name, declared[name][1])
        if value is None:
            raise RuntimeError(f"no value for required parameter {name}")
        return literal(type_, value)

    out, done = [], 0
    for start, end in code_spans(sql):
        out.append(sql[done:start])
        out.append(PLACEHOLDER.sub(substitute, sql[start:end]))
        done = end
    return "".join(out)


def bind(sql, literals):
    """`sql` with each `?` outside quotes and comments replaced, in order, by the next
    of `literals`, as the runner's ClickHouse client binds its arguments."""
    values = iter(literals)

    def next_value(_):
        value = next(values, None)
        if value is None:
            raise RuntimeError("fewer arguments than `?` placeholders")
        return value

    out, done = [], 0
    for start, end in code_spans(sql):
        out.append(sql[done:start])
        out.append(re.sub(r"\?", next_value, sql[start:end]))
        done = end
    out.append(sql[done:])
    if next(values, None) is not None:
        raise RuntimeError("more arguments than `?` placeholders")
    return "".join(out)


def string_array(session, sql):
    """The ClickHouse literal of the one String column `sql` answers, as an array."""
    rows = list(csv.reader(io.StringIO(str(session.query(sql, "CSV")))))
    return "[" + ",".join(literal("String", row[0]) for row in rows) + "]"


def count(session, sql):
    return int(str(session.query(sql, "CSV")).strip())


# The sweep's queries: the columns its row types read by position (`ArmStats` of
# sweep/adaptive.rs, `TrialResult` of sweep/trials.rs; validation is off on 18.16),
# what it binds to each `?`, and how many rows the dataset must give.
SWEEP = {
    "arm_stats": (
        ["cfg_hash", "runs", "success_rate", "avg_cost_usd", "avg_tokens", "avg_wall_time_ms"],
        lambda s: [
            string_array(s, "SELECT DISTINCT cfg_hash FROM run_stops FINAL"),
            string_array(s, "SELECT DISTINCT task_id FROM run_stops FINAL"),
            "0",
            "0",
            "0",
        ],
        "SELECT count(DISTINCT cfg_hash) FROM run_stops FINAL WHERE isNotNull(success)",
    ),
    "trial_results": (
        ["run_id", "objective"],
        lambda s: [string_array(s, "SELECT DISTINCT toString(run_id) FROM optimizer_updates FINAL")],
        "SELECT count(DISTINCT run_id) FROM optimizer_updates FINAL WHERE notEmpty(trial_run_ids)",
    ),
}


def check_query_dir(session, directory, known, reader):
    """Runs each query file of `directory` (exactly the stems `known` names, each with its
    columns, its arguments and the SQL counting the rows it must give) over the loaded
    dataset; raises with every query that fails, answers with other columns than
    `reader` reads, or gives another number of rows. Returns the rows each gave."""
    files = sorted(directory.glob("*.sql"))
    if sorted(path.stem for path in files) != sorted(known):
        found = [path.name for path in files]
        raise RuntimeError(f"{directory} holds {found}; this check knows {sorted(known)}")
    failures = []
    answered = {}
    for path in files:
        columns, arguments, rows_sql = known[path.stem]
        sql = bind(path.read_text(encoding="utf-8"), arguments(session))
        try:
            got = list(csv.reader(io.StringIO(str(session.query(sql, "CSVWithNames")))))
        except Exception as e:  # chdb raises its own exception types
            failures.append(f"{path.stem}: {e}")
            continue
        expected_rows = count(session, rows_sql)
        rows = max(len(got) - 1, 0)
        if got and got[0] != columns:
            failures.append(f"{path.stem}: columns {got[0]}, {reader} reads {columns}")
        elif rows != expected_rows:
            failures.append(f"{path.stem}: {rows} rows, expected {expected_rows}")
        else:
            answered[path.stem] = rows
    if failures:
        raise RuntimeError("\n".join(failures))
    return answered


def stage_sweep_queries_run(session):
    """Stage: each query of `agent-runner sweep` runs over the loaded dataset and answers
    with the runner's columns, one row per config (judged runs) or per run."""
    answered = check_query_dir(session, SWEEP_QUERIES, SWEEP, "the runner")
    SWEEP_EXERCISED.update(stem for stem, rows in answered.items() if rows > 0)
    print(f"  sweep queries: {len(answered)} answer with the runner's columns")


# The viewer's queries: the columns its row types read (by name), what it binds to each
# `?`, and how many rows the dataset must give (the datasets hold no experiment: the
# experiments query must answer with its columns and no row).
def first(session, sql):
    return literal("String", str(session.query(sql, "CSV")).strip().strip('"'))


VIEWER = {
    "experiments": (
        ["experiment", "sweep", "policies", "started", "done", "infrastructure", "judged",
         "solved", "cost_usd", "unpriced", "planned", "first_start"],
        lambda s: ["''", "''"],
        "SELECT count(DISTINCT experiment) FROM run_starts FINAL WHERE isNotNull(experiment)",
    ),
    "runs": (
        ["id", "task_id", "policy_id", "experiment", "started", "stopped", "exit_status",
         "success", "cost_usd"],
        lambda s: ["'task'", first(s, "SELECT min(task_id) FROM run_starts FINAL"), "1000"],
        "SELECT count() FROM run_starts FINAL"
        " WHERE task_id = (SELECT min(task_id) FROM run_starts FINAL)",
    ),
    "run_events": (
        ["seq", "type", "raw"],
        lambda s: [first(s, "SELECT toString(min(run_id)) FROM run_starts FINAL")],
        "SELECT count() FROM events_raw FINAL"
        " WHERE run_id = (SELECT min(run_id) FROM run_starts FINAL)",
    ),
    "experiment_decisions": (
        ["experiment", "baseline", "candidate", "decision", "cs_low", "cs_high", "rounds",
         "alpha", "detect", "decided_ms"],
        lambda s: ["''", "''"],
        "SELECT count() FROM experiment_decisions FINAL",
    ),
    "run_experiment": (
        ["experiment"],
        lambda s: [first(s, "SELECT toString(min(run_id)) FROM run_starts FINAL")],
        "SELECT 1",
    ),
    "runs_version": (
        ["started", "finished", "last_stop", "last_validation"],
        lambda s: ["''", "''", "''", "''"],
        "SELECT 1",
    ),
}


def stage_viewer_queries_run(session):
    """Stage: each query of `bench-analysis serve` runs over the loaded dataset and
    answers with the columns the viewer reads and the rows expected."""
    answered = check_query_dir(session, VIEWER_QUERIES, VIEWER, "the viewer")
    print(f"  viewer queries: {len(answered)} answer with the viewer's columns")


# The sweep queries some dataset answered with rows (a dataset without a bayes sweep
# gives trial_results none); each must be answered with rows by one dataset at least.
SWEEP_EXERCISED = set()


def stage_every_sweep_query_answered_rows(_session):
    """Stage: every sweep query gave rows over some dataset, not only empty answers."""
    idle = sorted(set(SWEEP) - SWEEP_EXERCISED)
    if idle:
        raise RuntimeError(f"sweep queries no dataset answered with rows: {idle}")


def same_cell(actual, expected):
    # chdb writes NULL as \N and may print Bool as true/false; the Rust CSV has "" and 0/1.
    actual = {"\\N": "", "true": "1", "false": "0"}.get(actual, actual)
    if actual == expected:
        return True
    try:
        a, e = float(actual), float(expected)
    except ValueError:
        return False
    return math.isclose(a, e, rel_tol=1e-9, abs_tol=1e-12)


def stage_queries_match_clickhouse_18(directory):
    """Stage: every shipped query answers over the dataset of `directory` exactly as
    ClickHouse 18.16 did (`<directory>/expected/<query>.csv`)."""

    def stage(session):
        params = json.loads((directory / "params.json").read_text(encoding="utf-8"))
        files = sorted(QUERIES.glob("*.sql"))
        if not files:
            raise RuntimeError(f"no queries in {QUERIES}")
        failures = []
        for path in files:
            name = path.stem
            sql = render(path.read_text(encoding="utf-8"), params.get(name, {}))
            try:
                got = str(session.query(sql, "CSVWithNames"))
            except Exception as e:  # chdb raises its own exception types
                failures.append(f"{name}: {e}")
                continue
            expected_path = directory / "expected" / f"{name}.csv"
            expected = list(csv.reader(io.StringIO(expected_path.read_text(encoding="utf-8"))))
            actual = list(csv.reader(io.StringIO(got)))
            if len(actual) != len(expected):
                failures.append(
                    f"{name}: {len(actual) - 1} rows, expected {len(expected) - 1}\n{got}"
                )
                continue
            for i, (a_row, e_row) in enumerate(zip(actual, expected)):
                if len(a_row) != len(e_row) or not all(map(same_cell, a_row, e_row)):
                    failures.append(
                        f"{name}: line {i + 1} is {a_row}, expected {e_row} ({expected_path})"
                    )
                    break
        if failures:
            raise RuntimeError("\n".join(failures))
        print(f"  queries: {len(files)} answer as on 18.16")

    stage.__name__ = f"stage_queries_match_clickhouse_18[{directory.relative_to(HERE)}]"
    return stage


STAGES = [
    stage_migrations,
    stage_tables_read_with_final,
] + [
    stage
    for database, directory in DATASETS
    for stage in (
        stage_use_migrated_database(database),
        stage_load_dataset(directory),
        stage_queries_match_clickhouse_18(directory),
        stage_sweep_queries_run,
        stage_viewer_queries_run,
    )
] + [stage_every_sweep_query_answered_rows]


def main():
    from chdb import session as chdb_session

    with tempfile.TemporaryDirectory(prefix="chdb-check-") as path:
        sess = chdb_session.Session(path)
        version = str(sess.query("SELECT version()", "CSV")).strip().strip('"')
        print(f"chdb ClickHouse {version}")
        failed = False
        for stage in STAGES:
            try:
                stage(sess)
            except Exception as e:
                failed = True
                print(f"FAIL {stage.__name__}: {e}", file=sys.stderr)
        sess.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
