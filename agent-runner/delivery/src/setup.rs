//! Publisher start-up: what every publishing command starts with. [`PublishSetup`] is the
//! broker side of a command (how to connect, how to publish and spool, whether to create
//! the stream); [`Publisher::connect`] connects (retrying in the background), creates the
//! stream when asked, and starts the publisher.

use bench_nats::{ConnectError, NatsConfig, StreamSpec};

use crate::publish::{PublishConfig, Publisher};
use crate::spool::SpoolError;

/// The broker side of a publishing command.
#[derive(Debug, Clone)]
pub struct PublishSetup {
    /// How to connect.
    pub nats: NatsConfig,
    /// How to publish and spool.
    pub publish: PublishConfig,
    /// Create the stream if it is missing (local use; in production the sink creates it).
    pub create_stream: Option<StreamSpec>,
}

/// Why a publisher could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The NATS connection could not even be attempted (bad credentials file, bad URL).
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The spool could not be opened (locked by another runner, I/O error).
    #[error(transparent)]
    Spool(#[from] SpoolError),
}

impl Publisher {
    /// Connects (retrying in the background: a runner must run while the broker is away),
    /// creates the stream when [`PublishSetup::create_stream`] asks for it (a failure is
    /// logged, publishing goes on), and [starts](Publisher::start) the publisher.
    pub async fn connect(setup: &PublishSetup) -> Result<Publisher, StartError> {
        let client = bench_nats::connect(&setup.nats, true).await?;
        if let Some(spec) = &setup.create_stream {
            let js = async_nats::jetstream::new(client.clone());
            if let Err(e) = spec.ensure(&js, true).await {
                tracing::warn!(error = %e, "cannot create or check the stream now; publishing anyway");
            }
        }
        Ok(Publisher::start(client, setup.publish.clone())?)
    }
}
