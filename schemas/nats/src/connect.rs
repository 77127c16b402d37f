//! Connection options and the one place that turns them into an `async_nats::Client`.

use std::path::PathBuf;
use std::time::Duration;

use bench_schemas::SubjectPrefix;
use secrecy::{ExposeSecret as _, SecretString};
use serde::Deserialize;

/// NATS connection settings as given by a user: every field optional so that a config file,
/// environment variables and flags can be layered (`file < env < flags`, see
/// [`NatsArgs::merge`]). Flatten into a clap parser with `#[command(flatten)]`, or into a
/// TOML section with serde. Password, token and nkey are [`SecretString`]s: `Debug`
/// prints none of them.
#[derive(Debug, Clone, Default, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatsArgs {
    /// NATS server URL(s), comma-separated. Default `nats://127.0.0.1:4222`.
    #[arg(id = "nats_url", long = "nats-url", env = "BENCH_NATS_URL")]
    pub url: Option<String>,
    /// User name for user/password auth.
    #[arg(id = "nats_user", long = "nats-user", env = "BENCH_NATS_USER")]
    pub user: Option<String>,
    /// Password for user/password auth.
    #[arg(
        long = "nats-password",
        env = "BENCH_NATS_PASSWORD",
        hide_env_values = true
    )]
    pub password: Option<SecretString>,
    /// Token auth.
    #[arg(
        id = "nats_token",
        long = "nats-token",
        env = "BENCH_NATS_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<SecretString>,
    /// NKey seed (`SU...`) for nkey auth.
    #[arg(
        id = "nats_nkey",
        long = "nats-nkey",
        env = "BENCH_NATS_NKEY",
        hide_env_values = true
    )]
    pub nkey: Option<SecretString>,
    /// Path of a `.creds` file (JWT + nkey seed).
    #[arg(id = "nats_creds", long = "nats-creds", env = "BENCH_NATS_CREDS")]
    pub creds: Option<PathBuf>,
    /// CA certificate (PEM) to verify the server with; implies TLS.
    #[arg(id = "nats_tls_ca", long = "nats-tls-ca", env = "BENCH_NATS_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS; needs its key (`--nats-tls-key`).
    #[arg(
        id = "nats_tls_cert",
        long = "nats-tls-cert",
        env = "BENCH_NATS_TLS_CERT"
    )]
    pub tls_cert: Option<PathBuf>,
    /// Client key (PEM) for mutual TLS; needs its certificate (`--nats-tls-cert`).
    #[arg(id = "nats_tls_key", long = "nats-tls-key", env = "BENCH_NATS_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// Refuse to connect without TLS. Default false (true when a CA or client cert is set).
    #[arg(
        id = "nats_tls_required",
        long = "nats-tls-required",
        env = "BENCH_NATS_TLS_REQUIRED"
    )]
    pub tls_required: Option<bool>,
    /// Timeout of one connection attempt, ms. Default 5000.
    #[arg(
        long = "nats-connect-timeout-ms",
        env = "BENCH_NATS_CONNECT_TIMEOUT_MS"
    )]
    pub connect_timeout_ms: Option<u64>,
    /// Client name shown by the server (`nats server report connections`).
    #[arg(id = "nats_name", long = "nats-name", env = "BENCH_NATS_NAME")]
    pub name: Option<String>,
    /// Subject prefix of the events (`<prefix>.events.<run_id>.<type>`). Default `bench`.
    /// A flag (and variable) only: in a config file it belongs to the stream's section,
    /// and each binary words its help for what it does with it (`mut_arg`).
    #[arg(
        id = "subject_prefix",
        long = "subject-prefix",
        env = "BENCH_SUBJECT_PREFIX",
        value_name = "SUBJECT_PREFIX"
    )]
    #[serde(skip)]
    pub subject_prefix: Option<SubjectPrefix>,
    /// Name of the events stream. Default `BENCH_EVENTS`. A flag (and variable) only, as
    /// `subject_prefix`.
    #[arg(
        id = "stream",
        long = "stream",
        env = "BENCH_STREAM",
        value_name = "STREAM"
    )]
    #[serde(skip)]
    pub stream: Option<String>,
}

/// Default server URL.
pub const DEFAULT_URL: &str = "nats://127.0.0.1:4222";
/// Default connection timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

macro_rules! merge_fields {
    ($hi:ident, $lo:ident, $($field:ident),+) => {
        NatsArgs { $($field: $hi.$field.or($lo.$field)),+ }
    };
}

impl NatsArgs {
    /// Field by field, `self` wins over `lower` (e.g. flags+env over the config file).
    pub fn merge(self, lower: NatsArgs) -> NatsArgs {
        merge_fields!(
            self,
            lower,
            url,
            user,
            password,
            token,
            nkey,
            creds,
            tls_ca,
            tls_cert,
            tls_key,
            tls_required,
            connect_timeout_ms,
            name,
            subject_prefix,
            stream
        )
    }

    /// Checks the combination and fills defaults.
    pub fn resolve(self) -> Result<NatsConfig, NatsConfigError> {
        let auth = match (self.user, self.password, self.token, self.nkey, self.creds) {
            (None, None, None, None, None) => NatsAuth::None,
            (Some(user), Some(password), None, None, None) => {
                NatsAuth::UserPassword { user, password }
            }
            (Some(_), None, None, None, None) | (None, Some(_), None, None, None) => {
                return Err(NatsConfigError::UserPasswordPair)
            }
            (None, None, Some(token), None, None) => NatsAuth::Token(token),
            (None, None, None, Some(seed), None) => NatsAuth::NKey(seed),
            (None, None, None, None, Some(path)) => NatsAuth::CredsFile(path),
            _ => return Err(NatsConfigError::SeveralAuthMethods),
        };
        let client_cert = match (self.tls_cert, self.tls_key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            _ => return Err(NatsConfigError::CertKeyPair),
        };
        let tls_required =
            self.tls_required.unwrap_or(false) || self.tls_ca.is_some() || client_cert.is_some();
        let url = self.url.unwrap_or_else(|| DEFAULT_URL.to_owned());
        // A URL that cannot parse is a usage error now, not a connection failure later
        // (a client that retries in the background would never report it).
        server_addrs(&url)?;
        Ok(NatsConfig {
            url,
            auth,
            tls_ca: self.tls_ca,
            client_cert,
            tls_required,
            connect_timeout: self
                .connect_timeout_ms
                .map_or(DEFAULT_CONNECT_TIMEOUT, Duration::from_millis),
            name: self.name,
        })
    }
}

/// How the client authenticates. At most one method at a time. Its secrets are
/// [`SecretString`]s, so `Debug` prints none of them.
#[derive(Debug, Clone)]
pub enum NatsAuth {
    /// No credentials.
    None,
    /// User name and password.
    UserPassword {
        /// The user name.
        user: String,
        /// The password.
        password: SecretString,
    },
    /// A token.
    Token(SecretString),
    /// An NKey seed (`SU...`).
    NKey(SecretString),
    /// A `.creds` file (JWT + nkey seed), read when connecting.
    CredsFile(PathBuf),
}

/// Validated connection settings.
#[derive(Debug, Clone)]
pub struct NatsConfig {
    /// Server URL(s), comma-separated.
    pub url: String,
    /// How the client authenticates.
    pub auth: NatsAuth,
    /// CA certificate (PEM) to verify the server with.
    pub tls_ca: Option<PathBuf>,
    /// Client certificate and key (PEM) for mutual TLS.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// Refuse to connect without TLS.
    pub tls_required: bool,
    /// Timeout of one connection attempt.
    pub connect_timeout: Duration,
    /// Client name shown by the server; `None` leaves the client's default.
    pub name: Option<String>,
}

impl NatsConfig {
    /// Plain `url`, no auth, no TLS (tests and local use).
    pub fn plain(url: impl Into<String>) -> NatsConfig {
        NatsConfig {
            url: url.into(),
            auth: NatsAuth::None,
            tls_ca: None,
            client_cert: None,
            tls_required: false,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            name: None,
        }
    }
}

/// A combination of settings that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NatsConfigError {
    /// A user without a password, or a password without a user.
    #[error("nats user and password must be given together")]
    UserPasswordPair,
    /// More than one auth method given.
    #[error("choose one nats auth method: user/password, token, nkey or creds file")]
    SeveralAuthMethods,
    /// A client certificate without its key, or a key without its certificate.
    #[error("nats TLS client certificate and key must be given together")]
    CertKeyPair,
    /// No server URL.
    #[error("nats url is empty")]
    EmptyUrl,
    /// A server URL the client cannot parse.
    #[error("invalid nats url {server:?}: {reason} (expected host:port or nats://, tls://, ws://, wss:// URLs, comma-separated)")]
    BadUrl {
        /// The server entry that does not parse.
        server: String,
        /// Why, as the client's parser says.
        reason: String,
    },
}

/// The server addresses of a comma-separated URL list.
fn server_addrs(url: &str) -> Result<Vec<async_nats::ServerAddr>, NatsConfigError> {
    if url.trim().is_empty() {
        return Err(NatsConfigError::EmptyUrl);
    }
    url.split(',')
        .map(str::trim)
        .map(|server| {
            server
                .parse()
                .map_err(|e: std::io::Error| NatsConfigError::BadUrl {
                    server: server.to_owned(),
                    reason: e.to_string(),
                })
        })
        .collect()
}

/// Why connecting failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The `.creds` file could not be read.
    #[error("cannot read nats creds file {path}: {source}")]
    CredsFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The server could not be reached, or refused the client.
    #[error("cannot connect to nats at {url}: {source}")]
    Connect {
        /// The server URL(s).
        url: String,
        /// The client's error.
        source: async_nats::ConnectError,
    },
}

/// Connects with the given settings. Without `retry_initial`, an unreachable server or
/// rejected credentials fail at once with a clear error; with it, the client keeps trying
/// in the background (a runner that must keep running while the broker is away).
pub async fn connect(
    config: &NatsConfig,
    retry_initial: bool,
) -> Result<async_nats::Client, ConnectError> {
    let mut options = match &config.auth {
        NatsAuth::None => async_nats::ConnectOptions::new(),
        NatsAuth::UserPassword { user, password } => {
            async_nats::ConnectOptions::with_user_and_password(
                user.clone(),
                password.expose_secret().to_owned(),
            )
        }
        NatsAuth::Token(token) => {
            async_nats::ConnectOptions::with_token(token.expose_secret().to_owned())
        }
        NatsAuth::NKey(seed) => {
            async_nats::ConnectOptions::with_nkey(seed.expose_secret().to_owned())
        }
        NatsAuth::CredsFile(path) => async_nats::ConnectOptions::with_credentials_file(path)
            .await
            .map_err(|source| ConnectError::CredsFile {
                path: path.clone(),
                source,
            })?,
    };
    if let Some(ca) = &config.tls_ca {
        options = options.add_root_certificates(ca.clone());
    }
    if let Some((cert, key)) = &config.client_cert {
        options = options.add_client_certificate(cert.clone(), key.clone());
    }
    options = options
        .require_tls(config.tls_required)
        .connection_timeout(config.connect_timeout)
        .max_reconnects(None);
    if let Some(name) = &config.name {
        options = options.name(name);
    }
    if retry_initial {
        options = options.retry_on_initial_connect();
    }
    let addrs = server_addrs(&config.url).map_err(|e| ConnectError::Connect {
        url: config.url.clone(),
        source: async_nats::ConnectError::with_source(async_nats::ConnectErrorKind::ServerParse, e),
    })?;
    options
        .connect(addrs)
        .await
        .map_err(|source| ConnectError::Connect {
            url: config.url.clone(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_file() {
        let file = NatsArgs {
            url: Some("nats://file:4222".into()),
            token: Some("t".into()),
            ..NatsArgs::default()
        };
        let flags = NatsArgs {
            url: Some("nats://flag:4222".into()),
            ..NatsArgs::default()
        };
        let cfg = flags.merge(file).resolve().expect("valid");
        assert_eq!(cfg.url, "nats://flag:4222");
        assert!(matches!(cfg.auth, NatsAuth::Token(t) if t.expose_secret() == "t"));
    }

    #[test]
    fn conflicting_auth_is_refused() {
        let both = NatsArgs {
            token: Some("t".into()),
            nkey: Some("SU".into()),
            ..NatsArgs::default()
        };
        assert_eq!(
            both.resolve().err(),
            Some(NatsConfigError::SeveralAuthMethods)
        );
        let half = NatsArgs {
            user: Some("u".into()),
            ..NatsArgs::default()
        };
        assert_eq!(
            half.resolve().err(),
            Some(NatsConfigError::UserPasswordPair)
        );
    }

    /// Flattened next to other `url`/`user` fields (the sink's ClickHouse args), the ids
    /// must not clash: clap panics at parse time when they do.
    #[test]
    fn flattens_beside_other_url_fields() {
        use clap::{CommandFactory, Parser};
        #[derive(Debug, Parser)]
        struct Cli {
            #[command(flatten)]
            nats: NatsArgs,
            #[arg(long = "other-url")]
            url: Option<String>,
            #[arg(long = "other-user")]
            user: Option<String>,
        }
        Cli::command().debug_assert();
        let cli = Cli::parse_from(["x", "--nats-url", "nats://a:1", "--other-url", "http://b"]);
        assert_eq!(cli.nats.url.as_deref(), Some("nats://a:1"));
        assert_eq!(cli.url.as_deref(), Some("http://b"));
        assert_eq!(cli.user, None);
    }

    #[test]
    fn garbage_urls_are_refused_before_connecting() {
        for url in [
            "nats://bad host:4222",
            "http://127.0.0.1:4222",
            "nats://a:notaport",
        ] {
            let args = NatsArgs {
                url: Some(format!("nats://127.0.0.1:4222, {url}")),
                ..NatsArgs::default()
            };
            match args.resolve() {
                Err(NatsConfigError::BadUrl { server, .. }) => assert_eq!(server, url),
                other => panic!("{url}: {other:?}"),
            }
        }
        let good = NatsArgs {
            url: Some("127.0.0.1:4222,tls://nats.example:4443".into()),
            ..NatsArgs::default()
        };
        assert!(good.resolve().is_ok());
    }

    #[test]
    fn secrets_are_not_debug_printed() {
        for args in [
            NatsArgs {
                user: Some("u".into()),
                password: Some("hunter2".into()),
                ..NatsArgs::default()
            },
            NatsArgs {
                token: Some("hunter2".into()),
                ..NatsArgs::default()
            },
            NatsArgs {
                nkey: Some("hunter2".into()),
                ..NatsArgs::default()
            },
        ] {
            assert!(!format!("{args:?}").contains("hunter2"));
            let config = args.resolve().expect("valid");
            assert!(!format!("{config:?}").contains("hunter2"));
        }
    }
}
