//! `bench-analysis serve` flags ([`ServeArgs`]) → a validated [`ServeConfig`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bench_cli::token::BearerToken;
use bench_clickhouse::{ClickHouseConfig, ConfigError, ConnectionArgs};
use bench_nats::{NatsArgs, NatsConfig};
use clap::Args;
use secrecy::SecretString;

use super::ahead::AheadSettings;

/// `bench-analysis serve`.
#[derive(Debug, Clone, Args)]
#[command(mut_arg("subject_prefix", |a| a
    .help("Subject prefix of the events the live updates follow (<prefix>.events.<run_id>.<type>)")
    .default_value("bench")))]
#[command(mut_arg("stream", |a| a
    .help("The events stream the live updates follow")
    .default_value("BENCH_EVENTS")))]
pub struct ServeArgs {
    /// Address to serve the viewer on. Any address but a loopback one needs
    /// --bearer-token.
    #[arg(long, env = "BENCH_SERVE_LISTEN", default_value = "127.0.0.1:8321")]
    pub listen: SocketAddr,
    /// Require this token of every request: `Authorization: Bearer <token>`, or the
    /// cookie that opening any page with `?token=<token>` sets. Give it through the
    /// environment: a command line is visible to every user of the host.
    // This doc is the --help text: `<token>` is a placeholder, not an HTML tag.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, env = "BENCH_SERVE_BEARER_TOKEN", hide_env_values = true)]
    pub bearer_token: Option<SecretString>,
    /// Longest a page's reads may take, ms; a slower page shows an error instead.
    #[arg(long, env = "BENCH_SERVE_QUERY_TIMEOUT_MS", default_value_t = 10_000)]
    pub query_timeout_ms: u64,
    /// The runner's output directory (`agent-runner run --out`): a run's final diff is
    /// read from `<DIR>/<run_id>/final.diff` (checked against its stored SHA-256) when
    /// the run sent only its head, or none; without it, run pages show what the run sent.
    #[arg(long, env = "BENCH_SERVE_RUNS_DIR", value_name = "DIR", value_parser = bench_cli::paths::absolute)]
    pub runs_dir: Option<PathBuf>,
    /// The newest experiments (the first `/` lists) whose leaderboard, grid and linked
    /// comparison are computed in the background, at the start and whenever their runs
    /// change, so their pages answer at once; 0: only those visited.
    #[arg(long, env = "BENCH_SERVE_PRECOMPUTE_EXPERIMENTS", default_value_t = 3)]
    pub precompute_experiments: usize,
    /// How often, ms, the background reads whether the runs of each experiment it keeps
    /// answers of changed (with NATS, changes are also seen on the live feed at once).
    #[arg(long, env = "BENCH_SERVE_REFRESH_POLL_MS", default_value_t = 5_000)]
    pub refresh_poll_ms: u64,
    /// Most experiments whose leaderboard and grid are kept, and most comparisons kept
    /// (each); beyond, the least recently used is dropped.
    #[arg(long, env = "BENCH_SERVE_KEPT_MAX", default_value_t = 32)]
    pub kept_max: usize,
    /// Longest, ms, a page waits for a leaderboard or comparison computed for the first
    /// time (none kept yet); past it, the page says it is being computed and fetches
    /// itself again until it is shown (the JSON API waits for it).
    #[arg(long, env = "BENCH_SERVE_PAGE_WAIT_MS", default_value_t = 100)]
    pub page_wait_ms: u64,
    /// Live updates: the NATS server and stream of the events. Without `--nats-url`
    /// (or `BENCH_NATS_URL`) the pages work and say that live updates are off.
    #[command(flatten)]
    pub nats: NatsArgs,
    /// The ClickHouse database to read: the sink's connection settings.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// What the viewer runs with.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// The token every request must carry; `None` only on a loopback address.
    pub bearer_token: Option<BearerToken>,
    /// Longest a page's reads may take.
    pub query_timeout: Duration,
    /// Where final diffs are read from.
    pub runs_dir: Option<PathBuf>,
    /// The broker of the live updates; `None`: live updates are off.
    pub nats: Option<NatsConfig>,
    /// The events' subject prefix, e.g. `bench`.
    pub subject_prefix: String,
    /// The events stream.
    pub stream: String,
    /// The database.
    pub clickhouse: ClickHouseConfig,
    /// What is computed in the background.
    pub ahead: AheadSettings,
    /// Most standings kept, and most comparisons.
    pub kept_max: usize,
    /// Longest a page waits for an answer computed for the first time.
    pub page_wait: Duration,
}

/// Why the viewer cannot start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A setting is unusable.
    #[error("invalid settings: {0}")]
    Settings(String),
    /// The ClickHouse connection settings are unusable.
    #[error("invalid settings: {0}")]
    ClickHouse(#[from] ConfigError),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// `--listen`.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The server failed.
    #[error("serving failed: {0}")]
    Serve(#[source] std::io::Error),
}

impl ServeArgs {
    /// The validated config: a non-loopback `--listen` without `--bearer-token` is
    /// refused, naming the flag.
    pub fn into_config(self) -> Result<ServeConfig, ServeError> {
        let bearer_token = self
            .bearer_token
            .map(BearerToken::new)
            .transpose()
            .map_err(ServeError::Settings)?;
        if bearer_token.is_none() && !self.listen.ip().is_loopback() {
            return Err(ServeError::Settings(format!(
                "--listen {} is not a loopback address: anyone who reaches it could read \
                 every run; give --bearer-token (BENCH_SERVE_BEARER_TOKEN) or listen on \
                 127.0.0.1",
                self.listen
            )));
        }
        for (flag, value) in [
            ("--query-timeout-ms", self.query_timeout_ms),
            ("--refresh-poll-ms", self.refresh_poll_ms),
            ("--kept-max", self.kept_max as u64),
        ] {
            if value == 0 {
                return Err(ServeError::Settings(format!("{flag} must be at least 1")));
            }
        }
        let mut nats = self.nats;
        let subject_prefix = nats.subject_prefix.take().unwrap_or_default();
        let stream = nats
            .stream
            .take()
            .unwrap_or_else(|| bench_nats::StreamSpec::default().name);
        let nats = match nats.url {
            None => None,
            Some(_) => Some(
                nats.resolve()
                    .map_err(|e| ServeError::Settings(e.to_string()))?,
            ),
        };
        Ok(ServeConfig {
            listen: self.listen,
            bearer_token,
            query_timeout: Duration::from_millis(self.query_timeout_ms),
            runs_dir: self.runs_dir,
            nats,
            subject_prefix: subject_prefix.as_str().to_owned(),
            stream,
            clickhouse: self.connection.load()?,
            ahead: AheadSettings {
                experiments: self.precompute_experiments,
                poll: Duration::from_millis(self.refresh_poll_ms),
            },
            kept_max: self.kept_max,
            page_wait: Duration::from_millis(self.page_wait_ms),
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn config(args: &[&str]) -> Result<ServeConfig, ServeError> {
        let mut argv = vec!["serve"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv)
            .expect("parses")
            .serve
            .into_config()
    }

    #[test]
    fn every_serve_flag_has_an_environment_variable() {
        use clap::CommandFactory;
        for arg in Cli::command().get_arguments() {
            if arg.get_long().is_some_and(|l| l != "help") {
                let env = arg.get_env().and_then(|e| e.to_str()).unwrap_or_default();
                assert!(
                    env.starts_with("BENCH_"),
                    "--{:?} has no BENCH_ variable",
                    arg.get_long()
                );
            }
        }
    }

    #[test]
    fn a_non_loopback_address_needs_a_token_and_loopback_is_the_default() {
        let local = config(&[]).expect("loopback needs no token");
        assert_eq!(local.listen.to_string(), "127.0.0.1:8321");
        assert!(local.nats.is_none(), "no NATS unless given");
        let refused = config(&["--listen", "0.0.0.0:8321"]).expect_err("refused");
        assert!(refused.to_string().contains("--bearer-token"), "{refused}");
        let open = config(&["--listen", "0.0.0.0:8321", "--bearer-token", "t0ken"]);
        assert!(open.is_ok());
        assert!(config(&["--bearer-token", "two words"]).is_err());
    }
}
