//! The ClickHouse connection every benchstream command uses: the `[clickhouse]` settings
//! ([`ClickHouseArgs`], all optional, layered `file < env < flags`), checked once into a
//! [`ClickHouseConfig`], and the one place that builds a `clickhouse::Client` from it.
//!
//! The sink writes with it, `bench-analysis` reads with it ([`ConnectionArgs`]: the same
//! flags plus the sink's `--config` file), and `agent-runner sweep` reads past results
//! with it. This module opens no connection itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bench_cli::config_file::{invalid, nonempty, positive, InvalidSetting};
use bench_cli::section;
use secrecy::{ExposeSecret as _, SecretString};
use serde::Deserialize;

/// Default HTTP interface URL.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8123";
/// Default user.
pub const DEFAULT_USER: &str = "default";
/// Default database of the sink's tables.
pub const DEFAULT_DATABASE: &str = "benchstream";

section! {
    /// `[clickhouse]`: where the rows are. Every field an optional flag with its
    /// environment variable, so a config file, the environment and flags can be layered
    /// ([`ClickHouseArgs::merge`]).
    #[derive(Debug, Clone, Default, clap::Args, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct ClickHouseArgs {
        /// HTTP interface URL, `http://` or `https://` (system trust store;
        /// `SSL_CERT_FILE` adds a CA). Default `http://127.0.0.1:8123`.
        pub url: Option<String> = ("clickhouse-url", "BENCH_CLICKHOUSE_URL"),
        /// User. Default `default`.
        pub user: Option<String> = ("clickhouse-user", "BENCH_CLICKHOUSE_USER"),
        /// Password. Default empty.
        #[arg(hide_env_values = true)]
        pub password: Option<SecretString> =
            ("clickhouse-password", "BENCH_CLICKHOUSE_PASSWORD"),
        /// Database holding the tables; created by migrations if absent. Default
        /// `benchstream`.
        pub database: Option<String> = ("clickhouse-database", "BENCH_CLICKHOUSE_DATABASE"),
        /// Limit on one INSERT (sending the rows and waiting for the answer), ms. Default
        /// 30000; a timed-out insert is retried.
        pub insert_timeout_ms: Option<u64> =
            ("insert-timeout-ms", "BENCH_CLICKHOUSE_INSERT_TIMEOUT_MS"),
        /// ClickHouse cluster (a `remote_servers` name) holding the tables: Replicated
        /// `<table>_local` tables under Distributed `<table>` ones, created `ON CLUSTER`,
        /// and inserts that return once the rows are on their shard. Default none: the
        /// tables of one server.
        pub cluster: Option<String> = ("cluster", "BENCH_CLICKHOUSE_CLUSTER"),
        /// On a cluster: the HTTP URLs of its servers, comma-separated (every replica of
        /// every shard). With them the sink writes each shard's rows into its `_local`
        /// tables, on one of its replicas, so a shard that is down holds only its own
        /// rows. Default none: inserts through the Distributed tables of `url`.
        pub replica_urls: Option<String> = ("replica-urls", "BENCH_CLICKHOUSE_REPLICA_URLS"),
        /// On a cluster: the cluster (a `remote_servers` name) that migrations send
        /// `ALTER TABLE ... ON CLUSTER` to, listing ONE replica of each shard, with
        /// `internal_replication`; the ALTER of a Replicated table reaches the shard's
        /// other replicas through ZooKeeper. On ClickHouse 18.16, an `ALTER ON CLUSTER`
        /// sent to every replica can be executed by two replicas of a shard at once, and
        /// the second then stops its DDL queue until the server restarts. Default: the
        /// cluster itself.
        pub alter_cluster: Option<String> = ("alter-cluster", "BENCH_CLICKHOUSE_ALTER_CLUSTER"),
    }
}

impl ClickHouseArgs {
    /// Fills defaults and checks every value.
    pub fn resolve(self) -> Result<ClickHouseConfig, ConfigError> {
        let clickhouse = ClickHouseConfig {
            url: self.url.unwrap_or_else(|| DEFAULT_URL.into()),
            user: self.user.unwrap_or_else(|| DEFAULT_USER.into()),
            password: self.password.unwrap_or_default(),
            database: nonempty("clickhouse.database", self.database)?
                .unwrap_or_else(|| DEFAULT_DATABASE.into()),
            insert_timeout: Duration::from_millis(
                positive("clickhouse.insert_timeout_ms", self.insert_timeout_ms)?.unwrap_or(30_000),
            ),
            cluster: nonempty("clickhouse.cluster", self.cluster)?,
            alter_cluster: nonempty("clickhouse.alter_cluster", self.alter_cluster)?,
            replica_urls: self
                .replica_urls
                .iter()
                .flat_map(|urls| urls.split(','))
                .map(|url| url.trim().to_owned())
                .filter(|url| !url.is_empty())
                .collect(),
        };
        if !clickhouse.replica_urls.is_empty() && clickhouse.cluster.is_none() {
            return Err(invalid("clickhouse.replica_urls", "needs clickhouse.cluster").into());
        }
        if clickhouse.alter_cluster.is_some() && clickhouse.cluster.is_none() {
            return Err(invalid("clickhouse.alter_cluster", "needs clickhouse.cluster").into());
        }
        if !clickhouse.replica_urls.iter().all(|url| is_http(url)) {
            return Err(invalid(
                "clickhouse.replica_urls",
                "must be http:// or https:// URLs",
            )
            .into());
        }
        if let Some(cluster) = &clickhouse.cluster {
            // Both are spliced into `ON CLUSTER` statements, engine arguments and
            // ZooKeeper paths.
            let plain = |name: &str| name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !plain(cluster) {
                return Err(
                    invalid("clickhouse.cluster", "must be letters, digits and `_`").into(),
                );
            }
            if !clickhouse.alter_cluster.as_deref().is_none_or(plain) {
                return Err(invalid(
                    "clickhouse.alter_cluster",
                    "must be letters, digits and `_`",
                )
                .into());
            }
            if !plain(&clickhouse.database) {
                return Err(invalid(
                    "clickhouse.database",
                    "must be letters, digits and `_` on a cluster",
                )
                .into());
            }
        }
        if !is_http(&clickhouse.url) {
            return Err(invalid("clickhouse.url", "must start with http:// or https://").into());
        }
        Ok(clickhouse)
    }

    /// Reads the `[clickhouse]` section of a TOML config file (the sink's); the file's
    /// other sections belong to the sink and are not read here.
    pub fn from_file(path: &Path) -> Result<ClickHouseArgs, ConfigError> {
        /// The one section this crate reads of the sink's file.
        #[derive(Deserialize)]
        struct File {
            #[serde(default)]
            clickhouse: ClickHouseArgs,
        }
        let file: File = bench_cli::config_file::read(path)?;
        Ok(file.clickhouse)
    }
}

/// The ClickHouse connection of the commands that only talk to the database (`event-sink
/// migrate`, `bench-analysis`): the `[clickhouse]` section of the sink's config file,
/// `BENCH_CLICKHOUSE_*` and `--clickhouse-*`, with the same names and precedence as the
/// sink's, so they reach the database the sink writes.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConnectionArgs {
    /// TOML config file of the sink; flags and environment override its `[clickhouse]`.
    #[arg(id = "config", long = "config", env = "BENCH_SINK_CONFIG")]
    pub config: Option<PathBuf>,
    /// The connection settings.
    #[command(flatten, next_help_heading = "ClickHouse")]
    pub clickhouse: ClickHouseArgs,
}

impl ConnectionArgs {
    /// Merges the config file's `[clickhouse]` (if any) below these settings, then
    /// validates the result.
    pub fn load(self) -> Result<ClickHouseConfig, ConfigError> {
        let clickhouse = match &self.config {
            Some(path) => self.clickhouse.merge(ClickHouseArgs::from_file(path)?),
            None => self.clickhouse,
        };
        clickhouse.resolve()
    }
}

/// A validated ClickHouse connection (see [`ClickHouseArgs`] for meanings and defaults).
/// Its `Debug` shows no password.
#[derive(Debug, Clone)]
pub struct ClickHouseConfig {
    /// HTTP interface URL, `http://` or `https://`.
    pub url: String,
    /// User.
    pub user: String,
    /// Password; empty when none.
    pub password: SecretString,
    /// Database holding the tables.
    pub database: String,
    /// Limit on one INSERT.
    pub insert_timeout: Duration,
    /// The cluster of the tables; `None` = one server.
    pub cluster: Option<String>,
    /// The cluster migrations send `ALTER ... ON CLUSTER` to (one replica per shard);
    /// `None` = [`Self::cluster`].
    pub alter_cluster: Option<String>,
    /// HTTP URLs of the cluster's servers, to write shard by shard; empty = through the
    /// Distributed tables.
    pub replica_urls: Vec<String>,
}

impl ClickHouseConfig {
    /// A client of the server, no database selected.
    pub fn server_client(&self) -> clickhouse::Client {
        // 18.16 has no RowBinaryWithNamesAndTypes, which the client's schema validation
        // needs: validation off (event-sink/README.md).
        clickhouse::Client::default()
            .with_url(&self.url)
            .with_user(&self.user)
            .with_password(self.password.expose_secret())
            .with_validation(false)
    }

    /// A client of the database on the server at `url` (one replica of a shard, whose
    /// `_local` tables it writes: no Distributed settings).
    pub fn replica_client(&self, url: &str) -> clickhouse::Client {
        self.server_client()
            .with_url(url)
            .with_database(&self.database)
    }

    /// A client of the database. On a cluster its inserts into Distributed tables are
    /// synchronous (`insert_distributed_sync`): the INSERT answers only once every shard
    /// it touches has written its rows, so an ack follows the rows onto their shard and a
    /// failed shard fails the insert, which is then retried.
    pub fn client(&self) -> clickhouse::Client {
        let client = self.server_client().with_database(&self.database);
        match &self.cluster {
            None => client,
            Some(_) => client
                .with_setting("insert_distributed_sync", "1")
                // The server gives up on a shard no later than the client on the insert.
                .with_setting(
                    "insert_distributed_timeout",
                    self.insert_timeout.as_secs().max(1).to_string(),
                ),
        }
    }
}

/// Why ClickHouse settings are unusable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read, or its `[clickhouse]` is not the section
    /// above.
    #[error(transparent)]
    File(#[from] bench_cli::ConfigFileError),
    /// A value is out of its range.
    #[error(transparent)]
    Invalid(#[from] InvalidSetting),
}

fn is_http(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(toml_text: &str) -> ClickHouseArgs {
        toml::from_str(toml_text).expect("parses")
    }

    #[test]
    fn defaults_are_documented_values() {
        let config = ClickHouseArgs::default().resolve().expect("valid");
        assert_eq!(config.url, DEFAULT_URL);
        assert_eq!(config.user, DEFAULT_USER);
        assert_eq!(config.password.expose_secret(), "");
        assert_eq!(config.database, DEFAULT_DATABASE);
        assert_eq!(config.insert_timeout, Duration::from_secs(30));
        assert_eq!(config.cluster, None);
    }

    #[test]
    fn replica_urls_are_a_comma_separated_list_that_needs_a_cluster() {
        let config =
            section("cluster = \"c\"\nreplica_urls = \"http://a:8123, https://b:8443,\"\n")
                .resolve()
                .expect("valid");
        assert_eq!(config.replica_urls, ["http://a:8123", "https://b:8443"]);
        for case in [
            "replica_urls = \"http://a:8123\"\n",
            "cluster = \"c\"\nreplica_urls = \"a:8123\"\n",
        ] {
            assert!(section(case).resolve().is_err(), "accepted {case:?}");
        }
    }

    #[test]
    fn bad_values_are_refused() {
        for case in [
            "url = \"tcp://x:9000\"\n",
            "database = \" \"\n",
            "insert_timeout_ms = 0\n",
            "cluster = \"a-b\"\n",
            "cluster = \"c\"\ndatabase = \"a.b\"\n",
        ] {
            assert!(section(case).resolve().is_err(), "accepted {case:?}");
        }
        assert!(toml::from_str::<ClickHouseArgs>("pasword = \"x\"\n").is_err());
    }

    #[test]
    fn the_password_is_never_debug_printed() {
        let args = section("password = \"hunter2\"\n");
        assert!(!format!("{args:?}").contains("hunter2"));
        let config = args.resolve().expect("valid");
        assert_eq!(config.password.expose_secret(), "hunter2");
        assert!(!format!("{config:?}").contains("hunter2"));
    }

    #[test]
    fn the_connection_reads_only_the_clickhouse_section_of_the_sinks_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("sink.toml");
        std::fs::write(
            &path,
            "[batch]\nmax_rows = 5\n[clickhouse]\ndatabase = \"filedb\"\nuser = \"file\"\n",
        )
        .expect("write");
        let config = ConnectionArgs {
            config: Some(path),
            clickhouse: ClickHouseArgs {
                user: Some("flag".into()),
                ..ClickHouseArgs::default()
            },
        }
        .load()
        .expect("valid");
        assert_eq!(config.database, "filedb");
        assert_eq!(config.user, "flag");
    }
}
