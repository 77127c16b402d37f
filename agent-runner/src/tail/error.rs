//! What only `agent-runner tail` can meet ([`TailError`]) and its exit code.

use crate::error::{CommandError, Error, Exit};

/// What only a tail can meet: the stream or its consumer failed. An unreachable broker is
/// a [`Error`] of its own.
#[derive(Debug, thiserror::Error)]
pub enum TailError {
    /// The stream cannot be found or read.
    #[error("stream {stream}: {source}")]
    Stream {
        /// The stream name.
        stream: String,
        /// The server's answer.
        source: async_nats::jetstream::context::GetStreamError,
    },
    /// The tail's consumer cannot be created.
    #[error("cannot create the tail's consumer on stream {stream}: {source}")]
    Consumer {
        /// The stream name.
        stream: String,
        /// The server's answer.
        source: async_nats::jetstream::stream::ConsumerError,
    },
    /// The tail's consumer cannot be read.
    #[error("cannot read from the tail's consumer: {0}")]
    Messages(#[from] async_nats::jetstream::consumer::StreamError),
}

impl CommandError for TailError {
    fn exit(&self) -> Exit {
        match self {
            TailError::Stream { .. } | TailError::Consumer { .. } | TailError::Messages(_) => {
                Exit::Failure
            }
        }
    }
}

impl From<TailError> for Error {
    fn from(e: TailError) -> Error {
        Error::Command(e.into())
    }
}
