//! `agent-runner otlp`: its flags ([`OtlpArgs`]) and the validated config they become
//! ([`OtlpConfig`]).

use std::net::SocketAddr;

use bench_cli::token::BearerToken;
use bench_delivery::PublishSetup;
use bench_otlp::{ReceiverConfig, DEFAULT_RUN_IDLE};
use clap::Args;
use secrecy::SecretString;

use crate::error::Error;
use crate::flags::{EventArgs, ExperimentArgs, PriceTableArgs};

/// Default cap on a request body, compressed or inflated: 16 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 << 20;

/// `agent-runner otlp`.
#[derive(Debug, Args)]
pub struct OtlpArgs {
    /// Address to serve OTLP/HTTP on (`POST /v1/traces`); 4318 is the OTLP/HTTP port.
    #[arg(long, env = "BENCH_OTLP_LISTEN", default_value = "127.0.0.1:4318")]
    pub listen: SocketAddr,
    /// Also serve OTLP/gRPC on this address (4317 is the OTLP/gRPC port, e.g.
    /// `127.0.0.1:4317`); off when not given.
    #[arg(long, env = "BENCH_OTLP_GRPC_LISTEN")]
    pub grpc_listen: Option<SocketAddr>,
    /// Require `Authorization: Bearer <token>` with this token. Give it through the
    /// environment: a command line is visible to every user of the host.
    // This doc is the --help text: `<token>` is a placeholder, not an HTML tag.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, env = "BENCH_OTLP_BEARER_TOKEN", hide_env_values = true)]
    pub bearer_token: Option<SecretString>,
    /// Seconds without any span of a run whose root span never came after which the
    /// receiver closes it (`run_stop` `exit_error`, totals NULL); a closed run is forgotten
    /// after as long.
    #[arg(long, env = "BENCH_OTLP_RUN_TIMEOUT", default_value_t = DEFAULT_RUN_IDLE.as_secs())]
    pub run_timeout: u64,
    /// Largest request body accepted, bytes, compressed and once inflated (413 above).
    #[arg(long, env = "BENCH_OTLP_MAX_BODY_BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// Prices per model (`--prices FILE`): a call of a model the table does not name has
    /// a null cost.
    #[command(flatten)]
    pub prices: PriceTableArgs,
    /// The experiment the received runs belong to and their tags.
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    /// Where the events go: NATS, subject prefix, spool.
    #[command(flatten)]
    pub events: EventArgs,
}

/// What `agent-runner otlp` runs with: the receiver's config and where its events go.
#[derive(Debug, Clone)]
pub struct OtlpConfig {
    /// The receiver: addresses, token, limits, host, prices, experiment.
    pub receiver: ReceiverConfig,
    /// Broker, subjects and spool.
    pub publish: PublishSetup,
}

impl OtlpArgs {
    /// The validated config.
    pub fn into_config(self) -> Result<OtlpConfig, Error> {
        if self.run_timeout == 0 {
            return Err(Error::Config(
                "--run-timeout must be at least 1 second".into(),
            ));
        }
        if self.max_body_bytes == 0 {
            return Err(Error::Config("--max-body-bytes must be at least 1".into()));
        }
        let bearer_token = self
            .bearer_token
            .map(BearerToken::new)
            .transpose()
            .map_err(Error::Config)?;
        let prices = self.prices.load()?;
        let (host, publish) = self.events.into_setup()?;
        Ok(OtlpConfig {
            receiver: ReceiverConfig {
                listen: self.listen,
                grpc_listen: self.grpc_listen,
                bearer_token,
                max_body_bytes: self.max_body_bytes,
                run_timeout: std::time::Duration::from_secs(self.run_timeout),
                host,
                prices,
                experiment: self.experiment.into_experiment()?,
            },
            publish,
        })
    }
}
