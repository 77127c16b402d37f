//! Versioned ClickHouse schema: the files of `deploy/clickhouse/migrations/`, embedded at
//! build time, applied in order and recorded in `schema_migrations`.
//!
//! Every statement is idempotent, so applying a migration twice (a crash between applying
//! and recording) is harmless: it is `CREATE ... IF NOT EXISTS` (tables and materialized
//! views), `DROP ... IF EXISTS`, an `ALTER TABLE` made only of `MODIFY COLUMN` clauses
//! (changing a column to the type it has is a no-op), or guarded. A guarded statement
//! starts with a comment
//! line `-- only if: <SELECT>`; the statement runs only when that query answers non-zero
//! (e.g. "this table still has its old shape"), which is how a migration that copies a
//! table into a new shape runs once and is still safe to re-run after a crash. A recorded
//! migration whose file changed since is refused: the schema it describes may not be the
//! one in the database. The same files, statement splitting and guards are checked
//! against current ClickHouse by `deploy/clickhouse/chdb_check.py`.
//!
//! On a cluster the same files are rendered by [`crate::cluster`] (Replicated `_local`
//! tables under Distributed ones, `ON CLUSTER`), then recorded and checksummed the same
//! way; the migration lock is then a Replicated table, so it is one lock for the cluster.
//!
//! This module runs the migration files and nothing else; the only data they move is
//! what a table rebuild copies.

use std::time::{Duration, Instant};

use clickhouse::{Client, Row};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::cluster::{self, DdlError, RenderError, Target};
use crate::failure;
use crate::rows::datetime;
use bench_clickhouse::sql::{self, Piece};

/// One migration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// `NNNN` of `NNNN_name.sql`.
    pub version: u32,
    /// The file name without `.sql`: `NNNN_name`.
    pub stem: &'static str,
    /// The file's text.
    pub sql: &'static str,
}

macro_rules! migration {
    ($version:literal, $stem:literal) => {
        Migration {
            version: $version,
            stem: $stem,
            sql: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../deploy/clickhouse/migrations/",
                $stem,
                ".sql"
            )),
        }
    };
}

/// Every migration, in version order. A new file is added here with the next number.
pub const MIGRATIONS: &[Migration] = &[
    migration!(1, "0001_schema_migrations"),
    migration!(2, "0002_events_raw"),
    migration!(3, "0003_dead_letters"),
    migration!(4, "0004_typed_events"),
    migration!(5, "0005_bounded_first_write_wins"),
    migration!(6, "0006_smith_nullable"),
    migration!(7, "0007_unknown_run_results"),
    migration!(8, "0008_unknown_call_tokens"),
    migration!(9, "0009_unknown_step_tokens"),
    migration!(10, "0010_run_start_sweep"),
    migration!(11, "0011_unknown_counts_and_seed"),
    migration!(12, "0012_unstated_run_config"),
    migration!(13, "0013_test_outcomes"),
    migration!(14, "0014_run_start_sandbox_kind"),
    migration!(15, "0015_tool_call_id"),
    migration!(16, "0016_unmeasured_step_times"),
    migration!(17, "0017_task_validations"),
    migration!(18, "0018_unmeasured_call_times"),
    migration!(19, "0019_submission_integrity"),
    migration!(20, "0020_run_start_experiment"),
    migration!(21, "0021_run_start_image"),
    migration!(22, "0022_genai_events"),
    migration!(23, "0023_trial_outcomes"),
    migration!(24, "0024_experiment_decisions"),
    migration!(25, "0025_run_stop_final_diff"),
    migration!(26, "0026_decision_detect"),
];

impl Migration {
    /// `name` of `NNNN_name.sql`.
    pub fn name(&self) -> &'static str {
        self.stem
            .split_once('_')
            .map_or(self.stem, |(_, name)| name)
    }

    /// SHA-256 (hex) of the file, recorded when it is applied.
    pub fn checksum(&self) -> String {
        hex::encode(Sha256::digest(self.sql.as_bytes()))
    }

    /// The file's statements, in order.
    pub fn statements(&self) -> Vec<&'static str> {
        split_statements(self.sql)
    }
}

/// Comment line that makes the statement after it conditional (see module docs).
const GUARD: &str = "-- only if:";

/// The guard query of a statement: the text after `-- only if:` on its first such line.
pub fn guard(statement: &str) -> Option<&str> {
    statement
        .lines()
        .find_map(|line| line.trim_start().strip_prefix(GUARD))
        .map(str::trim)
}

/// Why migrating failed.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    /// ClickHouse refused a statement or could not be reached.
    #[error("migration {stem} failed: {source}")]
    Statement {
        /// The migration file's stem (`0001_init`).
        stem: &'static str,
        /// ClickHouse's answer, or a server's that executed the statement late.
        #[source]
        source: DdlError,
    },
    /// The Distributed tables could not be brought in line with their `_local` tables
    /// before migrating.
    #[error("cannot reconcile the Distributed tables: {0}")]
    Reconcile(#[source] DdlError),
    /// Reading or writing `schema_migrations` failed.
    #[error("cannot access schema_migrations: {0}")]
    Bookkeeping(#[source] clickhouse::error::Error),
    /// Creating the database failed.
    #[error("cannot create database {database}: {source}")]
    Database {
        /// The database.
        database: String,
        /// ClickHouse's answer.
        #[source]
        source: DdlError,
    },
    /// The file of an applied migration changed after it ran.
    #[error(
        "migration {stem} was applied with checksum {recorded} but the file now has \
         {current}; migrations must not be edited once applied, add a new one"
    )]
    ChecksumMismatch {
        /// The migration file's stem.
        stem: &'static str,
        /// The checksum recorded when it was applied.
        recorded: String,
        /// The checksum of the file now.
        current: String,
    },
    /// A statement has no cluster rendering.
    #[error("migration {stem}: {source}")]
    Cluster {
        /// The migration file's stem.
        stem: &'static str,
        /// Why the statement cannot be rendered.
        #[source]
        source: RenderError,
    },
    /// Another sink held the migration lock for too long.
    #[error(
        "another sink has been migrating for {waited:?} (table schema_migrations_lock \
         exists); if none is running, DROP TABLE schema_migrations_lock and start again"
    )]
    Locked {
        /// How long this sink waited.
        waited: Duration,
    },
}

/// A `schema_migrations` row.
#[derive(Debug, Row, Serialize, Deserialize)]
struct AppliedRow {
    version: u32,
    name: String,
    checksum: String,
    applied_at: u32,
}

/// Creates `database` if this server does not have it (on a cluster: on every server,
/// with `ON CLUSTER`). `server` must not select a database (the HTTP interface refuses
/// requests naming a database that does not exist yet).
///
/// When this server has it, nothing is sent: an `ON CLUSTER` statement waits for every
/// server of the cluster (up to `distributed_ddl_task_timeout`, 180 s by default), so a
/// sink restarting while one replica is down would not start at all. A server added to
/// the cluster later gets the database from the first sink that talks to it.
pub async fn ensure_database(
    server: &Client,
    database: &str,
    cluster: Option<&str>,
) -> Result<(), MigrationError> {
    let error = |source| MigrationError::Database {
        database: database.to_owned(),
        source,
    };
    let exists = server
        .query("SELECT count() FROM system.databases WHERE name = ?")
        .bind(database)
        .fetch_one::<u64>()
        .await
        .map_err(|e| error(e.into()))?;
    if exists == 0 {
        let on_cluster = cluster.map_or(String::new(), |c| format!(" ON CLUSTER {c}"));
        let create = format!(
            "CREATE DATABASE IF NOT EXISTS {}{on_cluster}",
            quote_identifier(database)
        );
        cluster::execute(server, &create).await.map_err(error)?;
    }
    Ok(())
}

/// Applies every migration not yet recorded, in order, and records it. Returns the
/// versions applied by this call.
///
/// Sinks starting together take turns: the one that creates the lock table
/// [`LOCK_TABLE`] migrates, the others wait for it (up to [`LOCK_WAIT`]) and then find
/// nothing left to do. Without that, two sinks rebuilding the same table would drop each
/// other's copies. `cluster`: the cluster layout ([`crate::cluster`]); `None` on one server.
pub async fn migrate(
    db: &Client,
    cluster: Option<&Target<'_>>,
) -> Result<Vec<u32>, MigrationError> {
    apply(db, MIGRATIONS, cluster).await
}

/// [`migrate`] with another list of migrations (in version order): [`MIGRATIONS`] plus
/// one under test, for example.
pub async fn apply(
    db: &Client,
    migrations: &'static [Migration],
    cluster: Option<&Target<'_>>,
) -> Result<Vec<u32>, MigrationError> {
    if let Some(target) = cluster {
        // Finishes what an interrupted migration left (a Distributed table not matching
        // its local table), before guards read the Distributed tables' columns.
        cluster::reconcile(db, target)
            .await
            .map_err(MigrationError::Reconcile)?;
    }
    if pending(migrations, &applied(db).await?)?.is_empty() {
        return Ok(Vec::new());
    }
    lock(db, cluster).await?;
    let result = apply_pending(db, migrations, cluster).await;
    if let Err(e) = db
        .query(&format!("DROP TABLE IF EXISTS {LOCK_TABLE}"))
        .execute()
        .await
    {
        tracing::error!(error = %e, "cannot drop {LOCK_TABLE}; drop it by hand");
    }
    result
}

/// The table whose existence means "a sink is migrating this database".
pub const LOCK_TABLE: &str = "schema_migrations_lock";

/// How long a sink waits for another one's migration before giving up.
pub const LOCK_WAIT: Duration = Duration::from_secs(600);

/// Takes the migration lock: `CREATE TABLE` without `IF NOT EXISTS` succeeds for exactly
/// one caller. On a cluster the table is Replicated under one fixed ZooKeeper path and
/// replica name, so a sink on another server fails to create it too
/// (REPLICA_IS_ALREADY_EXIST) until the holder drops it.
async fn lock(db: &Client, cluster: Option<&Target<'_>>) -> Result<(), MigrationError> {
    let engine = match cluster {
        None => "Memory".to_owned(),
        Some(target) => format!(
            "ReplicatedMergeTree('/clickhouse/locks/{}/{LOCK_TABLE}', 'holder') ORDER BY since",
            target.database
        ),
    };
    let started = Instant::now();
    loop {
        let created = db
            .query(&format!(
                "CREATE TABLE {LOCK_TABLE} (since DateTime DEFAULT now()) ENGINE = {engine}"
            ))
            .execute()
            .await;
        match created {
            Ok(()) => return Ok(()),
            Err(e)
                if matches!(
                    failure::clickhouse_code(&e),
                    Some(TABLE_ALREADY_EXISTS | REPLICA_IS_ALREADY_EXIST)
                ) =>
            {
                if started.elapsed() >= LOCK_WAIT {
                    return Err(MigrationError::Locked { waited: LOCK_WAIT });
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => return Err(MigrationError::Bookkeeping(e)),
        }
    }
}

/// ClickHouse's TABLE_ALREADY_EXISTS exception code.
const TABLE_ALREADY_EXISTS: u32 = 57;
/// ClickHouse's REPLICA_IS_ALREADY_EXIST exception code.
const REPLICA_IS_ALREADY_EXIST: u32 = 253;

/// The migrations not yet recorded in `applied`; fails on an edited one.
fn pending(
    migrations: &'static [Migration],
    applied: &[AppliedRow],
) -> Result<Vec<&'static Migration>, MigrationError> {
    let mut pending = Vec::new();
    for migration in migrations {
        match applied.iter().find(|r| r.version == migration.version) {
            Some(row) if row.checksum != migration.checksum() => {
                return Err(MigrationError::ChecksumMismatch {
                    stem: migration.stem,
                    recorded: row.checksum.clone(),
                    current: migration.checksum(),
                })
            }
            Some(_) => {}
            None => pending.push(migration),
        }
    }
    Ok(pending)
}

/// Applies and records what is still pending; run under the lock.
async fn apply_pending(
    db: &Client,
    migrations: &'static [Migration],
    cluster: Option<&Target<'_>>,
) -> Result<Vec<u32>, MigrationError> {
    let mut done = Vec::new();
    for migration in pending(migrations, &applied(db).await?)? {
        let failed = |source| MigrationError::Statement {
            stem: migration.stem,
            source,
        };
        for statement in migration.statements() {
            if let Some(condition) = guard(statement) {
                if db
                    .query(condition)
                    .fetch_one::<u8>()
                    .await
                    .map_err(|e| failed(e.into()))?
                    == 0
                {
                    continue;
                }
            }
            let Some(target) = cluster else {
                db.query(statement)
                    .execute()
                    .await
                    .map_err(|e| failed(e.into()))?;
                continue;
            };
            let rendered =
                cluster::render(statement, target).map_err(|source| MigrationError::Cluster {
                    stem: migration.stem,
                    source,
                })?;
            for part in rendered {
                cluster::execute(db, &part).await.map_err(failed)?;
            }
            cluster::reconcile(db, target).await.map_err(failed)?;
        }
        record(db, migration, migration.checksum()).await?;
        tracing::info!(migration = migration.stem, "migration applied");
        done.push(migration.version);
    }
    Ok(done)
}

/// The recorded migrations; none when `schema_migrations` does not exist yet.
async fn applied(db: &Client) -> Result<Vec<AppliedRow>, MigrationError> {
    let exists = db
        .query(
            "SELECT count() FROM system.tables \
             WHERE database = currentDatabase() AND name = 'schema_migrations'",
        )
        .fetch_one::<u64>()
        .await
        .map_err(MigrationError::Bookkeeping)?;
    if exists == 0 {
        return Ok(Vec::new());
    }
    db.query(
        "SELECT version, name, checksum, toUInt32(applied_at) \
         FROM schema_migrations FINAL ORDER BY version",
    )
    .fetch_all::<AppliedRow>()
    .await
    .map_err(MigrationError::Bookkeeping)
}

async fn record(
    db: &Client,
    migration: &Migration,
    checksum: String,
) -> Result<(), MigrationError> {
    let row = AppliedRow {
        version: migration.version,
        name: migration.name().to_owned(),
        checksum,
        applied_at: datetime(chrono::Utc::now().timestamp()),
    };
    let mut insert = db
        .insert::<AppliedRow>("schema_migrations")
        .await
        .map_err(MigrationError::Bookkeeping)?;
    insert
        .write(&row)
        .await
        .map_err(MigrationError::Bookkeeping)?;
    insert.end().await.map_err(MigrationError::Bookkeeping)
}

/// A back-quoted ClickHouse identifier.
fn quote_identifier(name: &str) -> String {
    format!("`{}`", name.replace('\\', "\\\\").replace('`', "\\`"))
}

/// Splits SQL text on top-level `;` into trimmed, non-empty statements; a piece holding
/// only comments is dropped. Only a `;` of code splits, never one in quotes or comments
/// ([`bench_clickhouse::sql`]). The same rules as
/// `split_statements` in `deploy/clickhouse/chdb_check.py`.
pub fn split_statements(sql: &str) -> Vec<&str> {
    let mut statements = Vec::new();
    let (mut start, mut meaningful) = (0, false);
    for (piece, range) in sql::pieces(sql) {
        match piece {
            Piece::Comment => {}
            Piece::Quoted => meaningful = true,
            Piece::Code => {
                for (at, c) in sql[range.clone()].char_indices() {
                    if c == ';' {
                        if meaningful {
                            statements.push(sql[start..range.start + at].trim());
                        }
                        start = range.start + at + 1;
                        meaningful = false;
                    } else {
                        meaningful |= !c.is_whitespace();
                    }
                }
            }
        }
    }
    if meaningful {
        statements.push(sql[start..].trim());
    }
    statements
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semicolons_split_only_at_top_level() {
        let sql = "SELECT ';' ; -- x;\n SELECT 'it''s;' /* ; */; SELECT \"a;b\" ;; -- only\n";
        assert_eq!(
            split_statements(sql),
            vec![
                "SELECT ';'",
                "-- x;\n SELECT 'it''s;' /* ; */",
                "SELECT \"a;b\""
            ]
        );
        assert_eq!(split_statements("SELECT 'a\\';'"), vec!["SELECT 'a\\';'"]);
        assert!(split_statements("-- nothing\n/* at all */ ;").is_empty());
        assert_eq!(split_statements("SELECT 1"), vec!["SELECT 1"]);
    }

    #[test]
    fn guards_are_found_on_their_own_comment_line() {
        let statement = "-- copy\n-- only if: SELECT 1 = 1\nINSERT INTO t SELECT 1";
        assert_eq!(guard(statement), Some("SELECT 1 = 1"));
        assert_eq!(guard("-- see `-- only if:` below\nSELECT 1"), None);
        assert_eq!(guard("CREATE TABLE IF NOT EXISTS t (a UInt8)"), None);
    }

    /// `ALTER TABLE t MODIFY COLUMN …[, MODIFY COLUMN …]`: nothing but type changes,
    /// which are no-ops the second time.
    fn only_modifies_columns(code: &str) -> bool {
        let Some(rest) = code.strip_prefix("ALTER TABLE ") else {
            return false;
        };
        let mut clauses = rest.split("MODIFY COLUMN");
        let table = clauses.next().unwrap_or_default().trim();
        let other = [
            "ADD", "DROP", "RENAME", "CLEAR", "UPDATE", "DELETE", "COMMENT",
        ];
        !table.is_empty()
            && !table.contains(char::is_whitespace)
            && clauses.clone().count() > 0
            && clauses.all(|c| !c.split_whitespace().any(|word| other.contains(&word)))
    }

    #[test]
    fn only_column_type_changes_count_as_idempotent_alters() {
        assert!(only_modifies_columns(
            "ALTER TABLE t MODIFY COLUMN a Nullable(String), MODIFY COLUMN b UInt8"
        ));
        assert!(!only_modifies_columns(
            "ALTER TABLE t MODIFY COLUMN a String, ADD COLUMN b UInt8"
        ));
        assert!(!only_modifies_columns("ALTER TABLE t DROP COLUMN a"));
        assert!(!only_modifies_columns("INSERT INTO t SELECT 1"));
    }

    #[test]
    fn migrations_are_numbered_in_order_and_idempotent() {
        let mut previous = 0;
        for migration in MIGRATIONS {
            assert!(
                migration.version > previous,
                "{} out of order",
                migration.stem
            );
            previous = migration.version;
            assert!(migration
                .stem
                .starts_with(&format!("{:04}_", migration.version)));
            let statements = migration.statements();
            assert!(!statements.is_empty(), "{} is empty", migration.stem);
            for statement in statements {
                let code: String = statement
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("--"))
                    .collect::<Vec<_>>()
                    .join("\n");
                let code = code.trim_start();
                assert!(
                    guard(statement).is_some()
                        || code.starts_with("CREATE TABLE IF NOT EXISTS")
                        || code.starts_with("CREATE MATERIALIZED VIEW IF NOT EXISTS")
                        || code.starts_with("DROP TABLE IF EXISTS")
                        || only_modifies_columns(code),
                    "{}: not idempotent: {code}",
                    migration.stem
                );
            }
        }
    }

    #[test]
    fn every_migration_file_is_embedded() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../deploy/clickhouse/migrations"
        );
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.ends_with(".sql"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        let embedded: Vec<String> = MIGRATIONS
            .iter()
            .map(|m| format!("{}.sql", m.stem))
            .collect();
        assert_eq!(files, embedded);
    }

    #[test]
    fn every_shipped_migration_renders_for_a_cluster() {
        let target = Target {
            cluster: "benchstream",
            alter_cluster: "benchstream",
            database: "db",
        };
        for migration in MIGRATIONS {
            for statement in migration.statements() {
                cluster::render(statement, &target)
                    .unwrap_or_else(|e| panic!("{}: {e}", migration.stem));
            }
        }
    }
}
