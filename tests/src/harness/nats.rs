//! A real `nats-server` with JetStream for one test.
//!
//! The config is `deploy/nats/nats-server.conf` (embedded at compile time, so tests run
//! with the deployed limits such as `max_payload`) followed by the overrides of this
//! server: loopback client and monitoring ports, auth, and any raw text the test adds.
//! The JetStream store, the config file and the log live in the server's own
//! [`TempDir`], which survives [`NatsServer::restart`] and goes away on drop.

use std::ffi::OsString;
use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use super::http;
use super::port::free_port;
use super::process::{self, find_binary, Server, ServerCommand, ServerProcess, PROBE_TIMEOUT};

/// The deployed single-node config; the harness appends its overrides to it.
const BASE_CONFIG: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../deploy/nats/nats-server.conf"
));

/// Who may connect to a [`NatsServer`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum NatsAuth {
    /// Anyone, no credentials (default).
    #[default]
    None,
    /// One user with a plain-text password.
    UserPassword {
        /// User name clients send.
        user: String,
        /// Password clients send.
        password: String,
    },
    /// A shared token.
    Token(String),
}

/// How to configure a [`NatsServer`]. JetStream is always on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NatsOptions {
    /// Client authentication; default [`NatsAuth::None`].
    pub auth: NatsAuth,
    /// Raw nats-server config appended last; default empty. A top-level key given here
    /// replaces the one of the base config; a block (`jetstream { .. }`) replaces the
    /// whole block, so repeat `store_dir: $BENCH_NATS_STORE_DIR` if you override it.
    pub extra_config: String,
}

/// A running `nats-server` with JetStream on free loopback ports. Killed on drop.
///
/// All methods take `&self`, so the server can sit in an `Arc` and be restarted while
/// clients of the code under test keep running.
#[derive(Debug)]
pub struct NatsServer {
    /// The child process. Declared first so it is killed before `dir` is deleted.
    process: ServerProcess,
    /// Client port (`nats://127.0.0.1:port`).
    port: u16,
    /// Monitoring port (`/healthz`, `/varz`, `/jsz`).
    http_port: u16,
    /// Where JetStream keeps its data (the server adds `jetstream/` below).
    store_dir: PathBuf,
    /// Owns config, store and log; deleted on drop.
    _dir: TempDir,
}

impl NatsServer {
    /// Starts a server with default options (no auth) and waits until it is ready.
    ///
    /// # Panics
    ///
    /// If `nats-server` is not on `PATH` or does not become ready within 20 s; the
    /// message quotes the end of the server log.
    pub fn start() -> Self {
        Self::start_with(NatsOptions::default())
    }

    /// Starts a server configured by `options` and waits until it is ready.
    ///
    /// # Panics
    ///
    /// As [`start`](Self::start); also if the config is rejected.
    pub fn start_with(options: NatsOptions) -> Self {
        let binary = find_binary("nats-server");
        process::start_on_free_ports(|| Self::prepare(&binary, &options))
    }

    /// The client URL, `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The monitoring port (HTTP: `/healthz`, `/varz`, `/jsz`).
    pub fn http_port(&self) -> u16 {
        self.http_port
    }

    /// The configured JetStream `store_dir`; the server keeps its files in
    /// `store_dir/jetstream/`. Kept across restarts.
    pub fn store_dir(&self) -> &Path {
        &self.store_dir
    }

    process::life_cycle_methods!();

    /// Creates the temp dir and config for one start attempt on fresh ports.
    fn prepare(binary: &Path, options: &NatsOptions) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("bench-nats-")
            .tempdir()
            .expect("create temp dir for nats-server");
        let port = free_port();
        let http_port = free_port();
        let store_dir = dir.path().join("store");
        fs::create_dir(&store_dir)
            .unwrap_or_else(|e| panic!("create {}: {e}", store_dir.display()));

        let config_path = dir.path().join("nats-server.conf");
        let config = render_config(port, http_port, options);
        fs::write(&config_path, config)
            .unwrap_or_else(|e| panic!("write {}: {e}", config_path.display()));

        let process = ServerProcess::new(ServerCommand {
            name: "nats-server",
            program: binary.to_path_buf(),
            args: vec![OsString::from("-c"), config_path.into_os_string()],
            envs: vec![store_dir_env(&store_dir)],
            working_dir: dir.path().to_path_buf(),
            log_path: dir.path().join("nats-server.log"),
            server_logs: Vec::new(),
        });
        Self {
            process,
            port,
            http_port,
            store_dir,
            _dir: dir,
        }
    }
}

impl Server for NatsServer {
    fn process(&self) -> &ServerProcess {
        &self.process
    }

    /// Ready = clients can connect and the monitor reports JetStream enabled.
    fn is_ready(&self) -> bool {
        let client = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        TcpStream::connect_timeout(&client, PROBE_TIMEOUT).is_ok()
            && http::request(
                self.http_port,
                "GET",
                "/healthz?js-enabled-only=true",
                b"",
                PROBE_TIMEOUT,
            )
            .is_ok_and(|response| response.status == 200)
    }
}

/// The base config plus this server's overrides (later keys win in nats-server config).
fn render_config(port: u16, http_port: u16, options: &NatsOptions) -> String {
    let mut config = String::from(BASE_CONFIG);
    config.push_str("\n# ---- test harness overrides (tests/src/harness/nats.rs) ----\n");
    config.push_str(&format!("listen: 127.0.0.1:{port}\n"));
    config.push_str(&format!("http: 127.0.0.1:{http_port}\n"));
    match &options.auth {
        NatsAuth::None => {}
        NatsAuth::UserPassword { user, password } => config.push_str(&format!(
            "authorization {{\n  user: {}\n  password: {}\n}}\n",
            quote(user),
            quote(password)
        )),
        NatsAuth::Token(token) => config.push_str(&format!(
            "authorization {{\n  token: {}\n}}\n",
            quote(token)
        )),
    }
    if !options.extra_config.is_empty() {
        config.push_str(&options.extra_config);
        config.push('\n');
    }
    config
}

/// The variable through which the deployed configs (single node and cluster) take their
/// JetStream `store_dir`. They read it as a config value: quoted.
pub(super) fn store_dir_env(store_dir: &Path) -> (OsString, OsString) {
    (
        OsString::from("BENCH_NATS_STORE_DIR"),
        OsString::from(quote(&store_dir.to_string_lossy())),
    )
}

/// A double-quoted nats-server config string.
fn quote(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_follow_the_deployed_config() {
        let options = NatsOptions {
            auth: NatsAuth::UserPassword {
                user: "runner".into(),
                password: "p\"w".into(),
            },
            extra_config: "max_connections: 10".into(),
        };
        let config = render_config(4000, 4001, &options);
        let overrides = config
            .find("test harness overrides")
            .expect("override marker");
        assert!(config.starts_with(BASE_CONFIG));
        assert!(config[overrides..].contains("listen: 127.0.0.1:4000\n"));
        assert!(config[overrides..].contains("http: 127.0.0.1:4001\n"));
        assert!(config[overrides..].contains("password: \"p\\\"w\""));
        assert!(config.ends_with("max_connections: 10\n"));
    }

    #[test]
    fn base_config_reads_store_dir_from_the_environment() {
        assert!(BASE_CONFIG.contains("store_dir: $BENCH_NATS_STORE_DIR"));
    }
}
