//! The `BENCH_EVENTS` stream: its definition and how it is created or verified.
//!
//! The defaults are `deploy/nats/stream-bench-events.json`, embedded here, so that the
//! `nats stream add --config` file and the code cannot disagree. Name, subject prefix and
//! replicas are what deployments change (per team prefix; R3 on a cluster).

use async_nats::jetstream::{self, stream};
use bench_schemas::SubjectPrefix;

const STREAM_JSON: &str = include_str!("../../../deploy/nats/stream-bench-events.json");

/// The stream as a deployment wants it.
#[derive(Debug, Clone)]
pub struct StreamSpec {
    /// Stream name. Default `BENCH_EVENTS`.
    pub name: String,
    /// Subject prefix; the stream captures `<prefix>.events.>`. Default `bench`.
    pub prefix: SubjectPrefix,
    /// Replicas: 1 locally, 3 on a cluster. Default 1.
    pub replicas: usize,
}

impl Default for StreamSpec {
    fn default() -> Self {
        let base = Self::base_config();
        StreamSpec {
            name: base.name,
            prefix: SubjectPrefix::default(),
            replicas: base.num_replicas,
        }
    }
}

/// Creating or verifying the stream failed.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The stream does not exist and was not to be created.
    #[error("stream {name} does not exist (create it, or run without --no-create)")]
    Missing {
        /// The stream.
        name: String,
    },
    /// The stream exists but does not capture the events' subjects.
    #[error("stream {name} does not capture {subject}; its subjects are {actual:?}")]
    WrongSubjects {
        /// The stream.
        name: String,
        /// The subject it should capture.
        subject: String,
        /// The subjects it captures.
        actual: Vec<String>,
    },
    /// JetStream did not answer the lookup.
    #[error("cannot look up stream {name}: {source}")]
    Lookup {
        /// The stream.
        name: String,
        /// The client's error.
        source: jetstream::context::GetStreamError,
    },
    /// JetStream refused to create the stream.
    #[error("cannot create stream {name}: {source}")]
    Create {
        /// The stream.
        name: String,
        /// The client's error.
        source: jetstream::context::CreateStreamError,
    },
    /// JetStream did not answer the stream's info request.
    #[error("cannot read info of stream {name}: {source}")]
    Info {
        /// The stream.
        name: String,
        /// The client's error.
        source: jetstream::context::RequestError,
    },
}

impl StreamSpec {
    fn base_config() -> stream::Config {
        // The file is part of this crate's source; a parse failure is a build defect that
        // the unit test below catches.
        serde_json::from_str(STREAM_JSON)
            .unwrap_or_else(|e| unreachable!("deploy/nats/stream-bench-events.json: {e}"))
    }

    /// The full stream config: the shipped defaults with this spec's name, subjects and
    /// replicas.
    pub fn config(&self) -> stream::Config {
        stream::Config {
            name: self.name.clone(),
            subjects: vec![self.prefix.all_events()],
            num_replicas: self.replicas,
            ..Self::base_config()
        }
    }

    /// Makes sure the stream exists: creates it when absent and `create` is set, otherwise
    /// only checks that it exists and captures the prefix's subjects.
    pub async fn ensure(
        &self,
        js: &jetstream::Context,
        create: bool,
    ) -> Result<stream::Stream, StreamError> {
        let name = self.name.clone();
        let mut stream = match js.get_stream(&self.name).await {
            Ok(stream) => stream,
            Err(e) if is_not_found(&e) => {
                if !create {
                    return Err(StreamError::Missing { name });
                }
                js.create_stream(self.config())
                    .await
                    .map_err(|source| StreamError::Create { name, source })?
            }
            Err(source) => return Err(StreamError::Lookup { name, source }),
        };
        let info = stream.info().await.map_err(|source| StreamError::Info {
            name: self.name.clone(),
            source,
        })?;
        let wanted = self.prefix.all_events();
        if !info.config.subjects.iter().any(|s| s == &wanted) {
            return Err(StreamError::WrongSubjects {
                name: self.name.clone(),
                subject: wanted,
                actual: info.config.subjects.clone(),
            });
        }
        Ok(stream)
    }
}

fn is_not_found(e: &jetstream::context::GetStreamError) -> bool {
    matches!(
        e.kind(),
        jetstream::context::GetStreamErrorKind::JetStream(err)
            if err.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn shipped_stream_definition_parses_with_deliberate_limits() {
        let cfg = StreamSpec::default().config();
        assert_eq!(cfg.name, "BENCH_EVENTS");
        assert_eq!(cfg.subjects, vec!["bench.events.>".to_owned()]);
        assert_eq!(cfg.storage, stream::StorageType::File);
        assert!(cfg.max_age > Duration::ZERO, "max_age must be explicit");
        assert!(cfg.max_bytes > 0, "max_bytes must be explicit");
        assert!(cfg.duplicate_window > Duration::ZERO);
        assert!(cfg.max_message_size >= 1 << 20, "events are up to 1 MiB");
    }
}
