//! The running sink: start-up checks, then two tasks joined by a one-slot channel.
//!
//! - The receiver pulls messages, decodes each once and fills a [`Batch`] until a row or
//!   byte limit or the flush interval says it is due, then hands it over.
//! - The writer flushes batches one at a time ([`Writer::flush`]). On a cluster with
//!   `replica_urls` it is [`shards::write_by_shard`] instead: it splits each batch into
//!   per-shard queues at once and every shard's writer flushes its own queue, so the
//!   bound below is then the consumer's `max_ack_pending`, not two batches.
//!
//! A batch is handed over only when the writer is idle (it holds a one-permit semaphore
//! while it writes), so at most two batches exist at once: one filling, one being
//! written. That bounds memory. A due batch waiting for the writer keeps taking messages
//! until it is full, so a slow insert means a larger next one, not a stalled stream.
//! While the writer is stuck (ClickHouse away), the receiver waits with a full batch and
//! sends no pull requests: nothing more is taken from JetStream, and the held messages
//! get progress acks.
//!
//! Shutdown (the token is cancelled): the receiver stops sending pull requests, takes
//! what the last one still delivers, and hands over its batch; the writer flushes
//! everything handed over and returns. If that takes longer than the drain timeout the
//! writer gives up and the unacked messages are redelivered to the next sink.

use std::time::Duration;

use async_nats::jetstream::consumer::pull::Batch as PullBatch;
use async_nats::jetstream::consumer::PullConsumer;
use async_nats::jetstream::{self, AckKind};
use futures::StreamExt;
use std::sync::Arc;

use bench_schemas::SubjectPrefix;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::batch::Batch;
use crate::failure;
use bench_clickhouse::ClickHouseConfig;

use crate::config::{BatchConfig, Config};
use crate::consumer::{self, ConsumerError, Delivery};
use crate::metrics::{self, CauseLabel, Metrics};
use crate::migrations::{self, MigrationError};
use crate::rows::datetime;
use crate::shards::{self, Layout, LayoutError};
use crate::writer::{self, Abandoned, ClickHouseInserter, Writer};

/// Why the sink stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// ClickHouse did not answer at start-up. The cause is part of the message (and not
    /// a `source`, so that error chains do not print it twice).
    #[error("cannot reach clickhouse at {url}: {}", bench_cli::exit::Chain(error))]
    ClickHouse {
        /// The URL tried.
        url: String,
        /// What went wrong.
        error: clickhouse::error::Error,
    },
    /// ClickHouse answered but refused the user or password.
    #[error("clickhouse at {url} refused user {user:?}: authentication failed ({error})")]
    ClickHouseAuth {
        /// The URL tried.
        url: String,
        /// The user refused.
        user: String,
        /// ClickHouse's answer.
        error: clickhouse::error::Error,
    },
    /// Applying the migrations failed.
    #[error(transparent)]
    Migration(#[from] MigrationError),
    /// NATS is unreachable or refused the credentials.
    #[error(transparent)]
    Nats(#[from] bench_nats::ConnectError),
    /// The stream is missing (`--no-create`) or could not be made.
    #[error(transparent)]
    Stream(#[from] bench_nats::StreamError),
    /// The consumer is missing, wrong, or could not be made.
    #[error(transparent)]
    Consumer(#[from] ConsumerError),
    /// The metrics endpoint could not listen.
    #[error(transparent)]
    Metrics(#[from] metrics::BindError),
    /// The cluster's shard layout could not be read (`--replica-urls`).
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// Shutdown could not flush and ack in `drain_timeout`; the rest is redelivered.
    #[error("shutdown drain timed out: {0}")]
    DrainTimeout(#[from] Abandoned),
}

/// Smallest byte budget of a pull request: above the largest message JetStream can hold
/// here (stream `max_msg_size` 1.1 MB, server `max_payload` 2 MiB), or that message
/// would never be delivered.
const MIN_PULL_BYTES: usize = 4 << 20;

/// How often consumer info is read for the lag gauges.
const LAG_POLL: Duration = Duration::from_secs(5);

/// Checks ClickHouse is reachable, then applies pending migrations. Returns the
/// versions applied. The `migrate` subcommand, and the first step of [`run`].
pub async fn migrate(config: &ClickHouseConfig) -> Result<Vec<u32>, SinkError> {
    let server = config.server_client();
    server
        .query("SELECT 1")
        .fetch_one::<u8>()
        .await
        .map_err(|error| {
            if failure::is_auth_failure(&error) {
                SinkError::ClickHouseAuth {
                    url: config.url.clone(),
                    user: config.user.clone(),
                    error,
                }
            } else {
                SinkError::ClickHouse {
                    url: config.url.clone(),
                    error,
                }
            }
        })?;
    migrations::ensure_database(&server, &config.database, config.cluster.as_deref()).await?;
    Ok(migrations::migrate(
        &config.client(),
        crate::cluster::Target::of(config).as_ref(),
    )
    .await?)
}

/// Runs the sink until `shutdown` is cancelled, then drains. Fails fast, before taking
/// any message, when ClickHouse or NATS is unreachable or refuses the credentials.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), SinkError> {
    let metrics = Metrics::new();
    // Bound first: a port in use is a settings problem, reported before any server is
    // touched.
    let endpoint = match config.metrics.listen {
        Some(addr) => Some(metrics::Endpoint::bind(addr, config.metrics.limits).await?),
        None => None,
    };
    migrate(&config.clickhouse).await?;
    // Writing shard by shard needs the layout before the first message is taken.
    let layout = match &config.clickhouse.cluster {
        Some(cluster) if !config.clickhouse.replica_urls.is_empty() => {
            Some(Layout::discover(&config.clickhouse, cluster).await?)
        }
        _ => None,
    };

    let nats = bench_nats::connect(&config.nats, false).await?;
    let js = jetstream::new(nats.clone());
    let stream = config.stream.ensure(&js, config.create).await?;
    let wanted = consumer::consumer_config(&config.consumer, config.stream.prefix.all_events());
    let pull_consumer = consumer::ensure_consumer(&stream, wanted, config.create).await?;
    tracing::info!(
        stream = %config.stream.name,
        consumer = %config.consumer.name,
        clickhouse = %config.clickhouse.url,
        database = %config.clickhouse.database,
        "sink started"
    );

    // Background tasks stop with `stopped`, cancelled once the pipeline has drained.
    let stopped = CancellationToken::new();
    if let Some(endpoint) = endpoint {
        tracing::info!(bound = %endpoint.local_addr(), "serving /metrics and /healthz");
        endpoint.serve(metrics.clone(), stopped.clone());
    }
    tokio::spawn(poll_lag(
        pull_consumer.clone(),
        metrics.clone(),
        stopped.clone(),
    ));

    // Cancelled `drain_timeout` after `shutdown`: the writer then gives up.
    let give_up = CancellationToken::new();
    tokio::spawn({
        let (shutdown, give_up, stopped) = (shutdown.clone(), give_up.clone(), stopped.clone());
        let timeout = config.batch.drain_timeout;
        async move {
            tokio::select! {
                _ = async { shutdown.cancelled().await; tokio::time::sleep(timeout).await } => {
                    give_up.cancel();
                }
                _ = stopped.cancelled() => {}
            }
        }
    });

    let progress_every = config.consumer.ack_wait / 3;
    let (handover, mut batches) = mpsc::channel::<(Batch, OwnedSemaphorePermit)>(1);
    let writer = Writer {
        inserter: ClickHouseInserter::single(
            config.clickhouse.client(),
            config.clickhouse.insert_timeout,
            config.stream.name.clone(),
        ),
        nats: nats.clone(),
        metrics: metrics.clone(),
        retry: config.batch.retry,
        confirm: failure::Confirmation::DEFAULT,
        progress_every,
    };
    let writing = match layout {
        None => tokio::spawn(async move {
            while let Some((batch, _writer_busy)) = batches.recv().await {
                writer.flush(&batch, &give_up).await?;
            }
            Ok::<(), Abandoned>(())
        }),
        Some(layout) => {
            tracing::info!(shards = ?layout.shards, "writing shard by shard");
            let stream = config.stream.name.clone();
            let writers = shards::shard_writers(&layout, &config.clickhouse, &stream, &writer);
            let metrics = metrics.clone();
            tokio::spawn(shards::write_by_shard(
                layout, writers, batches, stream, metrics, give_up,
            ))
        }
    };

    let receiver = Receiver {
        consumer: pull_consumer,
        limits: config.batch,
        fetch_batch: config.consumer.fetch_batch,
        progress_every,
        prefix: config.stream.prefix.clone(),
        metrics,
        handover,
        writer_idle: Arc::new(Semaphore::new(1)),
    };
    receiver.run(&shutdown).await;

    let drained = match writing.await {
        Ok(result) => result,
        Err(join) => {
            // The writer has no panicking path; a panic is a bug, reported as such.
            tracing::error!(error = %join, "writer task failed");
            Err(Abandoned { messages: 0 })
        }
    };
    stopped.cancel();
    if let Err(e) = nats.flush().await {
        tracing::warn!(error = %e, "final nats flush failed");
    }
    drained?;
    tracing::info!("sink stopped; everything received was written and acked");
    Ok(())
}

/// Pulls messages into batches and hands them to the writer.
struct Receiver {
    consumer: PullConsumer,
    limits: BatchConfig,
    fetch_batch: usize,
    progress_every: Duration,
    /// The stream's subject prefix, which every event's subject must start with.
    prefix: SubjectPrefix,
    metrics: Metrics,
    handover: mpsc::Sender<(Batch, OwnedSemaphorePermit)>,
    /// One permit, travelling with the batch being written.
    writer_idle: Arc<Semaphore>,
}

impl Receiver {
    /// Until `shutdown`; returns once the last batch is handed over (or the writer is
    /// gone).
    async fn run(self, shutdown: &CancellationToken) {
        let mut batch = Batch::default();
        let mut pull: Option<PullBatch> = None;
        let mut stopping = false;
        let mut pull_failures = 0;
        // Keeps the filling batch alive while it waits for the writer.
        let mut progress = writer::progress_ticker(self.progress_every);
        loop {
            let full = batch.is_full(&self.limits);
            if pull.is_none() {
                if stopping {
                    break;
                }
                if !full {
                    match self.pull(&batch).await {
                        Ok(p) => {
                            pull = Some(p);
                            pull_failures = 0;
                        }
                        Err(error) => {
                            pull_failures += 1;
                            let delay = self.limits.retry.delay(pull_failures);
                            self.metrics
                                .retries
                                .get_or_create(&CauseLabel { cause: "nats" })
                                .inc();
                            tracing::warn!(%error, retry_in_ms = delay.as_millis() as u64, "pull request failed");
                            tokio::select! {
                                _ = tokio::time::sleep(delay) => {}
                                _ = shutdown.cancelled() => stopping = true,
                            }
                            continue;
                        }
                    }
                }
            }
            // A due batch goes to the writer as soon as it is idle, and keeps taking
            // messages (up to its limits) until then.
            let deadline = batch.deadline(&self.limits);
            let due = full || deadline.is_some_and(|at| at <= std::time::Instant::now());
            tokio::select! {
                _ = shutdown.cancelled(), if !stopping => stopping = true,
                _ = sleep_until(deadline), if !due => {}
                idle = self.writer_idle.clone().acquire_owned(), if due => {
                    let Ok(idle) = idle else { return };
                    if self.handover.send((std::mem::take(&mut batch), idle)).await.is_err() {
                        return;
                    }
                }
                _ = progress.tick() => writer::answer_all(&batch, AckKind::Progress).await,
                next = next_message(&mut pull), if !full => match next {
                    Some(Ok(message)) => {
                        self.metrics.consumed.inc();
                        let received_at = datetime(chrono::Utc::now().timestamp());
                        batch.receive(Delivery::new(message), received_at, &self.prefix);
                    }
                    Some(Err(error)) => {
                        // A status ending the request early (e.g. 409 when the next message
                        // exceeds the request's byte budget); the next request goes on.
                        tracing::debug!(%error, "pull request ended");
                        pull = None;
                    }
                    None => pull = None,
                },
            }
        }
        if !batch.is_empty() {
            self.hand_over(&mut batch).await;
        }
    }

    /// One pull request sized to what the batch still has room for.
    async fn pull(&self, batch: &Batch) -> Result<PullBatch, async_nats::Error> {
        let room = self.limits.max_rows.saturating_sub(batch.len()).max(1);
        let bytes = self
            .limits
            .max_bytes
            .saturating_sub(batch.bytes())
            .max(MIN_PULL_BYTES);
        let expires = self
            .limits
            .flush_interval
            .clamp(Duration::from_secs(1), Duration::from_secs(5));
        consumer::pull(&self.consumer, room.min(self.fetch_batch), bytes, expires).await
    }

    /// Hands the batch to the writer once it is idle, keeping the messages alive with
    /// progress acks meanwhile. False when the writer is gone.
    async fn hand_over(&self, batch: &mut Batch) -> bool {
        let mut ticker = writer::progress_ticker(self.progress_every);
        loop {
            tokio::select! {
                idle = self.writer_idle.clone().acquire_owned() => {
                    let Ok(idle) = idle else { return false };
                    return self.handover.send((std::mem::take(batch), idle)).await.is_ok();
                }
                _ = ticker.tick() => writer::answer_all(batch, AckKind::Progress).await,
            }
        }
    }
}

async fn next_message(
    pull: &mut Option<PullBatch>,
) -> Option<Result<jetstream::Message, async_nats::Error>> {
    match pull {
        Some(p) => p.next().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<std::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

/// Copies the consumer's pending / ack-pending / redelivered counts into the gauges.
async fn poll_lag(mut consumer: PullConsumer, metrics: Metrics, stopped: CancellationToken) {
    let mut ticker = tokio::time::interval(LAG_POLL);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stopped.cancelled() => return,
        }
        match consumer.info().await {
            Ok(info) => {
                metrics
                    .pending
                    .set(i64::try_from(info.num_pending).unwrap_or(i64::MAX));
                metrics
                    .ack_pending
                    .set(i64::try_from(info.num_ack_pending).unwrap_or(i64::MAX));
                metrics
                    .redelivered
                    .set(i64::try_from(info.num_redelivered).unwrap_or(i64::MAX));
            }
            Err(e) => tracing::debug!(error = %e, "consumer info unavailable"),
        }
    }
}
