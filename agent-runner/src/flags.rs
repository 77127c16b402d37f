//! The flag groups several commands share, declared once and flattened into each:
//! [`ScenarioArgs`] (scenarios directory, pins, artifacts, sandbox), [`EventArgs`]
//! (`--host` and the publishing flags, [`PublishArgs`]), [`OptionalEventArgs`] (those and
//! `--no-publish`), [`LlmArgs`], [`ExperimentArgs`]; and their conversion into validated
//! settings. Nothing here runs anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bench_delivery::{
    PublishConfig, PublishSetup, SpoolConfig, DEFAULT_ACK_TIMEOUT, DEFAULT_DRAIN_TIMEOUT,
    DEFAULT_SPOOL_MAX_BYTES, DEFAULT_WINDOW,
};
use bench_nats::{NatsArgs, StreamSpec};
use bench_sandbox::SandboxMode;
use bench_schemas::ExperimentRef;
use clap::Args;
use secrecy::SecretString;

use crate::error::Error;
use crate::policy::llm::{LlmConfig, DEFAULT_MAX_FORMAT_ERRORS, DEFAULT_MAX_PROVIDER_FAILURES};
use crate::provider::{ProviderConfig, API_KEY_ENV_VARS};
use crate::task_image::ImageCacheArgs;
use bench_pricing::{PriceTable, Prices, TokenPrice};

/// Where scenarios are looked up and where run artifacts go: the same for `run`, `exec`
/// and `sweep`.
#[derive(Debug, Args)]
pub struct ScenarioArgs {
    /// Where scenario names are looked up.
    #[arg(long, env = "BENCH_SCENARIOS_DIR", default_value = "scenarios", value_parser = bench_cli::paths::absolute)]
    pub scenarios_dir: PathBuf,
    /// Run even if a scenario, task or fixture differs from pins.toml.
    #[arg(long, env = "BENCH_RUNNER_ALLOW_UNPINNED")]
    pub allow_unpinned: bool,
    /// Directory of per-run artifacts (<out>/<run_id>/events.jsonl, summary.json).
    // This doc is the --help text: `<name>` is a placeholder, not an HTML tag.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, env = "BENCH_RUNNER_OUT", default_value = ".local/runs", value_parser = bench_cli::paths::absolute)]
    pub out: PathBuf,
    /// Run agent commands as plain processes on this host, without the bubblewrap
    /// sandbox (hosts without user namespaces; run_start then records sandbox kind none).
    #[arg(long, env = "BENCH_RUNNER_UNSANDBOXED")]
    pub unsandboxed: bool,
    /// Where the images of tasks with an `[image]` are cached.
    #[command(flatten)]
    pub images: ImageCacheArgs,
}

impl ScenarioArgs {
    /// The sandbox mode `--unsandboxed` selects.
    pub fn sandbox_mode(&self) -> SandboxMode {
        if self.unsandboxed {
            SandboxMode::Off
        } else {
            SandboxMode::Required
        }
    }
}

/// The events a command emits: the `host` they carry, and the broker, subjects and spool
/// they are published through (`run`, `exec`, `sweep`, `import`).
#[derive(Debug, Args)]
pub struct EventArgs {
    /// `host` on every event. Default: the host name.
    #[arg(long, env = "BENCH_RUNNER_HOST")]
    pub host: Option<String>,
    #[command(flatten)]
    pub publish: PublishArgs,
}

impl EventArgs {
    /// The `host` of the events and the validated publishing setup.
    pub fn into_setup(self) -> Result<(String, PublishSetup), Error> {
        let publish = self.publish.into_setup()?;
        Ok((host_or_default(self.host), publish))
    }
}

/// [`EventArgs`] of a command that can also keep its events local (`--no-publish`).
#[derive(Debug, Args)]
pub struct OptionalEventArgs {
    #[command(flatten)]
    pub events: EventArgs,
    /// Do not publish: local artifacts only.
    #[arg(long, env = "BENCH_RUNNER_NO_PUBLISH")]
    pub no_publish: bool,
}

impl OptionalEventArgs {
    /// The `host` of the events, and the validated publishing setup unless the command
    /// was told not to publish (`--no-publish`; the publishing flags are then not
    /// checked).
    pub fn into_setup(self) -> Result<(String, Option<PublishSetup>), Error> {
        let publish = if self.no_publish {
            None
        } else {
            Some(self.events.publish.into_setup()?)
        };
        Ok((host_or_default(self.events.host), publish))
    }
}

/// Broker, subjects and spool. `--subject-prefix` and `--stream` are [`NatsArgs`]'s,
/// worded here for what publishing does with them.
#[derive(Debug, Args)]
#[command(mut_arg("subject_prefix", |a| a
    .help("Subject prefix: events go to <prefix>.events.<run_id>.<type>")
    .default_value("bench")))]
#[command(mut_arg("stream", |a| a
    .help("Stream name used by --create-stream")
    .default_value("BENCH_EVENTS")))]
pub struct PublishArgs {
    #[command(flatten)]
    pub nats: NatsArgs,
    /// Spool file for events the broker could not take: the first of its slots
    /// (`<stem>.1.spool`, ... are the others); each process takes a free one.
    #[arg(
        value_parser = bench_cli::paths::absolute,
        long,
        env = "BENCH_RUNNER_SPOOL",
        default_value = ".local/spool/agent-runner.spool"
    )]
    pub spool: PathBuf,
    /// Size cap of the spool file, bytes.
    #[arg(long, env = "BENCH_RUNNER_SPOOL_MAX_BYTES", default_value_t = DEFAULT_SPOOL_MAX_BYTES)]
    pub spool_max_bytes: u64,
    /// Publishes awaiting their ack at once.
    #[arg(long, env = "BENCH_RUNNER_PUBLISH_WINDOW", default_value_t = DEFAULT_WINDOW)]
    pub publish_window: usize,
    /// Wait for one ack (and at start for the first connection) before spooling, ms.
    #[arg(long, env = "BENCH_RUNNER_ACK_TIMEOUT_MS", default_value_t = DEFAULT_ACK_TIMEOUT.as_millis() as u64)]
    pub ack_timeout_ms: u64,
    /// At exit, how long to keep trying to empty the spool, ms.
    #[arg(long, env = "BENCH_RUNNER_DRAIN_TIMEOUT_MS", default_value_t = DEFAULT_DRAIN_TIMEOUT.as_millis() as u64)]
    pub drain_timeout_ms: u64,
    /// Create the stream when it is missing (local use; in production the sink does).
    #[arg(long, env = "BENCH_RUNNER_CREATE_STREAM")]
    pub create_stream: bool,
}

impl PublishArgs {
    /// The validated publishing setup.
    pub fn into_setup(mut self) -> Result<PublishSetup, Error> {
        if self.publish_window == 0 {
            return Err(Error::Config("--publish-window must be at least 1".into()));
        }
        let prefix = self.nats.subject_prefix.take().unwrap_or_default();
        let stream = self.nats.stream.take();
        let nats = self
            .nats
            .resolve()
            .map_err(|e| Error::Config(e.to_string()))?;
        let create_stream = self.create_stream.then(|| {
            let defaults = StreamSpec::default();
            StreamSpec {
                name: stream.unwrap_or(defaults.name),
                prefix: prefix.clone(),
                ..defaults
            }
        });
        Ok(PublishSetup {
            nats,
            publish: PublishConfig {
                prefix,
                window: self.publish_window,
                ack_timeout: Duration::from_millis(self.ack_timeout_ms),
                drain_timeout: Duration::from_millis(self.drain_timeout_ms),
                spool: SpoolConfig {
                    path: self.spool,
                    max_bytes: self.spool_max_bytes,
                },
            },
            create_stream,
        })
    }
}

/// The provider of `llm` policies (any OpenAI-compatible API) and its prices.
#[derive(Debug, Clone, Args)]
pub struct LlmArgs {
    /// Base URL of the chat-completions API, e.g. https://openrouter.ai/api/v1,
    /// http://localhost:8000/v1 (vLLM), http://localhost:11434/v1 (Ollama).
    // This doc is the --help text, where a URL is plain text.
    #[allow(rustdoc::bare_urls)]
    #[arg(long, env = "BENCH_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,
    /// Environment variable holding the API key. Default: the first one set of
    /// BENCH_LLM_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY (none = no key).
    #[arg(long, env = "BENCH_LLM_API_KEY_ENV")]
    pub llm_api_key_env: Option<String>,
    /// Per-call timeout of model calls, ms (one HTTP attempt; timeouts are retried only
    /// with the scenario's retry_on_timeout).
    #[arg(long, env = "BENCH_LLM_TIMEOUT_MS", default_value_t = 30_000)]
    pub llm_timeout_ms: u64,
    /// max_tokens of each completion. Default: the provider's.
    #[arg(long, env = "BENCH_LLM_MAX_TOKENS")]
    pub llm_max_tokens: Option<u32>,
    /// Unparseable model replies in a row that end a run with exit_format.
    #[arg(long, env = "BENCH_LLM_MAX_FORMAT_ERRORS", default_value_t = DEFAULT_MAX_FORMAT_ERRORS)]
    pub llm_max_format_errors: u32,
    /// Model calls in a row that get no answer (timeout after retries) that end a run
    /// with exit_api; an HTTP error or an unreachable provider after retries ends it at
    /// once.
    #[arg(long, env = "BENCH_LLM_MAX_PROVIDER_FAILURES", default_value_t = DEFAULT_MAX_PROVIDER_FAILURES)]
    pub llm_max_provider_failures: u32,
    /// Price of prompt tokens, USD per million, instead of the provider's listing (needs
    /// --completion-price-per-mtok).
    #[arg(long, env = "BENCH_LLM_PROMPT_PRICE_PER_MTOK", value_parser = TokenPrice::per_mtok)]
    pub prompt_price_per_mtok: Option<TokenPrice>,
    /// Price of completion tokens (reasoning included), USD per million.
    #[arg(long, env = "BENCH_LLM_COMPLETION_PRICE_PER_MTOK", value_parser = TokenPrice::per_mtok)]
    pub completion_price_per_mtok: Option<TokenPrice>,
    /// Price of cached prompt tokens, USD per million. Default: the prompt price.
    #[arg(long, env = "BENCH_LLM_CACHED_PROMPT_PRICE_PER_MTOK", value_parser = TokenPrice::per_mtok)]
    pub cached_prompt_price_per_mtok: Option<TokenPrice>,
    /// Prices per model (`--prices FILE`).
    #[command(flatten)]
    pub table: PriceTableArgs,
}

/// The price table of the commands that price model calls (`run`, `sweep`, `otlp`).
#[derive(Debug, Clone, Args)]
pub struct PriceTableArgs {
    /// Prices per model, USD per million tokens: a TOML file of `[models."NAME"]` tables
    /// with `prompt`, `completion` and optionally `cached_prompt`, `cache_write`,
    /// `source`. A model it does not name is priced from the provider's listing, else
    /// its cost is null.
    #[arg(long, env = "BENCH_PRICES", value_name = "FILE")]
    pub prices: Option<PathBuf>,
}

impl PriceTableArgs {
    /// The table read, if one is given.
    pub fn load(&self) -> Result<Option<PriceTable>, Error> {
        self.prices
            .as_deref()
            .map(PriceTable::load)
            .transpose()
            .map_err(|e| Error::Config(e.to_string()))
    }
}

impl LlmArgs {
    /// The provider settings; `None` without a base URL.
    pub fn into_config(self) -> Result<Option<LlmConfig>, Error> {
        let Some(base_url) = self.llm_base_url else {
            return Ok(None);
        };
        if self.llm_timeout_ms == 0 {
            return Err(Error::Config("--llm-timeout-ms must be at least 1".into()));
        }
        if self.llm_max_provider_failures == 0 {
            return Err(Error::Config(
                "--llm-max-provider-failures must be at least 1".into(),
            ));
        }
        let set = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let api_key =
            match &self.llm_api_key_env {
                Some(name) => Some(set(name).ok_or_else(|| {
                    Error::Config(format!("--llm-api-key-env: {name} is not set"))
                })?),
                None => API_KEY_ENV_VARS.iter().find_map(|name| set(name)),
            }
            .map(SecretString::from);
        let price_overrides = Prices::from_overrides(
            self.prompt_price_per_mtok,
            self.completion_price_per_mtok,
            self.cached_prompt_price_per_mtok,
        )
        .map_err(|e| Error::Config(e.to_string()))?;
        if price_overrides.is_some() && self.table.prices.is_some() {
            return Err(Error::Config(
                "give prices either per model (--prices) or for the one model \
                 (--prompt-price-per-mtok, --completion-price-per-mtok), not both"
                    .into(),
            ));
        }
        let price_table = self.table.load()?;
        Ok(Some(LlmConfig {
            provider: ProviderConfig {
                base_url,
                api_key,
                timeout: Duration::from_millis(self.llm_timeout_ms),
                max_tokens: self.llm_max_tokens,
            },
            price_overrides,
            price_table,
            max_format_errors: self.llm_max_format_errors,
            max_provider_failures: self.llm_max_provider_failures,
        }))
    }
}

/// The experiment the runs of a command belong to (`run`, `exec`, `otlp`, `import`):
/// `run_start.experiment` and `run_start.tags`.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// Name of the experiment the runs belong to: the set of runs made to answer one
    /// question, which the analysis compares within and never pools with another's.
    #[arg(long, env = "BENCH_EXPERIMENT")]
    pub experiment: Option<String>,
    /// A label of the runs, key=value (repeatable, or comma-separated); the analysis
    /// can group by it (`--by tag:key`).
    #[arg(
        long = "tag",
        env = "BENCH_TAGS",
        value_delimiter = ',',
        value_name = "KEY=VALUE"
    )]
    pub tags: Vec<String>,
}

impl ExperimentArgs {
    /// The experiment and tags, validated: a name that is not blank, each tag
    /// `key=value` with a key that is not blank and given once. `repeat` and
    /// `planned_runs` are the command's to fill.
    pub fn into_experiment(self) -> Result<ExperimentRef, Error> {
        if self
            .experiment
            .as_ref()
            .is_some_and(|n| n.trim().is_empty())
        {
            return Err(Error::Config("--experiment must not be blank".into()));
        }
        let mut tags = BTreeMap::new();
        for tag in self.tags {
            let Some((key, value)) = tag.split_once('=') else {
                return Err(Error::Config(format!("--tag {tag:?}: expected key=value")));
            };
            let key = key.trim();
            if key.is_empty() {
                return Err(Error::Config(format!("--tag {tag:?}: the key is blank")));
            }
            if tags.insert(key.to_owned(), value.to_owned()).is_some() {
                return Err(Error::Config(format!("--tag {key}: given twice")));
            }
        }
        Ok(ExperimentRef {
            name: self.experiment,
            repeat: None,
            tags,
            planned_runs: None,
        })
    }
}

/// `host` on events (`--host`): the given name, else the machine's host name.
fn host_or_default(host: Option<String>) -> String {
    host.unwrap_or_else(|| {
        nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "unknown-host".to_owned())
    })
}

/// A path that exists is a file (made absolute against the current directory, as every
/// path flag is: [`bench_cli::paths::absolute`]); anything else is a name in `dir`.
pub fn resolve_scenario(arg: &str, dir: &Path) -> PathBuf {
    let as_path = PathBuf::from(arg);
    if as_path.is_file() {
        return std::path::absolute(&as_path).unwrap_or(as_path);
    }
    let file = if arg.ends_with(".toml") {
        arg.to_owned()
    } else {
        format!("{arg}.toml")
    };
    dir.join(file)
}
