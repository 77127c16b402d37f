//! The cluster layout: the same migration files, rendered for a ClickHouse cluster of
//! Replicated tables under Distributed ones.
//!
//! On one server a migration runs as written. On a cluster (`[clickhouse] cluster`),
//! every table `<name>` of the files becomes two, so that inserts and every shipped query
//! keep using `<name>`:
//!
//! - `<name>_local` on every server (`ON CLUSTER`), the file's engine made Replicated
//!   (`ReplacingMergeTree(v)` → `ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/
//!   <database>/<name>_local', '{replica}', v)`): the rows of one shard, copied between its
//!   replicas through ZooKeeper;
//! - `<name>`, a `Distributed` table over the `_local` tables of all shards, with the
//!   same columns, except that a `MATERIALIZED` column is an `ALIAS` of the same
//!   expression there (18.16's synchronous distributed insert sends every column of the
//!   Distributed table, and a shard refuses values for a `MATERIALIZED` one; the shard
//!   computes it). Its sharding key is [`sharding_key`]: `run_id` where the table has
//!   one, so every copy of an event and every event of a run land on one shard, and
//!   `FINAL` (which deduplicates within a shard) and per-run queries stay exact.
//!
//! Statements are rendered by kind ([`render`]): `CREATE TABLE`, `ALTER TABLE` and
//! `RENAME TABLE` act on the `_local` tables, `DROP TABLE` drops both, a materialized
//! view reads and writes `_local` tables (it fires on the server that took the insert,
//! and its target replicates like any table), `INSERT` and guard queries run unchanged
//! through the Distributed tables. The Distributed tables are [`reconcile`]'s, run after
//! every statement: it creates the missing ones, recreates those whose columns no
//! longer match their `_local` table (a Distributed table cannot be altered
//! `ON CLUSTER` over replicated shards) and drops those left without one, which also
//! repairs a migration interrupted between its steps.
//!
//! `ALTER TABLE` goes `ON CLUSTER` [`Target::alter_cluster`]: a cluster listing one
//! replica of each shard, when the servers define one. ClickHouse 18.16 lets every replica
//! of a shard race to execute an `ALTER ... ON CLUSTER` of a Replicated table (it checks
//! whether another replica did it, then takes the shard's lock, and the other can finish in
//! between): the second replica executes it too, fails to record it ("Node exists") and
//! stops its DDL queue until the server restarts, so every later `ON CLUSTER` statement
//! waits for it in vain. With one replica per shard listed, only that one executes the
//! ALTER, and the Replicated table carries it to the other replicas.
//!
//! Every `ON CLUSTER` statement names its database: the servers that execute it do not
//! know the session database of the one that queued it. Each runs through [`execute`],
//! which waits for a server that is slower than `distributed_ddl_task_timeout`.

use std::time::{Duration, Instant};

use clickhouse::{Client, Row};
use serde::Deserialize;

use bench_clickhouse::sql::{self, Piece};
use bench_clickhouse::ClickHouseConfig;

/// Suffix of the shard-local table behind each Distributed table.
pub const LOCAL_SUFFIX: &str = "_local";

/// A migration statement the cluster layout cannot render.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot render for a cluster: {reason}: {statement}")]
pub struct RenderError {
    /// What is missing or unsupported.
    pub reason: &'static str,
    /// The statement's first line of SQL.
    pub statement: String,
}

/// Where migrations are applied: the database and the cluster it spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target<'a> {
    /// Cluster name in the servers' `remote_servers`.
    pub cluster: &'a str,
    /// The cluster `ALTER TABLE ... ON CLUSTER` goes to: one replica of each shard of
    /// [`Self::cluster`] (`[clickhouse] alter_cluster`), or the cluster itself.
    pub alter_cluster: &'a str,
    /// Database of the tables (the same name on every server).
    pub database: &'a str,
}

impl Target<'_> {
    /// Where migrations apply with `clickhouse`; `None` on one server.
    pub fn of(clickhouse: &ClickHouseConfig) -> Option<Target<'_>> {
        clickhouse.cluster.as_deref().map(|cluster| Target {
            cluster,
            alter_cluster: clickhouse.alter_cluster.as_deref().unwrap_or(cluster),
            database: &clickhouse.database,
        })
    }
}

/// The statements that carry out `statement` (one of a migration file, comments and
/// guard included) on the cluster, in order.
pub fn render(statement: &str, target: &Target<'_>) -> Result<Vec<String>, RenderError> {
    let code = code_of(statement);
    let fail = |reason| RenderError {
        reason,
        statement: code.lines().next().unwrap_or_default().to_owned(),
    };
    let words: Vec<&str> = code.split_whitespace().take(8).collect();
    match words.as_slice() {
        ["CREATE", "TABLE", "IF", "NOT", "EXISTS", ..] => create_table(&code, target)
            .map(|table| vec![table])
            .ok_or_else(|| fail("expected `CREATE TABLE IF NOT EXISTS name (columns) ENGINE = ...MergeTree(...) ... ORDER BY ...`")),
        ["CREATE", "MATERIALIZED", "VIEW", "IF", "NOT", "EXISTS", ..] => {
            materialized_view(&code, target)
                .map(|view| vec![view])
                .ok_or_else(|| fail("expected `CREATE MATERIALIZED VIEW IF NOT EXISTS name TO table AS SELECT ... FROM table`"))
        }
        ["DROP", "TABLE", "IF", "EXISTS", name] => {
            let name = name.trim_end_matches(';');
            Ok(vec![
                format!(
                    "DROP TABLE IF EXISTS {} ON CLUSTER {}",
                    qualified(target, name),
                    target.cluster
                ),
                format!(
                    "DROP TABLE IF EXISTS {} ON CLUSTER {}",
                    qualified(target, &local(name)),
                    target.cluster
                ),
            ])
        }
        ["ALTER", "TABLE", name, ..] => {
            let clauses = code
                .trim_start()
                .strip_prefix("ALTER")
                .and_then(|rest| rest.trim_start().strip_prefix("TABLE"))
                .and_then(|rest| rest.trim_start().strip_prefix(name))
                .ok_or_else(|| fail("expected `ALTER TABLE name ...`"))?;
            Ok(vec![format!(
                "ALTER TABLE {} ON CLUSTER {}{clauses}",
                qualified(target, &local(name)),
                target.alter_cluster
            )])
        }
        ["RENAME", "TABLE", ..] => rename(&code, target)
            .map(|rename| vec![rename])
            .ok_or_else(|| fail("expected `RENAME TABLE a TO b[, c TO d]`")),
        ["INSERT", ..] => Ok(vec![statement.to_owned()]),
        _ => Err(fail("unsupported statement")),
    }
}

/// The statement without its comment lines (guards and explanations).
fn code_of(statement: &str) -> String {
    statement
        .lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn local(name: &str) -> String {
    format!("{name}{LOCAL_SUFFIX}")
}

fn qualified(target: &Target<'_>, name: &str) -> String {
    format!("{}.{name}", target.database)
}

/// `CREATE TABLE IF NOT EXISTS name (columns) ENGINE = XMergeTree(args) rest` → the
/// Replicated `name_local` (the Distributed `name` is [`reconcile`]'s).
fn create_table(code: &str, target: &Target<'_>) -> Option<String> {
    let rest = code
        .trim_start()
        .strip_prefix("CREATE TABLE IF NOT EXISTS")?;
    let open = rest.find('(')?;
    let name = rest[..open].trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let close = open + matching_paren(&rest[open..])?;
    let columns = &rest[open..=close];
    let after = rest[close + 1..].trim_start().strip_prefix("ENGINE")?;
    let after = after.trim_start().strip_prefix('=')?.trim_start();
    let engine_end = after
        .find(|c: char| c == '(' || c.is_whitespace())
        .unwrap_or(after.len());
    let engine = &after[..engine_end];
    if !engine.ends_with("MergeTree") || engine.starts_with("Replicated") {
        return None;
    }
    let after = &after[engine_end..];
    let (args, settings) = match after.strip_prefix('(') {
        Some(inner) => {
            let end = matching_paren(after)?;
            (inner[..end - 1].trim(), &after[end + 1..])
        }
        None => ("", after),
    };
    // Without a sorting key the table could not be sharded by it.
    order_by(settings)?;
    let local_name = local(name);
    let zk_path = format!(
        "/clickhouse/tables/{{shard}}/{}/{local_name}",
        target.database
    );
    let replicated_args = if args.is_empty() {
        format!("'{zk_path}', '{{replica}}'")
    } else {
        format!("'{zk_path}', '{{replica}}', {args}")
    };
    Some(format!(
        "CREATE TABLE IF NOT EXISTS {} ON CLUSTER {} {columns}\nENGINE = Replicated{engine}({replicated_args}){settings}",
        qualified(target, &local_name),
        target.cluster
    ))
}

/// `CREATE TABLE` of the Distributed table `name` over `name_local`, whose columns are
/// `columns`.
fn distributed(target: &Target<'_>, name: &str, columns: &[&Column]) -> String {
    let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    let sorting: Vec<String> = columns
        .iter()
        .filter(|c| c.is_in_sorting_key == 1)
        .map(|c| c.name.clone())
        .collect();
    let definitions: Vec<String> = columns
        .iter()
        .map(|c| {
            let (kind, expression) = distributed_default(c);
            match kind {
                "" => format!("`{}` {}", c.name, c.r#type),
                kind => format!("`{}` {} {kind} {expression}", c.name, c.r#type),
            }
        })
        .collect();
    format!(
        "CREATE TABLE IF NOT EXISTS {} ON CLUSTER {} ({}) ENGINE = Distributed({}, {}, {}, {})",
        qualified(target, name),
        target.cluster,
        definitions.join(", "),
        target.cluster,
        target.database,
        local(name),
        sharding_key(&names, &sorting)
    )
}

/// How a column of a `_local` table is declared in its Distributed table: the same,
/// except `MATERIALIZED` → `ALIAS` (see the module docs).
fn distributed_default(column: &Column) -> (&str, &str) {
    let kind = match column.default_kind.as_str() {
        "MATERIALIZED" => "ALIAS",
        kind => kind,
    };
    (kind, column.default_expression.as_str())
}

/// The byte offset of the `)` closing the `(` that `text` starts with. Parentheses in
/// quotes and comments do not count ([`sql::pieces`]).
fn matching_paren(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (_, range) in sql::pieces(text)
        .into_iter()
        .filter(|(piece, _)| *piece == Piece::Code)
    {
        for (at, c) in text[range.clone()].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(range.start + at);
                    }
                }
                _ => {}
            }
        }
    }
    None
}

/// The columns of `ORDER BY col` or `ORDER BY (a, b)` in the text after the engine.
fn order_by(settings: &str) -> Option<Vec<String>> {
    let rest = &settings[settings.find("ORDER BY")? + "ORDER BY".len()..];
    let rest = rest.trim_start();
    let list = match rest.strip_prefix('(') {
        Some(inner) => &inner[..inner.find(')')?],
        None => rest.split(|c: char| c.is_whitespace() || c == ';').next()?,
    };
    let columns: Vec<String> = list
        .split(',')
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect();
    (!columns.is_empty()).then_some(columns)
}

/// The Distributed table's sharding key: `run_id` when the table has one (every copy of
/// an event, and every event of a run, on one shard), else its sorting key (the copies
/// `FINAL` folds into one row are on one shard). Hashed as text: 18.16 hashes no UUID.
pub fn sharding_key(columns: &[String], order_by: &[String]) -> String {
    let key: Vec<String> = if columns.iter().any(|c| c == "run_id") {
        vec!["toString(run_id)".into()]
    } else {
        order_by.iter().map(|c| format!("toString({c})")).collect()
    };
    format!("sipHash64({})", key.join(", "))
}

/// `CREATE MATERIALIZED VIEW IF NOT EXISTS v TO t AS SELECT ... FROM s` → the same view
/// on every server, from `s_local` to `t_local`.
fn materialized_view(code: &str, target: &Target<'_>) -> Option<String> {
    let rest = code
        .trim_start()
        .strip_prefix("CREATE MATERIALIZED VIEW IF NOT EXISTS")?;
    let mut words = rest.split_whitespace();
    let (view, to, table) = (words.next()?, words.next()?, words.next()?);
    if to != "TO" {
        return None;
    }
    let select = rest[rest.find(" TO ")? + " TO ".len()..]
        .trim_start()
        .strip_prefix(table)?
        .trim_start()
        .strip_prefix("AS")?;
    let from = select.rfind("FROM ")?;
    let source = select[from + "FROM ".len()..].trim().trim_end_matches(';');
    if source.is_empty() || source.contains(char::is_whitespace) {
        return None;
    }
    Some(format!(
        "CREATE MATERIALIZED VIEW IF NOT EXISTS {} ON CLUSTER {} TO {} AS{}FROM {}",
        qualified(target, view),
        target.cluster,
        qualified(target, &local(table)),
        &select[..from],
        qualified(target, &local(source))
    ))
}

/// `RENAME TABLE a TO b, c TO d` → the same renames of the `_local` tables.
fn rename(code: &str, target: &Target<'_>) -> Option<String> {
    let pairs = code.trim_start().strip_prefix("RENAME TABLE")?;
    let renames = pairs
        .split(',')
        .map(
            |pair| match pair.split_whitespace().collect::<Vec<_>>()[..] {
                [from, "TO", to] => Some(format!(
                    "{} TO {}",
                    qualified(target, &local(from)),
                    qualified(target, &local(to))
                )),
                _ => None,
            },
        )
        .collect::<Option<Vec<_>>>()?;
    Some(format!(
        "RENAME TABLE {} ON CLUSTER {}",
        renames.join(", "),
        target.cluster
    ))
}

/// One column as `system.columns` describes it.
#[derive(Debug, Row, Deserialize, PartialEq, Eq)]
struct Column {
    table: String,
    name: String,
    r#type: String,
    default_kind: String,
    default_expression: String,
    is_in_sorting_key: u8,
}

/// One table as `system.tables` lists it.
#[derive(Debug, Row, Deserialize)]
struct TableRow {
    name: String,
    engine: String,
}

/// Makes every Distributed table of the database match its `_local` table: created when
/// missing, recreated when the columns differ (after `ALTER` or `RENAME` of the local
/// table), dropped when the local table is gone. Idempotent.
pub async fn reconcile(db: &Client, target: &Target<'_>) -> Result<(), DdlError> {
    let tables = db
        .query("SELECT name, engine FROM system.tables WHERE database = currentDatabase()")
        .fetch_all::<TableRow>()
        .await?;
    // Each table's columns come in definition order (18.16 has no `position` to sort by).
    let columns = db
        .query(
            "SELECT table, name, type, default_kind, default_expression, \
             toUInt8(is_in_sorting_key) FROM system.columns \
             WHERE database = currentDatabase()",
        )
        .fetch_all::<Column>()
        .await?;
    let of =
        |table: &str| -> Vec<&Column> { columns.iter().filter(|c| c.table == table).collect() };
    let is_local =
        |t: &TableRow| t.engine.starts_with("Replicated") && t.name.ends_with(LOCAL_SUFFIX);
    // The Distributed table `name` as it should be, compared by name, type and default.
    let matches = |name: &str, local_columns: &[&Column]| {
        let want = local_columns
            .iter()
            .map(|c| (c.name.as_str(), c.r#type.as_str(), distributed_default(c)));
        let have = of(name).into_iter().map(|c| {
            (
                c.name.as_str(),
                c.r#type.as_str(),
                (c.default_kind.as_str(), c.default_expression.as_str()),
            )
        });
        want.eq(have)
    };
    for table in tables.iter().filter(|t| t.engine == "Distributed") {
        let local_name = local(&table.name);
        let backed = tables.iter().any(|t| is_local(t) && t.name == local_name);
        if !backed || !matches(&table.name, &of(&local_name)) {
            execute(
                db,
                &format!(
                    "DROP TABLE IF EXISTS {} ON CLUSTER {}",
                    qualified(target, &table.name),
                    target.cluster
                ),
            )
            .await?;
        }
    }
    for table in tables.iter().filter(|t| is_local(t)) {
        let name = &table.name[..table.name.len() - LOCAL_SUFFIX.len()];
        let local_columns = of(&table.name);
        let exists = tables
            .iter()
            .any(|t| t.name == name && t.engine == "Distributed");
        if exists && matches(name, &local_columns) {
            continue;
        }
        execute(db, &distributed(target, name, &local_columns)).await?;
    }
    Ok(())
}

/// ClickHouse's TIMEOUT_EXCEEDED: what an `ON CLUSTER` statement answers when a server has
/// not finished it within `distributed_ddl_task_timeout`.
const TIMEOUT_EXCEEDED: u32 = 159;

/// How long [`execute`] goes on waiting, after ClickHouse's own
/// `distributed_ddl_task_timeout` (180 s by default), for the servers that have not
/// finished an `ON CLUSTER` statement.
pub const DDL_PATIENCE: Duration = Duration::from_secs(300);

/// How often [`execute`] looks at the servers' progress while it waits.
const DDL_POLL: Duration = Duration::from_millis(500);

/// Why a statement sent by the migrations failed.
#[derive(Debug, thiserror::Error)]
pub enum DdlError {
    /// ClickHouse refused it or could not be reached.
    #[error(transparent)]
    ClickHouse(#[from] clickhouse::error::Error),
    /// A server executed an `ON CLUSTER` statement after its timeout, and failed.
    #[error("ON CLUSTER task {task} failed on {host}: {message}")]
    FailedOn {
        /// The statement's ZooKeeper task.
        task: String,
        /// The server, as the task names it (`host:port`, URL-encoded).
        host: String,
        /// The server's error: `code` and message, as it recorded them.
        message: String,
    },
    /// Servers had still not executed an `ON CLUSTER` statement when [`DDL_PATIENCE`]
    /// ran out after its timeout.
    #[error(
        "ON CLUSTER task {task}: {finished} of {hosts} servers executed it, \
         {DDL_PATIENCE:?} after distributed_ddl_task_timeout; is a server down? \
         It runs when the server is back; migrate again then"
    )]
    Unfinished {
        /// The statement's ZooKeeper task.
        task: String,
        /// Servers that executed it.
        finished: usize,
        /// Servers that must.
        hosts: usize,
    },
}

/// Runs `sql` and, for an `ON CLUSTER` statement, waits until every server executed it.
///
/// ClickHouse waits for the servers up to `distributed_ddl_task_timeout`, then answers
/// TIMEOUT_EXCEEDED and leaves the statement to the servers that have not executed it
/// yet ("they are going to execute the query in background"). On a loaded machine that
/// is a slow server, not a failure: the statement's task is then followed in ZooKeeper
/// (`system.zookeeper`, its `finished` node per server) until every server listed in it
/// has executed it, for up to [`DDL_PATIENCE`] more, and a server's own error is
/// returned as [`DdlError::FailedOn`]. The migrations run one statement after another,
/// so the next one never starts before every server has this one.
pub async fn execute(db: &Client, sql: &str) -> Result<(), DdlError> {
    let Err(error) = db.query(sql).execute().await else {
        return Ok(());
    };
    let Some(task) = left_in_background(&error) else {
        return Err(error.into());
    };
    let hosts = task_hosts(db, &task).await?;
    if hosts == 0 {
        // A task whose servers cannot be read: nothing to wait for is known.
        return Err(error.into());
    }
    tracing::warn!(
        task,
        "an ON CLUSTER statement outlasted distributed_ddl_task_timeout; waiting up to \
         {DDL_PATIENCE:?} more for the servers still executing it"
    );
    let started = Instant::now();
    loop {
        let finished = db
            .query("SELECT name, value FROM system.zookeeper WHERE path = ?")
            .bind(format!("{task}/finished"))
            .fetch_all::<ZkNode>()
            .await?;
        if let Some(failed) = finished.iter().find(|node| !succeeded(&node.value)) {
            return Err(DdlError::FailedOn {
                task,
                host: failed.name.clone(),
                message: failed.value.trim().replace('\n', " "),
            });
        }
        if finished.len() >= hosts {
            return Ok(());
        }
        if started.elapsed() >= DDL_PATIENCE {
            return Err(DdlError::Unfinished {
                task,
                finished: finished.len(),
                hosts,
            });
        }
        tokio::time::sleep(DDL_POLL).await;
    }
}

/// A node of `system.zookeeper`.
#[derive(Debug, Row, Deserialize)]
struct ZkNode {
    name: String,
    value: String,
}

/// The ZooKeeper path of the task an `ON CLUSTER` statement's timeout left to the
/// servers, when `error` is that timeout (`Watching task <path> is executing longer than
/// distributed_ddl_task_timeout ...`).
fn left_in_background(error: &clickhouse::error::Error) -> Option<String> {
    if crate::failure::clickhouse_code(error) != Some(TIMEOUT_EXCEEDED) {
        return None;
    }
    let text = error.to_string();
    let rest = &text[text.find("Watching task ")? + "Watching task ".len()..];
    let task = rest.split_whitespace().next()?;
    (task.starts_with('/') && rest.contains("distributed_ddl_task_timeout"))
        .then(|| task.to_owned())
}

/// How many servers must execute `task`: the entries of the `hosts: [...]` line of its
/// ZooKeeper node.
async fn task_hosts(db: &Client, task: &str) -> Result<usize, DdlError> {
    let (parent, name) = task.rsplit_once('/').unwrap_or(("", task));
    let node = db
        .query("SELECT name, value FROM system.zookeeper WHERE path = ? AND name = ?")
        .bind(parent)
        .bind(name)
        .fetch_one::<ZkNode>()
        .await?;
    Ok(count_hosts(&node.value))
}

/// The number of servers on the `hosts: ['a:1','b:2']` line of a task's text (host
/// names are URL-encoded there, so they hold no quote or comma).
fn count_hosts(task_text: &str) -> usize {
    task_text
        .lines()
        .find_map(|line| line.strip_prefix("hosts: "))
        .map_or(0, |hosts| hosts.matches('\'').count() / 2)
}

/// Whether a server's `finished` node says it executed the statement: its first line is
/// the error code, 0 for none.
fn succeeded(status: &str) -> bool {
    status.lines().next().map(str::trim) == Some("0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_names_the_task_left_to_the_servers() {
        let timeout = clickhouse::error::Error::BadResponse(
            "Code: 159, e.displayText() = DB::Exception: Watching task \
             /clickhouse/task_queue/ddl/query-0000000211 is executing longer than \
             distributed_ddl_task_timeout (=180) seconds. There are 1 unfinished hosts (1 of \
             them are currently active), they are going to execute the query in background, \
             e.what() = DB::Exception"
                .into(),
        );
        assert_eq!(
            left_in_background(&timeout).as_deref(),
            Some("/clickhouse/task_queue/ddl/query-0000000211")
        );
        let other_timeout = clickhouse::error::Error::BadResponse(
            "Code: 159, e.displayText() = DB::Exception: Timeout exceeded: elapsed 5 seconds"
                .into(),
        );
        assert_eq!(left_in_background(&other_timeout), None);
        let refused = clickhouse::error::Error::BadResponse(
            "Code: 57, e.displayText() = DB::Exception: Table already exists".into(),
        );
        assert_eq!(left_in_background(&refused), None);
    }

    #[test]
    fn a_tasks_hosts_and_statuses_are_read_from_its_nodes() {
        let task = "version: 1\nquery: DROP TABLE IF EXISTS db.t ON CLUSTER c\n\
                    hosts: ['127%2E0%2E0%2E1:9131','127%2E0%2E0%2E1:9132','h:9133']\n\
                    initiator: vm:9131\n";
        assert_eq!(count_hosts(task), 3);
        assert_eq!(count_hosts("version: 1\n"), 0);
        assert!(succeeded("0\n"));
        assert!(!succeeded("60\nTable db.t doesn't exist.\n"));
    }

    const TARGET: Target<'static> = Target {
        cluster: "benchstream",
        alter_cluster: "benchstream_alter",
        database: "db",
    };

    #[test]
    fn a_table_becomes_a_replicated_local_table() {
        let sql = "-- events\nCREATE TABLE IF NOT EXISTS steps\n(\n    event_id UUID,\n    \
                   -- the run (a comment)\n    run_id UUID,\n    precedence UInt64 MATERIALIZED bitNot(ifNull(s, 0))\n)\n\
                   ENGINE = ReplacingMergeTree(precedence)\nPARTITION BY toYear(ts)\nORDER BY (run_id, event_id)";
        let rendered = render(sql, &TARGET).expect("renders");
        assert_eq!(rendered.len(), 1);
        assert!(rendered[0]
            .starts_with("CREATE TABLE IF NOT EXISTS db.steps_local ON CLUSTER benchstream (\n"));
        assert!(rendered[0].ends_with(
            "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/db/steps_local', \
             '{replica}', precedence)\nPARTITION BY toYear(ts)\nORDER BY (run_id, event_id)"
        ));
        let sql = "CREATE TABLE IF NOT EXISTS d\n(\n    stream String\n)\nENGINE = MergeTree\nORDER BY stream";
        assert!(render(sql, &TARGET).expect("renders")[0].contains(
            "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/db/d_local', '{replica}')\n"
        ));
    }

    fn column(name: &str, kind: &str, expression: &str, sorting: bool) -> Column {
        Column {
            table: "steps_local".into(),
            name: name.into(),
            r#type: "UInt64".into(),
            default_kind: kind.into(),
            default_expression: expression.into(),
            is_in_sorting_key: u8::from(sorting),
        }
    }

    #[test]
    fn distributed_tables_alias_materialized_columns_and_shard_by_run() {
        let columns = [
            column("run_id", "", "", true),
            column("event_id", "", "", true),
            column("protocol", "DEFAULT", "'benchstream'", false),
            column("precedence", "MATERIALIZED", "bitNot(s)", false),
        ];
        let refs: Vec<&Column> = columns.iter().collect();
        assert_eq!(
            distributed(&TARGET, "steps", &refs),
            "CREATE TABLE IF NOT EXISTS db.steps ON CLUSTER benchstream (`run_id` UInt64, \
             `event_id` UInt64, `protocol` UInt64 DEFAULT 'benchstream', `precedence` UInt64 \
             ALIAS bitNot(s)) ENGINE = Distributed(benchstream, db, steps_local, \
             sipHash64(toString(run_id)))"
        );
    }

    #[test]
    fn tables_without_run_id_are_sharded_by_their_sorting_key() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            sharding_key(&names(&["version", "name"]), &names(&["version"])),
            "sipHash64(toString(version))"
        );
        assert_eq!(
            sharding_key(
                &names(&["stream", "stream_seq"]),
                &names(&["stream", "stream_seq"])
            ),
            "sipHash64(toString(stream), toString(stream_seq))"
        );
    }

    #[test]
    fn alter_rename_and_drop_act_on_local_tables() {
        let alter =
            "-- nullable\nALTER TABLE run_stops\n    MODIFY COLUMN host Nullable(String),\n    \
                     MODIFY COLUMN turns Nullable(UInt32)";
        assert_eq!(
            render(alter, &TARGET).expect("renders"),
            vec![
                "ALTER TABLE db.run_stops_local ON CLUSTER benchstream_alter\n    MODIFY COLUMN host \
                  Nullable(String),\n    MODIFY COLUMN turns Nullable(UInt32)"
            ]
        );
        let guarded = "-- only if: SELECT 1\nALTER TABLE steps ADD COLUMN planned UInt8 AFTER x";
        assert_eq!(
            render(guarded, &TARGET).expect("renders"),
            vec!["ALTER TABLE db.steps_local ON CLUSTER benchstream_alter ADD COLUMN planned UInt8 AFTER x"]
        );
        assert_eq!(
            render("RENAME TABLE a TO a_old, a_new TO a", &TARGET).expect("renders"),
            vec![
                "RENAME TABLE db.a_local TO db.a_old_local, db.a_new_local TO db.a_local \
                  ON CLUSTER benchstream"
            ]
        );
        assert_eq!(
            render("DROP TABLE IF EXISTS a_old", &TARGET).expect("renders"),
            vec![
                "DROP TABLE IF EXISTS db.a_old ON CLUSTER benchstream",
                "DROP TABLE IF EXISTS db.a_old_local ON CLUSTER benchstream"
            ]
        );
    }

    #[test]
    fn views_and_inserts() {
        let view = "CREATE MATERIALIZED VIEW IF NOT EXISTS feed TO ids AS\nSELECT event_id, \
                    sipHash64(raw) AS h\nFROM events_raw";
        assert_eq!(
            render(view, &TARGET).expect("renders"),
            vec![
                "CREATE MATERIALIZED VIEW IF NOT EXISTS db.feed ON CLUSTER benchstream TO \
                  db.ids_local AS\nSELECT event_id, sipHash64(raw) AS h\nFROM db.events_raw_local"
            ]
        );
        let insert = "-- only if: SELECT 1\nINSERT INTO a SELECT * FROM b";
        assert_eq!(render(insert, &TARGET).expect("renders"), vec![insert]);
    }

    #[test]
    fn parentheses_in_quotes_and_comments_do_not_count() {
        let text = "(a /* ) */, 'it''s )', -- )\n b) ENGINE";
        assert_eq!(matching_paren(text), text.find(") ENGINE"));
        assert_eq!(matching_paren("(a, (b)"), None);
    }

    #[test]
    fn what_cannot_be_rendered_is_refused() {
        for sql in [
            "CREATE TABLE IF NOT EXISTS m (a UInt8) ENGINE = Memory",
            "CREATE TABLE t (a UInt8) ENGINE = MergeTree ORDER BY a",
            "CREATE TABLE IF NOT EXISTS t (a UInt8) ENGINE = MergeTree",
            "OPTIMIZE TABLE t FINAL",
        ] {
            assert!(render(sql, &TARGET).is_err(), "{sql}");
        }
    }
}
