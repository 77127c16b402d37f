//! A real `clickhouse-server` for one test, plus a blocking SQL-over-HTTP helper.
//!
//! The config is `deploy/local/clickhouse/config.xml.in` and `users.xml` (embedded at
//! compile time; the same files `deploy/local/services.sh` uses), rendered with this
//! server's ports and directory. Data, logs and config live in the server's own
//! [`TempDir`], which survives [`ClickHouseServer::restart`] and goes away on drop.
//!
//! Users: `default` without password, and [`ClickHouseServer::AUTH_USER`] with
//! [`ClickHouseServer::AUTH_PASSWORD`] for tests of authenticated clients.
//! Only loopback (`127.0.0.1`, not `localhost`, which may resolve to `::1`).

use std::error::Error;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;

use super::http;
use super::port::free_port;
use super::process::{self, find_binary, Server, ServerCommand, ServerProcess, PROBE_TIMEOUT};

/// Server config template; see the file for its placeholders.
const CONFIG_TEMPLATE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../deploy/local/clickhouse/config.xml.in"
));

/// Users, profiles and quotas; no placeholders.
const USERS_XML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../deploy/local/clickhouse/users.xml"
));

/// Timeout of connect and of each read/write of [`ClickHouseServer::query`].
const QUERY_TIMEOUT: Duration = Duration::from_secs(120);

/// Why [`ClickHouseServer::try_query`] failed.
#[derive(Debug)]
pub enum QueryError {
    /// No usable HTTP exchange: connection refused or reset, timeout, malformed or
    /// non-UTF-8 response.
    Transport(io::Error),
    /// The server answered with a status other than 200; `body` is its error text
    /// (`Code: 60, e.displayText() = DB::Exception: Table ... doesn't exist, ...`).
    Server {
        /// HTTP status. Varies with the error and the server version (18.16: 404 for a
        /// missing table, 500 for most others); match on `body`, not on this.
        status: u16,
        /// The server's message.
        body: String,
    },
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Transport(e) => write!(f, "http exchange with clickhouse failed: {e}"),
            Self::Server { status, body } => {
                write!(f, "clickhouse answered {status}: {}", body.trim_end())
            }
        }
    }
}

impl Error for QueryError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Transport(e) => Some(e),
            Self::Server { .. } => None,
        }
    }
}

/// A running `clickhouse-server` on free loopback ports. Killed on drop. Its main log is
/// `log/clickhouse-server.log` next to [`log_path`](Self::log_path); a graceful
/// [`stop`](Self::stop) of 18.16 takes about 2 s.
///
/// All methods take `&self`, so the server can sit in an `Arc` and be restarted while
/// the code under test keeps running.
#[derive(Debug)]
pub struct ClickHouseServer {
    /// The child process. Declared first so it is killed before `dir` is deleted.
    process: ServerProcess,
    /// HTTP interface port (what the Rust `clickhouse` client and [`Self::query`] use).
    http_port: u16,
    /// Native protocol port (`clickhouse-client --port`).
    tcp_port: u16,
    /// Owns config, data and logs; deleted on drop.
    dir: TempDir,
}

impl ClickHouseServer {
    /// A user that needs a password, for auth tests.
    pub const AUTH_USER: &'static str = "bench";
    /// The password of [`Self::AUTH_USER`].
    pub const AUTH_PASSWORD: &'static str = "bench-secret";

    /// Starts a server and waits until `SELECT 1` answers `1` (about 1 s).
    ///
    /// # Panics
    ///
    /// If `clickhouse-server` is not on `PATH` or does not become ready within 20 s; the
    /// message quotes the end of the server log.
    pub fn start() -> Self {
        let binary = find_binary("clickhouse-server");
        process::start_on_free_ports(|| Self::prepare(&binary, Ports::free(), None))
    }

    /// The HTTP interface URL, `http://127.0.0.1:<http_port>`.
    pub fn http_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// The one client the tests use: this server over HTTP, no database (creating one,
    /// server-wide queries), rows read without type validation (18.16 has no
    /// `RowBinaryWithNamesAndTypes`).
    pub fn client(&self) -> clickhouse::Client {
        clickhouse::Client::default()
            .with_url(self.http_url())
            .with_validation(false)
    }

    /// [`Self::client`] of `database`.
    pub fn client_of(&self, database: &str) -> clickhouse::Client {
        self.client().with_database(database)
    }

    /// The HTTP interface port.
    pub fn http_port(&self) -> u16 {
        self.http_port
    }

    /// The native protocol port, for `clickhouse-client --port`.
    pub fn tcp_port(&self) -> u16 {
        self.tcp_port
    }

    /// The server's data directory (`<path>` in the config). Kept across restarts.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    process::life_cycle_methods!();

    /// Runs `sql` as user `default` and returns the response body (TabSeparated unless
    /// the SQL says `FORMAT ...`).
    ///
    /// # Panics
    ///
    /// On any failure, with the SQL and the server's error text.
    pub fn query(&self, sql: &str) -> String {
        self.try_query(sql)
            .unwrap_or_else(|e| panic!("query failed: {e}\nsql: {sql}"))
    }

    /// Runs `sql` as user `default`, returning errors instead of panicking.
    pub fn try_query(&self, sql: &str) -> Result<String, QueryError> {
        self.try_query_as("default", "", sql)
    }

    /// Runs `sql` as `user` with `password`.
    ///
    /// Uses `wait_end_of_query=1`: without it, an error after the first rows is sent
    /// with status 200 at the end of the body, and would pass for data.
    pub fn try_query_as(
        &self,
        user: &str,
        password: &str,
        sql: &str,
    ) -> Result<String, QueryError> {
        let target = format!(
            "/?wait_end_of_query=1&user={}&password={}",
            http::encode_query_value(user),
            http::encode_query_value(password)
        );
        let response = http::request(
            self.http_port,
            "POST",
            &target,
            sql.as_bytes(),
            QUERY_TIMEOUT,
        )
        .map_err(QueryError::Transport)?;
        let body = String::from_utf8(response.body)
            .map_err(|e| QueryError::Transport(io::Error::new(io::ErrorKind::InvalidData, e)))?;
        if response.status == 200 {
            Ok(body)
        } else {
            Err(QueryError::Server {
                status: response.status,
                body,
            })
        }
    }

    /// Creates the temp dir and config of a server on `ports`, not started yet;
    /// `extra_config` is written as `config.d/extra.xml`, which the server merges over its
    /// config (the cluster harness's remote servers, macros and ZooKeeper).
    pub(crate) fn prepare(binary: &Path, ports: Ports, extra_config: Option<&str>) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("bench-clickhouse-")
            .tempdir()
            .expect("create temp dir for clickhouse-server");
        let Ports {
            http: http_port,
            tcp: tcp_port,
            interserver: interserver_port,
        } = ports;
        let root = dir.path();
        if let Some(extra) = extra_config {
            let config_d = root.join("config.d");
            fs::create_dir(&config_d)
                .and_then(|()| fs::write(config_d.join("extra.xml"), extra))
                .unwrap_or_else(|e| panic!("write {}/extra.xml: {e}", config_d.display()));
        }
        for sub in ["data", "tmp", "user_files", "format_schemas", "log"] {
            let path = root.join(sub);
            fs::create_dir(&path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
        }

        let config = render_config(root, http_port, tcp_port, interserver_port);
        let config_path = root.join("config.xml");
        fs::write(&config_path, config)
            .unwrap_or_else(|e| panic!("write {}: {e}", config_path.display()));
        let users_path = root.join("users.xml");
        fs::write(&users_path, USERS_XML)
            .unwrap_or_else(|e| panic!("write {}: {e}", users_path.display()));

        let mut config_arg = OsString::from("--config-file=");
        config_arg.push(&config_path);
        let process = ServerProcess::new(ServerCommand {
            name: "clickhouse-server",
            program: binary.to_path_buf(),
            args: vec![config_arg],
            envs: Vec::new(),
            working_dir: root.to_path_buf(),
            log_path: root.join("log").join("console.log"),
            server_logs: vec![
                root.join("log").join("clickhouse-server.err.log"),
                root.join("log").join("clickhouse-server.log"),
            ],
        });
        Self {
            process,
            http_port,
            tcp_port,
            dir,
        }
    }

    /// Starts a server made by [`Self::prepare`] and waits until it answers.
    ///
    /// # Panics
    ///
    /// If it does not become ready; the message quotes the end of its logs.
    pub(crate) fn spawn(&self) {
        if let Err(failure) = self.process.spawn(|| self.is_ready()) {
            panic!("{}", self.process.failure_message(&failure));
        }
    }
}

/// The three ports of one server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ports {
    /// HTTP interface.
    pub(crate) http: u16,
    /// Native protocol (also what Distributed tables and `remote_servers` use).
    pub(crate) tcp: u16,
    /// Interserver HTTP (replicas fetch parts from each other here).
    pub(crate) interserver: u16,
}

impl Ports {
    /// Three ports nobody listens on.
    pub(crate) fn free() -> Self {
        Self {
            http: free_port(),
            tcp: free_port(),
            interserver: free_port(),
        }
    }
}

impl Server for ClickHouseServer {
    fn process(&self) -> &ServerProcess {
        &self.process
    }

    /// Ready = the HTTP interface answers `SELECT 1` with `1`.
    fn is_ready(&self) -> bool {
        http::request(
            self.http_port,
            "GET",
            "/?query=SELECT%201",
            b"",
            PROBE_TIMEOUT,
        )
        .is_ok_and(|response| response.status == 200 && response.body.trim_ascii() == b"1")
    }
}

/// Fills the config template for a server rooted at `dir`.
fn render_config(dir: &Path, http_port: u16, tcp_port: u16, interserver_port: u16) -> String {
    CONFIG_TEMPLATE
        .replace("@DIR@", &xml_escape(&dir.to_string_lossy()))
        .replace("@HTTP_PORT@", &http_port.to_string())
        .replace("@TCP_PORT@", &tcp_port.to_string())
        .replace("@INTERSERVER_HTTP_PORT@", &interserver_port.to_string())
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_is_fully_rendered() {
        let config = render_config(Path::new("/tmp/x&y"), 1, 2, 3);
        for placeholder in [
            "@DIR@",
            "@HTTP_PORT@",
            "@TCP_PORT@",
            "@INTERSERVER_HTTP_PORT@",
        ] {
            assert!(
                !config.contains(placeholder),
                "{placeholder} left in config"
            );
        }
        assert!(config.contains("<path>/tmp/x&amp;y/data/</path>"));
        assert!(config.contains("<http_port>1</http_port>"));
        assert!(config.contains("<tcp_port>2</tcp_port>"));
        assert!(config.contains("<interserver_http_port>3</interserver_http_port>"));
        assert!(config.contains("<listen_host>127.0.0.1</listen_host>"));
    }
}
