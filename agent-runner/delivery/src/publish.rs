//! Delivering events to JetStream: acknowledged publishes with a bounded in-flight window,
//! and the spool when the broker is away.
//!
//! Producers (the run loops) hold a cheap [`PublisherHandle`] and hand events over through
//! an unbounded channel: sending never waits, so the agent loop is not slowed by the
//! broker. One worker task per process owns the connection and the [`Spool`]:
//!
//! - **first contact**: the client connects in the background, so the first events
//!   usually arrive before the connection is up. Until the client has connected once,
//!   and for at most [`PublishConfig::ack_timeout`] from start, the worker waits for the
//!   connection instead of spooling (events wait in the channel meanwhile): a broker that
//!   is up gets every event directly, one that is not answering by then is treated as
//!   away.
//! - **direct**: while the spool is empty and the client is connected, each message is
//!   published with its headers and its ack future joins a window of at most
//!   [`PublishConfig::window`] in flight; a new message is taken only when the window has
//!   room.
//! - **spooling**: when a publish or an ack fails for a transient reason (no connection,
//!   ack timeout, no stream yet; decided in [`crate::publish_failure`]), that message and every
//!   later one are appended to the spool (fsync'd), so order is kept and nothing waits in
//!   memory for the broker.
//! - **replay**: while the spool is not empty, the worker retries with backoff: once the
//!   client is connected it publishes the oldest spooled batch, waits for every ack, then
//!   advances the spool's cursor. A fully replayed spool switches back to direct. The same
//!   happens at start when an earlier process left events in the spool.
//!
//! A message that can never be delivered (refused for good, e.g. bigger than the stream
//! allows; no stream for its subject while JetStream is up and has one for this runner's
//! prefix; damaged bytes in the spool) is not retried and does not block the rest: it goes
//! to the spool's quarantine file ([`crate::quarantine`]) with the reason, and counts in
//! [`DeliveryReport::quarantined`].
//!
//! Delivery is at least once: a message whose ack was lost is published again with the
//! same `Nats-Msg-Id`, which JetStream's duplicate window and the sink's dedup absorb.
//!
//! A producer that must not report success before its events are safe (the OTLP receiver,
//! which answers its exporter only then) sends with [`PublisherHandle::send_tracked`]: the
//! [`Receipt`] resolves once the message is acknowledged by JetStream, fsync'd into the
//! spool, or quarantined ([`Settled`]).

use std::collections::VecDeque;
use std::time::Duration;

use async_nats::connection::State;
use async_nats::jetstream;
use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::publish::PublishAck;
use bench_schemas::{BenchmarkEvent, SubjectPrefix};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::FuturesOrdered;
use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::publish_failure::{self, Verdict};
use crate::quarantine::{QuarantineEntry, QuarantineKind};
use crate::spool::{self, Entry, Spool, SpoolConfig, SpoolError};

use crate::outgoing::Outgoing;

/// Default number of publishes awaiting their ack at once.
pub const DEFAULT_WINDOW: usize = 256;
/// Default wait for one ack before the broker counts as away.
pub const DEFAULT_ACK_TIMEOUT: Duration = Duration::from_secs(5);
/// Default time [`Publisher::finish`] keeps trying to empty the spool.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// First and longest pause between replay attempts.
const RETRY_MIN: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(2);
/// Bound on handing one message to the client, which only waits when the client's
/// outgoing buffer is full (connection lost under load).
const SEND_TIMEOUT: Duration = Duration::from_secs(5);
/// Messages moved from the channel to the spool per fsync while spooling.
const SPOOL_BATCH: usize = 1024;

/// How the publisher behaves.
#[derive(Debug, Clone)]
pub struct PublishConfig {
    /// Subject prefix: events go to `<prefix>.events.<run_id>.<type>`. Default `bench`.
    pub prefix: SubjectPrefix,
    /// Publishes in flight (awaiting their ack) at most. Default [`DEFAULT_WINDOW`].
    pub window: usize,
    /// Wait for one ack, and at start for the first connection, before the broker
    /// counts as away. Default [`DEFAULT_ACK_TIMEOUT`].
    pub ack_timeout: Duration,
    /// At [`Publisher::finish`], how long to keep trying to deliver the spool before
    /// leaving it for the next start. Default [`DEFAULT_DRAIN_TIMEOUT`].
    pub drain_timeout: Duration,
    /// The spool file and its cap.
    pub spool: SpoolConfig,
}

/// What happened to the events of a publisher's lifetime.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeliveryReport {
    /// Acknowledged by JetStream (direct and replayed).
    pub published: u64,
    /// Of those, acks flagged `duplicate` (already stored: a replay after a lost ack).
    pub duplicates: u64,
    /// Written to the spool because the broker was away.
    pub spooled: u64,
    /// Published from the spool (this process's and earlier ones').
    pub replayed: u64,
    /// Moved to the spool's quarantine file by this process: records that can never be
    /// delivered and damaged byte ranges of the spool (`agent-runner spool status`).
    pub quarantined: u64,
    /// Still in the spool when the publisher stopped: delivered by the next start.
    pub left_in_spool: u64,
    /// Why the last delivery attempt failed, when something is left in the spool.
    pub last_failure: Option<String>,
}

impl DeliveryReport {
    /// Adds the counts of `other` (a later publisher's); its failure, if any, is the last.
    pub fn add(&mut self, other: DeliveryReport) {
        self.published += other.published;
        self.duplicates += other.duplicates;
        self.spooled += other.spooled;
        self.replayed += other.replayed;
        self.quarantined += other.quarantined;
        self.left_in_spool += other.left_in_spool;
        if other.last_failure.is_some() {
            self.last_failure = other.last_failure;
        }
    }
}

impl std::fmt::Display for DeliveryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "delivery: {} acked ({} duplicates), {} spooled, {} replayed, {} quarantined, {} left in spool",
            self.published,
            self.duplicates,
            self.spooled,
            self.replayed,
            self.quarantined,
            self.left_in_spool
        )?;
        if let Some(why) = &self.last_failure {
            write!(f, " (last attempt: {why})")?;
        }
        if self.quarantined > 0 {
            write!(f, "; see `agent-runner spool status`")?;
        }
        Ok(())
    }
}

/// The publisher failed for good.
#[derive(Debug, thiserror::Error)]
pub enum PublishFailure {
    /// The spool could not be opened or written.
    #[error(transparent)]
    Spool(#[from] SpoolError),
    /// The publisher task panicked or was cancelled.
    #[error("publisher task ended abnormally: {0}")]
    Task(String),
}

/// Where a tracked message ended up: each of these is final for this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Acknowledged by JetStream.
    Acked,
    /// Written to the spool and fsync'd: delivered by this process or the next start.
    Spooled,
    /// Can never be delivered (refused for good); kept in the quarantine file.
    Quarantined,
}

/// Resolves with where a message sent by [`PublisherHandle::send_tracked`] ended up; an
/// error (the sender dropped) means the publisher stopped on a fatal error first.
pub type Receipt = oneshot::Receiver<Settled>;

/// A message on its way to the worker, with the producer waiting for it, if any.
#[derive(Debug)]
struct Queued {
    message: Outgoing,
    ticket: Option<oneshot::Sender<Settled>>,
}

impl Queued {
    /// Tells the waiting producer, if any, where the message ended up.
    fn settle(self, settled: Settled) {
        if let Some(ticket) = self.ticket {
            // The producer may have stopped waiting (its request was cancelled): fine.
            let _ = ticket.send(settled);
        }
    }
}

/// The sending side, cloned into every run.
#[derive(Debug, Clone)]
pub struct PublisherHandle {
    tx: mpsc::UnboundedSender<Queued>,
    prefix: SubjectPrefix,
}

impl PublisherHandle {
    /// Queues an event (whose wire bytes are `payload`) for delivery; never waits.
    /// Returns false when the publisher has stopped (after a fatal spool error).
    pub fn send(&self, event: &BenchmarkEvent, payload: Bytes) -> bool {
        self.tx
            .send(Queued {
                message: Outgoing::new(&self.prefix, event, payload),
                ticket: None,
            })
            .is_ok()
    }

    /// Like [`send`](Self::send), and says when the event is safe: acknowledged, spooled
    /// or quarantined. `None` when the publisher has stopped.
    pub fn send_tracked(&self, event: &BenchmarkEvent, payload: Bytes) -> Option<Receipt> {
        let (ticket, receipt) = oneshot::channel();
        self.tx
            .send(Queued {
                message: Outgoing::new(&self.prefix, event, payload),
                ticket: Some(ticket),
            })
            .ok()
            .map(|()| receipt)
    }
}

/// The worker task and the means to stop it.
#[derive(Debug)]
pub struct Publisher {
    handle: PublisherHandle,
    stop: CancellationToken,
    failed: CancellationToken,
    task: JoinHandle<Result<DeliveryReport, PublishFailure>>,
}

impl Publisher {
    /// Opens the spool (replaying what an earlier process left there as soon as the broker
    /// answers) and starts the worker on `client`, which may still be connecting.
    pub fn start(
        client: async_nats::Client,
        config: PublishConfig,
    ) -> Result<Publisher, SpoolError> {
        let spool = Spool::open(config.spool.clone())?;
        let js = jetstream::context::ContextBuilder::new()
            .timeout(config.ack_timeout)
            // Acks of an interrupted replay are dropped unawaited; free their permits
            // as soon as an awaited ack would have timed out.
            .ack_timeout(config.ack_timeout)
            .max_ack_inflight(config.window.max(1) * 2)
            .backpressure_on_inflight(true)
            .build(client.clone());
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let failed = CancellationToken::new();
        let worker = Worker {
            client,
            js,
            rx,
            spool,
            window: config.window.max(1),
            drain_timeout: config.drain_timeout,
            inflight: FuturesOrdered::new(),
            pending: VecDeque::new(),
            prefix: config.prefix.clone(),
            report: DeliveryReport::default(),
            retry_delay: RETRY_MIN,
            next_attempt: Instant::now(),
            first_contact: Some(Instant::now() + config.ack_timeout),
        };
        let task = tokio::spawn(worker.run(stop.clone(), failed.clone()));
        Ok(Publisher {
            handle: PublisherHandle {
                tx,
                prefix: config.prefix,
            },
            stop,
            failed,
            task,
        })
    }

    /// A handle for producers.
    pub fn handle(&self) -> PublisherHandle {
        self.handle.clone()
    }

    /// Cancelled when the worker stopped on a fatal error (spool full or broken); runs
    /// should stop, their events can no longer be kept.
    pub fn failed(&self) -> CancellationToken {
        self.failed.clone()
    }

    /// Stops taking events once those already sent are in, waits for their acks and
    /// tries to empty the spool for up to the drain timeout. What is left stays in the
    /// spool, fsync'd, for the next start ([`DeliveryReport::left_in_spool`]).
    pub async fn finish(self) -> Result<DeliveryReport, PublishFailure> {
        drop(self.handle);
        self.stop.cancel();
        self.task
            .await
            .map_err(|e| PublishFailure::Task(e.to_string()))?
    }
}

type AckFuture = BoxFuture<'static, Result<PublishAck, PublishError>>;

struct Worker {
    client: async_nats::Client,
    js: jetstream::Context,
    rx: mpsc::UnboundedReceiver<Queued>,
    spool: Spool,
    window: usize,
    drain_timeout: Duration,
    /// Ack futures of direct publishes, in publish order...
    inflight: FuturesOrdered<AckFuture>,
    /// ...and their messages, in the same order (popped as acks come in).
    pending: VecDeque<Queued>,
    /// This runner's prefix: a stream for it tells "no stream for that old subject" from
    /// "no stream yet" ([`publish_failure::no_responders`]).
    prefix: SubjectPrefix,
    report: DeliveryReport,
    /// Current backoff between replay attempts.
    retry_delay: Duration,
    next_attempt: Instant,
    /// Until the client first connects: how long to wait for it before spooling.
    /// `None` once it has connected or the wait is over.
    first_contact: Option<Instant>,
}

impl Worker {
    async fn run(
        mut self,
        stop: CancellationToken,
        failed: CancellationToken,
    ) -> Result<DeliveryReport, PublishFailure> {
        let result = self.serve(stop).await;
        if result.is_err() {
            failed.cancel();
        }
        result
    }

    async fn serve(&mut self, stop: CancellationToken) -> Result<DeliveryReport, PublishFailure> {
        let mut closed = false;
        let mut stopping = false;
        let mut drain_deadline: Option<Instant> = None;
        loop {
            if closed && self.inflight.is_empty() && self.spool.is_empty() {
                break;
            }
            let take = !closed && self.inflight.len() < self.window;
            let replay = !self.spool.is_empty() && self.inflight.is_empty();
            let deadline = drain_deadline.unwrap_or_else(far_future);
            tokio::select! {
                biased;
                Some(result) = self.inflight.next(), if !self.inflight.is_empty() => {
                    self.on_ack(result)?;
                }
                message = self.rx.recv(), if take => match message {
                    Some(message) => self.accept(message).await?,
                    None => {
                        closed = true;
                        drain_deadline = Some(Instant::now() + self.drain_timeout);
                    }
                },
                _ = stop.cancelled(), if !stopping => {
                    // Refuse new sends; `recv` still yields what was sent before.
                    stopping = true;
                    self.rx.close();
                }
                _ = tokio::time::sleep_until(self.next_attempt), if replay => {
                    self.replay_batch().await?;
                }
                _ = tokio::time::sleep_until(deadline), if drain_deadline.is_some() => break,
            }
        }
        // Drain deadline: whatever still waits for an ack goes to the spool, so it is
        // delivered (perhaps twice, deduplicated) by the next start.
        let unacked: Vec<Queued> = self.pending.drain(..).collect();
        if !unacked.is_empty() {
            self.spool_queued(unacked)?;
        }
        self.report.left_in_spool = self.spool.pending();
        self.report.quarantined = self.spool.quarantined();
        if self.report.left_in_spool == 0 {
            self.report.last_failure = None;
        }
        Ok(self.report.clone())
    }

    /// A message from a producer: publish it, or spool it (and what else is queued) when
    /// the spool already holds older messages or the broker is away.
    async fn accept(&mut self, queued: Queued) -> Result<(), PublishFailure> {
        if self.spool.is_empty() && self.connected().await {
            match publish(&self.js, &queued.message).await {
                Ok(ack) => {
                    self.pending.push_back(queued);
                    self.inflight.push_back(ack);
                    return Ok(());
                }
                Err(e) => match publish_failure::classify(&e) {
                    Verdict::Permanent(kind, reason) => {
                        return self.quarantine_message(queued, kind, &reason)
                    }
                    _ => self.failed_attempt(&e.to_string()),
                },
            }
        }
        let mut batch = vec![queued];
        while batch.len() < SPOOL_BATCH {
            match self.rx.try_recv() {
                Ok(m) => batch.push(m),
                Err(_) => break,
            }
        }
        self.spool_queued(batch)
    }

    /// Whether the client is connected; before its first connection, waits for it up to
    /// the first-contact deadline (see the module docs).
    async fn connected(&mut self) -> bool {
        const POLL: Duration = Duration::from_millis(5);
        while let Some(deadline) = self.first_contact {
            if self.client.connection_state() == State::Connected || Instant::now() >= deadline {
                self.first_contact = None;
            } else {
                tokio::time::sleep(POLL.min(deadline - Instant::now())).await;
            }
        }
        self.client.connection_state() == State::Connected
    }

    /// Appends `batch` to the spool (fsync'd), then tells each waiting producer.
    fn spool_queued(&mut self, batch: Vec<Queued>) -> Result<(), PublishFailure> {
        if self.spool.is_empty() {
            tracing::warn!(spool = %self.spool.path().display(), "broker unreachable; spooling events");
        }
        let messages: Vec<Outgoing> = batch.iter().map(|q| q.message.clone()).collect();
        self.spool.append(&messages)?;
        self.report.spooled += messages.len() as u64;
        for queued in batch {
            queued.settle(Settled::Spooled);
        }
        Ok(())
    }

    fn on_ack(&mut self, result: Result<PublishAck, PublishError>) -> Result<(), PublishFailure> {
        let Some(queued) = self.pending.pop_front() else {
            return Ok(());
        };
        match result {
            Ok(ack) => {
                self.count_ack(&ack);
                queued.settle(Settled::Acked);
                Ok(())
            }
            Err(e) => match publish_failure::classify(&e) {
                Verdict::Permanent(kind, reason) => self.quarantine_message(queued, kind, &reason),
                // "No responders" is decided at replay, where JetStream is asked.
                _ => {
                    self.failed_attempt(&e.to_string());
                    self.spool_queued(vec![queued])
                }
            },
        }
    }

    /// Publishes the oldest spooled entries and waits for their acks; quarantines what
    /// can never be delivered; advances the spool past everything settled.
    async fn replay_batch(&mut self) -> Result<(), PublishFailure> {
        if self.client.connection_state() != State::Connected {
            self.report.last_failure = Some("not connected to the broker".to_owned());
            self.back_off();
            return Ok(());
        }
        let batch = self.spool.read_batch(self.window)?;
        // Send the batch, then wait for the acks in order; stop sending at the first
        // failure a retry may fix.
        let mut sent = Vec::with_capacity(batch.len());
        for record in &batch {
            let Entry::Message(message) = &record.entry else {
                sent.push(None);
                continue;
            };
            let result = publish(&self.js, message).await;
            let stop = matches!(&result, Err(e) if matches!(publish_failure::classify(e), Verdict::Transient(_)));
            sent.push(Some(result));
            if stop {
                break;
            }
        }
        let mut quarantine = Vec::new();
        let mut settled: Option<u64> = None;
        let mut count = 0u64;
        let mut failure = None;
        for (record, sent) in batch.iter().zip(sent) {
            let verdict = match (sent, &record.entry) {
                (Some(Ok(ack)), Entry::Message(message)) => match ack.await {
                    Ok(ack) => {
                        self.count_ack(&ack);
                        self.report.replayed += 1;
                        None
                    }
                    Err(e) => Some(decide(&self.js, &self.prefix, &e, &message.subject).await),
                },
                (Some(Err(e)), Entry::Message(message)) => {
                    Some(decide(&self.js, &self.prefix, &e, &message.subject).await)
                }
                // Damaged bytes: the kind and reason come from the spool.
                _ => Some(Verdict::Permanent(QuarantineKind::Corrupt, String::new())),
            };
            match verdict {
                None => {}
                Some(Verdict::Permanent(kind, reason)) => {
                    quarantine.push(record.quarantine_entry(kind, &reason));
                }
                Some(Verdict::Transient(reason)) => {
                    failure = Some(reason);
                    break;
                }
                Some(Verdict::NoResponders) => {
                    failure = Some("no responders".to_owned());
                    break;
                }
            }
            settled = Some(record.end);
            count += 1;
        }
        // Quarantined bytes are durable before the cursor moves past them.
        self.spool.quarantine(&quarantine)?;
        if let Some(end) = settled {
            self.spool.advance(end, count)?;
        }
        match failure {
            Some(reason) => self.failed_attempt(&reason),
            None => {
                self.retry_delay = RETRY_MIN;
                self.next_attempt = Instant::now();
                if self.spool.is_empty() {
                    tracing::info!("spool replayed; publishing directly again");
                }
            }
        }
        Ok(())
    }

    fn count_ack(&mut self, ack: &PublishAck) {
        self.report.published += 1;
        self.report.duplicates += u64::from(ack.duplicate);
    }

    /// A message never spooled that can never be delivered: into the quarantine.
    fn quarantine_message(
        &mut self,
        queued: Queued,
        kind: QuarantineKind,
        reason: &str,
    ) -> Result<(), PublishFailure> {
        let entry = QuarantineEntry::new(
            kind,
            reason,
            None,
            Some(queued.message.identity()),
            &spool::record_line(&queued.message),
        );
        self.spool.quarantine(&[entry])?;
        queued.settle(Settled::Quarantined);
        Ok(())
    }

    /// A delivery attempt failed for a reason a retry may fix: say why, wait longer.
    fn failed_attempt(&mut self, reason: &str) {
        if self.report.last_failure.as_deref() != Some(reason) {
            tracing::warn!(
                reason,
                "delivery failed; events wait in the spool and are retried"
            );
        }
        self.report.last_failure = Some(reason.to_owned());
        self.back_off();
    }

    fn back_off(&mut self) {
        self.next_attempt = Instant::now() + self.retry_delay;
        self.retry_delay = (self.retry_delay * 2).min(RETRY_MAX);
    }
}

/// The verdict on a failed publish of a message on `subject`, asking JetStream when the
/// error alone does not tell. (A free function: the worker itself is not `Sync`.)
async fn decide(
    js: &jetstream::Context,
    prefix: &SubjectPrefix,
    error: &PublishError,
    subject: &str,
) -> Verdict {
    match publish_failure::classify(error) {
        Verdict::NoResponders => publish_failure::no_responders(js, prefix, subject).await,
        verdict => verdict,
    }
}

/// Hands one message to the client; the returned future resolves with its ack.
async fn publish(js: &jetstream::Context, message: &Outgoing) -> Result<AckFuture, PublishError> {
    let publish = PublishMessage::build()
        .payload(message.payload.clone())
        .headers(message.headers());
    let sent = tokio::time::timeout(
        SEND_TIMEOUT,
        js.send_publish(message.subject.clone(), publish),
    )
    .await
    .map_err(|_| PublishError::new(PublishErrorKind::TimedOut))??;
    Ok(Box::pin(std::future::IntoFuture::into_future(sent)))
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365)
}
