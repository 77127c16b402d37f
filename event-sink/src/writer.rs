//! Flushing a batch: one INSERT per table, retried until it succeeds, then one answer per
//! message. The at-least-once guarantee lives here.
//!
//! - First write wins: before any insert, the batch's event_ids are looked up in
//!   `event_ids` (one query per few thousand ids) and [`admission::resolve`] decides
//!   for every event whose id is stored or repeated in the batch (only those bodies are
//!   hashed): original (written), duplicate (acked, not written again) or conflict
//!   (dead-lettered as `conflict`, so the stored original stays what queries show).
//! - Order: the typed tables (concurrently), then `events_raw`, then `dead_letters`. A
//!   row a typed table rejects is left out of `events_raw` and dead-lettered instead.
//!   ClickHouse fills `event_ids` from `events_raw` (a materialized view), after the
//!   typed rows: an id found there has its rows stored, so a duplicate of it can be
//!   skipped safely.
//! - A rejected insert ([`InsertFailure::Rejected`]) is split in halves, recursively,
//!   until the refused rows stand alone; a row refused alone is tried again, alone, and
//!   dead-lettered only when the same refusal repeats ([`failure::Confirmation`]: 3
//!   attempts over at least 2 s). Splits, rows stored on a later attempt and flushes
//!   that needed retries are counted and logged at WARN.
//! - A transient failure retries the tables not yet written, after a capped exponential
//!   backoff, for as long as it takes (or until the caller gives up on shutdown). During
//!   the backoff ClickHouse is probed every [`PROBE_EVERY`]; a probe answering after one
//!   failed ends the wait, so a server or shard that is back is used within a second.
//!   Tables written before the failure are not written again; an insert that failed
//!   midway may have landed anyway, and dedup (ReplacingMergeTree + FINAL) absorbs the
//!   copy.
//! - While a batch waits, every message gets a progress ack each third of `ack_wait`, so
//!   JetStream neither redelivers it nor counts a delivery against `max_deliver`.
//! - Only after every table is written: `Ack` for accepted events, `Term` for dead
//!   letters, then a flush of the NATS connection so the answers are on the server.
//!
//! The inserts go through the [`Inserter`] trait so that the split logic is tested
//! without a server.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::AckKind;
use bench_schemas::EventType;
use bytes::Bytes;
use clickhouse::insert_formatted::InsertFormatted;
use clickhouse::{Client, Row};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::admission::{self, Original};
use crate::batch::{Batch, Index};
use crate::failure::{self, Backoff, Confirmation, InsertFailure};
use crate::metrics::{CauseLabel, ClassLabel, Metrics, OutcomeLabel, TableLabel};
use crate::rowbinary;
use crate::rows::{
    typed_table, ContextDecisionRow, DeliberationRow, ExperimentDecisionRow, FailureRow,
    GenAiEventRow, OptimizerUpdateRow, RunStartRow, RunStopRow, StepRow, Table, TaskValidationRow,
    TestOutcomeRow, ToolCallRow,
};

/// Why an accepted event is dead-lettered after all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `dead_letters.error_class`: `rejected_by_clickhouse` or `conflict`.
    pub class: &'static str,
    /// The error text.
    pub error: String,
}

/// Accepted events dead-lettered after all, by item.
pub type Refused = BTreeMap<Index, Refusal>;

/// The stored originals of some event_ids.
pub type Originals = HashMap<Uuid, Original>;

/// Event ids per lookup query: keeps the query text (about 40 bytes an id) well under
/// ClickHouse's 256 KiB `max_query_size`.
const LOOKUP_CHUNK: usize = 2_000;

/// Writes the rows of some items of a batch into one table, as one INSERT, and looks up
/// stored originals.
pub trait Inserter {
    /// Inserts the rows of `items` into `table`. `refused` says why items are
    /// dead-lettered although they decoded (for `dead_letters` rows).
    fn insert(
        &self,
        table: Table,
        batch: &Batch,
        items: &[Index],
        refused: &Refused,
    ) -> impl std::future::Future<Output = Result<(), InsertFailure>> + Send;

    /// The stored originals of those of `ids` that are stored. Err = transient failure.
    fn originals(
        &self,
        ids: &[Uuid],
    ) -> impl std::future::Future<Output = Result<Originals, String>> + Send;

    /// Whether ClickHouse answers a cheap query touching what inserts and lookups touch
    /// (every shard through the Distributed tables; one shard's replica when writing
    /// shard by shard), within a [`PROBE_EVERY`].
    fn probe(&self) -> impl std::future::Future<Output = bool> + Send;
}

/// How often a flush waiting out its backoff probes ClickHouse ([`Inserter::probe`]).
pub const PROBE_EVERY: Duration = Duration::from_millis(500);

/// The probe ([`Inserter::probe`]).
const PROBE_SQL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../deploy/clickhouse/sink/probe.sql"
));

/// The stored-id lookup ([`Inserter::originals`]).
const ORIGINALS_SQL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../deploy/clickhouse/sink/originals.sql"
));

/// A row of `deploy/clickhouse/sink/originals.sql`.
#[derive(Debug, Row, Deserialize)]
struct OriginalRow {
    /// The event looked up.
    #[serde(with = "clickhouse::serde::uuid")]
    event_id: Uuid,
    /// Body hash of its original.
    original_hash: u64,
    /// Stream sequence of the message that stored the original.
    original_seq: u64,
}

/// The real [`Inserter`]: RowBinary over HTTP with the `clickhouse` crate. Typed rows
/// were encoded on arrival and are copied as they are; `events_raw` and `dead_letters`
/// rows are encoded here ([`rowbinary`]).
#[derive(Clone)]
pub struct ClickHouseInserter {
    /// Clients of the sink's database on each server that can take the rows: the one
    /// server (or the Distributed tables' server on a cluster), or every replica of one
    /// shard. Writes go to [`Self::current`]; a probe moves it to a replica that answers.
    pub replicas: Vec<Client>,
    /// Index in `replicas` of the server written to.
    pub current: Arc<AtomicUsize>,
    /// Whether the tables written and read are a shard's `_local` tables (the
    /// Distributed tables' names otherwise).
    pub local: bool,
    /// Limit on sending one chunk and on waiting for the server's answer.
    pub timeout: Duration,
    /// Stream name, stored in `dead_letters.stream`.
    pub stream: String,
}

/// Bytes sent to ClickHouse per chunk of an insert's body.
const CHUNK: usize = 256 << 10;

/// One INSERT of RowBinary rows that are already encoded, sent in chunks of [`CHUNK`].
struct RowBinaryInsert {
    insert: InsertFormatted,
    /// Rows not sent yet.
    chunk: Vec<u8>,
}

impl RowBinaryInsert {
    /// An INSERT into `table` of the columns of `R`, in its field order.
    fn new<R: Row>(inserter: &ClickHouseInserter, table: &str) -> Self {
        let sql = format!(
            "INSERT INTO `{}`({}) FORMAT RowBinary",
            inserter.table(table),
            R::COLUMN_NAMES
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let timeout = Some(inserter.timeout);
        RowBinaryInsert {
            insert: inserter
                .client()
                .insert_formatted_with(sql)
                .with_timeouts(timeout, timeout),
            chunk: Vec::with_capacity(CHUNK),
        }
    }

    /// Where the next row is encoded; [`Self::sent_if_full`] after each row.
    fn buffer(&mut self) -> &mut Vec<u8> {
        &mut self.chunk
    }

    /// Sends the chunk once it holds [`CHUNK`] bytes.
    async fn sent_if_full(&mut self) -> Result<(), clickhouse::error::Error> {
        if self.chunk.len() >= CHUNK {
            let full = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK));
            self.insert.send(Bytes::from(full)).await?;
        }
        Ok(())
    }

    /// Sends the rest and waits for ClickHouse's answer.
    async fn end(mut self) -> Result<(), clickhouse::error::Error> {
        if !self.chunk.is_empty() {
            self.insert.send(Bytes::from(self.chunk)).await?;
        }
        self.insert.end().await
    }
}

/// Why an insert of rows encoded at flush time failed.
enum WriteError {
    /// ClickHouse or the connection failed.
    ClickHouse(clickhouse::error::Error),
    /// A row has no RowBinary encoding: it is refused, like a row ClickHouse rejects.
    Unencodable(rowbinary::EncodeError),
}

impl From<clickhouse::error::Error> for WriteError {
    fn from(error: clickhouse::error::Error) -> Self {
        WriteError::ClickHouse(error)
    }
}

impl ClickHouseInserter {
    /// An inserter writing through one client.
    pub fn single(client: Client, timeout: Duration, stream: String) -> Self {
        ClickHouseInserter {
            replicas: vec![client],
            current: Arc::new(AtomicUsize::new(0)),
            local: false,
            timeout,
            stream,
        }
    }

    /// The client of the server written to.
    fn client(&self) -> &Client {
        let current = self.current.load(Ordering::Relaxed);
        // `current` is only ever set to an index of `replicas`, which is never empty.
        &self.replicas[current % self.replicas.len()]
    }

    /// `table` as this inserter addresses it: with the `_local` suffix on a shard.
    fn table(&self, table: &str) -> String {
        if self.local {
            format!("{table}{}", crate::cluster::LOCAL_SUFFIX)
        } else {
            table.to_owned()
        }
    }

    /// A shipped sink query reading `event_ids`, addressed like [`Self::table`].
    fn event_ids_query(&self, sql: &str) -> String {
        sql.replacen(
            "FROM event_ids",
            &format!("FROM {}", self.table("event_ids")),
            1,
        )
    }

    /// The typed rows of `items`, as encoded when their messages arrived.
    async fn write_typed(
        &self,
        event_type: EventType,
        batch: &Batch,
        items: &[Index],
    ) -> Result<(), WriteError> {
        macro_rules! insert_of {
            ($($variant:ident => $row:ident),*) => {
                match event_type {
                    $(EventType::$variant => {
                        RowBinaryInsert::new::<$row<'_>>(self, typed_table(event_type))
                    })*
                }
            };
        }
        let mut insert = insert_of!(
            RunStart => RunStartRow, RunStop => RunStopRow, Step => StepRow,
            ToolCall => ToolCallRow, Deliberation => DeliberationRow,
            ContextDecision => ContextDecisionRow, Failure => FailureRow,
            OptimizerUpdate => OptimizerUpdateRow, TestOutcome => TestOutcomeRow,
            TaskValidation => TaskValidationRow, GenaiEvent => GenAiEventRow,
            ExperimentDecision => ExperimentDecisionRow
        );
        for &i in items {
            insert.buffer().extend_from_slice(batch.typed_row(i));
            insert.sent_if_full().await?;
        }
        Ok(insert.end().await?)
    }

    /// Rows of `R` encoded now, one per item of `rows`.
    async fn write<R: Row + Serialize>(
        &self,
        table: &str,
        rows: impl Iterator<Item = R>,
    ) -> Result<(), WriteError> {
        let mut insert = RowBinaryInsert::new::<R>(self, table);
        for row in rows {
            rowbinary::encode(&row, insert.buffer()).map_err(WriteError::Unencodable)?;
            insert.sent_if_full().await?;
        }
        Ok(insert.end().await?)
    }
}

impl Inserter for ClickHouseInserter {
    async fn insert(
        &self,
        table: Table,
        batch: &Batch,
        items: &[Index],
        refused: &Refused,
    ) -> Result<(), InsertFailure> {
        let result = match table {
            Table::Typed(event_type) => self.write_typed(event_type, batch, items).await,
            Table::EventsRaw => {
                let rows = items.iter().filter_map(|&i| batch.item(i).raw_row());
                self.write(table.name(), rows).await
            }
            Table::DeadLetters => {
                let rows = items.iter().map(|&i| {
                    let item = batch.item(i);
                    let (class, error) = match (&item.decoded, refused.get(&i)) {
                        (Err(bad), _) => (bad.class, bad.error.as_str()),
                        (Ok(_), Some(refusal)) => (refusal.class, refusal.error.as_str()),
                        (Ok(_), None) => (failure::REJECTED_BY_CLICKHOUSE, ""),
                    };
                    item.dead_letter_row(&self.stream, class, error)
                });
                self.write(table.name(), rows).await
            }
        };
        result.map_err(|e| match e {
            WriteError::ClickHouse(e) => failure::insert_failure(&e),
            WriteError::Unencodable(e) => InsertFailure::Rejected(e.to_string()),
        })
    }

    async fn probe(&self) -> bool {
        let sql = self.event_ids_query(PROBE_SQL);
        // The server written to first. When it does not answer, the first of the
        // shard's other replicas that does is written to from now on; the probe still
        // reports the failure, so the next one (on that replica) answering ends the
        // retry's wait: a shard with one replica left is used within a second.
        let first = self.current.load(Ordering::Relaxed);
        let n = self.replicas.len();
        let per_replica = PROBE_EVERY / u32::try_from(n).unwrap_or(u32::MAX).max(1);
        for k in 0..n {
            let at = (first + k) % n;
            let probe = self.replicas[at].query(&sql).fetch_one::<u64>();
            if matches!(tokio::time::timeout(per_replica, probe).await, Ok(Ok(_))) {
                self.current.store(at, Ordering::Relaxed);
                return k == 0;
            }
        }
        false
    }

    async fn originals(&self, ids: &[Uuid]) -> Result<Originals, String> {
        // The chunks are looked up concurrently: ClickHouse parses and answers them on
        // several cores, and the flush waits for the slowest, not for their sum.
        let chunks = futures::future::try_join_all(ids.chunks(LOOKUP_CHUNK).map(|chunk| {
            let ids: Vec<String> = chunk.iter().map(Uuid::to_string).collect();
            let lookup = self
                .client()
                .query(&self.event_ids_query(ORIGINALS_SQL))
                .bind(ids)
                .fetch_all::<OriginalRow>();
            // Bounded like the inserts: a connection to a restarting server can hang, and
            // a lookup that never answers would stall the flush instead of retrying it.
            async move {
                tokio::time::timeout(self.timeout, lookup)
                    .await
                    .map_err(|_| {
                        format!(
                            "cannot look up stored event ids: no answer within {:?}",
                            self.timeout
                        )
                    })?
                    .map_err(|e| format!("cannot look up stored event ids: {e}"))
            }
        }))
        .await?;
        Ok(chunks
            .into_iter()
            .flatten()
            .map(|row| {
                let original = Original {
                    body_hash: row.original_hash,
                    stream_seq: row.original_seq,
                };
                (row.event_id, original)
            })
            .collect())
    }
}

/// The flush was given up (shutdown drain timeout); its messages stay unacked and
/// JetStream redelivers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("flush of {messages} messages abandoned; they will be redelivered")]
pub struct Abandoned {
    pub messages: usize,
}

/// What a flush has achieved so far; kept across retries.
#[derive(Debug, Default)]
struct Progress {
    /// Whether first write wins has been applied (the lookup succeeded).
    resolved: bool,
    /// Copies of an original with the same body: acked, not written.
    duplicates: HashSet<Index>,
    /// Tables written completely.
    done: HashSet<Table>,
    /// Accepted events dead-lettered after all: conflicts and rows ClickHouse refused.
    refused: Refused,
    /// Dead letters ClickHouse refused too, with the error; logged and terminated.
    unstorable: BTreeMap<Index, String>,
    /// Where the flush waited.
    waits: StageWaits,
}

/// Where a flush waited, retries included: logged at debug level once it is answered
/// (`RUST_LOG=event_sink::writer=debug`).
#[derive(Debug, Default)]
struct StageWaits {
    /// Looking up stored originals.
    lookup: Duration,
    /// The typed tables, `events_raw` and `dead_letters`, in that order.
    stages: [Duration; 3],
}

impl StageWaits {
    /// Logs the waits of a flush of `messages` messages, which took `answer` to answer.
    fn log(&self, messages: usize, answer: Duration) {
        let ms = |d: Duration| d.as_millis() as u64;
        tracing::debug!(
            messages,
            lookup_ms = ms(self.lookup),
            typed_ms = ms(self.stages[0]),
            raw_ms = ms(self.stages[1]),
            dead_letters_ms = ms(self.stages[2]),
            answer_ms = ms(answer),
            "batch flushed"
        );
    }
}

/// Flushes batches.
pub struct Writer<I> {
    pub inserter: I,
    /// Used to flush acks to the server.
    pub nats: async_nats::Client,
    pub metrics: Metrics,
    pub retry: Backoff,
    /// When a row refused on its own is dead-lettered ([`Confirmation::DEFAULT`]).
    pub confirm: Confirmation,
    /// Progress acks are sent this often while a batch waits.
    pub progress_every: Duration,
}

impl<I: Inserter> Writer<I> {
    /// Writes every row of `batch`, retrying transient failures, then answers every
    /// message. Gives up, leaving the messages unanswered, when `give_up` is cancelled.
    pub async fn flush(&self, batch: &Batch, give_up: &CancellationToken) -> Result<(), Abandoned> {
        let started = Instant::now();
        let progress = {
            let work = self.insert_all(batch);
            tokio::pin!(work);
            let mut ticker = progress_ticker(self.progress_every);
            loop {
                tokio::select! {
                    progress = &mut work => break progress,
                    _ = ticker.tick() => answer_all(batch, AckKind::Progress).await,
                    _ = give_up.cancelled() => {
                        return Err(Abandoned { messages: batch.len() });
                    }
                }
            }
        };
        let answering = Instant::now();
        self.answer(batch, &progress).await;
        progress.waits.log(batch.len(), answering.elapsed());
        self.metrics
            .batch_duration
            .observe(started.elapsed().as_secs_f64());
        Ok(())
    }

    /// Every table, retried until done.
    async fn insert_all(&self, batch: &Batch) -> Progress {
        let mut progress = Progress::default();
        let mut attempt = 0;
        let messages = i64::try_from(batch.len()).unwrap_or(i64::MAX);
        let started = Instant::now();
        while let Err(error) = self.try_insert_all(batch, &mut progress).await {
            attempt += 1;
            if attempt == 1 {
                // Added and taken off again, not set: on a cluster several shard
                // writers share the gauge.
                self.metrics.waiting.inc_by(messages);
            }
            let delay = self.retry.delay(attempt);
            self.metrics
                .retries
                .get_or_create(&CauseLabel {
                    cause: "clickhouse",
                })
                .inc();
            tracing::warn!(
                %error,
                attempt,
                retry_in_ms = delay.as_millis() as u64,
                messages = batch.len(),
                "insert failed; retrying"
            );
            self.wait_or_probe(delay).await;
        }
        if attempt > 0 {
            self.metrics.waiting.dec_by(messages);
            self.metrics.flush_recoveries.inc();
            tracing::warn!(
                failed_attempts = attempt,
                waited_ms = started.elapsed().as_millis() as u64,
                messages = batch.len(),
                "insert recovered after retries"
            );
        }
        progress
    }

    /// Waits `delay`, or less when ClickHouse comes back meanwhile: it is probed every
    /// [`PROBE_EVERY`], and a probe answering after one failed ends the wait, so a server
    /// or shard back after a long outage is used within a second, not after the rest of
    /// a backoff of up to `retry_max_ms`. A probe that answers from the start says the
    /// failure is not about reaching ClickHouse (too many parts, say): the backoff then
    /// runs its course.
    async fn wait_or_probe(&self, delay: Duration) {
        let deadline = tokio::time::Instant::now() + delay;
        let mut seen_down = false;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return;
            }
            tokio::time::sleep(left.min(PROBE_EVERY)).await;
            if tokio::time::Instant::now() >= deadline {
                return;
            }
            let up = self.inserter.probe().await;
            if up && seen_down {
                self.metrics.probes_answered.inc();
                return;
            }
            seen_down |= !up;
        }
    }

    /// One pass over the tables not yet written, in three stages: the typed tables
    /// (concurrently: ClickHouse parses them on several cores), then `events_raw`, then
    /// `dead_letters`. Err = a transient failure.
    async fn try_insert_all(&self, batch: &Batch, progress: &mut Progress) -> Result<(), String> {
        if !progress.resolved {
            let started = Instant::now();
            let resolved = self.resolve(batch, progress).await;
            progress.waits.lookup += started.elapsed();
            resolved?;
        }
        let stages = [
            EventType::ALL.map(Table::Typed).to_vec(),
            vec![Table::EventsRaw],
            vec![Table::DeadLetters],
        ];
        for (waited, stage) in stages.into_iter().enumerate() {
            let started = Instant::now();
            let pending: Vec<(Table, Vec<Index>)> = stage
                .into_iter()
                .filter(|table| !progress.done.contains(table))
                .map(|table| (table, self.items_of(table, batch, progress)))
                .collect();
            let results = futures::future::join_all(pending.iter().map(|(table, items)| {
                insert_isolating(
                    &self.inserter,
                    *table,
                    batch,
                    items,
                    &progress.refused,
                    self.confirm,
                )
            }))
            .await;
            progress.waits.stages[waited] += started.elapsed();
            let mut failure = None;
            for ((table, items), result) in pending.into_iter().zip(results) {
                match result {
                    Ok(refused) => self.record(table, batch, items.len(), refused, progress),
                    Err(error) => failure = Some(error),
                }
            }
            if let Some(error) = failure {
                return Err(error);
            }
        }
        Ok(())
    }

    /// First write wins: looks up the stored originals of the batch's events and marks
    /// duplicates and conflicts.
    async fn resolve(&self, batch: &Batch, progress: &mut Progress) -> Result<(), String> {
        let mut copies: HashMap<Uuid, u32> = HashMap::with_capacity(batch.accepted().len());
        for &i in batch.accepted() {
            if let Ok(env) = &batch.item(i).decoded {
                *copies.entry(env.event_id).or_default() += 1;
            }
        }
        let ids: Vec<Uuid> = copies.keys().copied().collect();
        let originals = self.inserter.originals(&ids).await?;
        // Only events with a stored or repeated id can be duplicates or conflicts: only
        // their bodies are hashed.
        let contested = |id: &Uuid| originals.contains_key(id) || copies.get(id) > Some(&1);
        let candidates: Vec<_> = batch
            .accepted()
            .iter()
            .filter(|&&i| {
                let id = batch.item(i).decoded.as_ref().map(|env| env.event_id);
                id.is_ok_and(|id| contested(&id))
            })
            .filter_map(|&i| batch.item(i).candidate(i))
            .collect();
        let verdicts = admission::resolve(&candidates, &originals);
        progress.duplicates.extend(verdicts.duplicates);
        for (index, error) in verdicts.conflicts {
            let item = batch.item(index);
            tracing::warn!(
                stream_seq = item.delivery.stream_seq,
                subject = %item.delivery.subject,
                %error,
                "conflicting copy of a stored event"
            );
            let class = admission::CONFLICT;
            progress.refused.insert(index, Refusal { class, error });
        }
        progress.resolved = true;
        Ok(())
    }

    /// The items with rows in `table`: the originals not refused, or for `dead_letters`
    /// the bad data and the refused.
    fn items_of(&self, table: Table, batch: &Batch, progress: &Progress) -> Vec<Index> {
        let to_write = |items: &[Index]| -> Vec<Index> {
            items
                .iter()
                .copied()
                .filter(|i| !progress.refused.contains_key(i) && !progress.duplicates.contains(i))
                .collect()
        };
        match table {
            Table::Typed(t) => to_write(batch.of_type(t)),
            Table::EventsRaw => to_write(batch.accepted()),
            Table::DeadLetters => {
                let mut items: Vec<Index> = batch.bad().to_vec();
                items.extend(progress.refused.keys());
                items.sort_unstable();
                items
            }
        }
    }

    /// Marks `table` written, counting its rows, splits and recovered rows, and
    /// remembering the refused ones.
    fn record(
        &self,
        table: Table,
        batch: &Batch,
        written: usize,
        isolated: Isolated,
        progress: &mut Progress,
    ) {
        let label = TableLabel {
            table: table.name(),
        };
        let Isolated {
            refused,
            splits,
            recovered,
        } = isolated;
        self.metrics
            .inserted
            .get_or_create(&label)
            .inc_by((written - refused.len()) as u64);
        if splits > 0 || recovered > 0 {
            self.metrics.splits.get_or_create(&label).inc_by(splits);
            self.metrics
                .rows_recovered
                .get_or_create(&label)
                .inc_by(recovered);
            tracing::warn!(
                table = table.name(),
                rows = written,
                splits,
                refused_alone = refused.len() as u64 + recovered,
                recovered,
                dead_lettered = refused.len(),
                "clickhouse refused data of an insert; split it and retried refused rows alone"
            );
        }
        for (index, error) in refused {
            let item = batch.item(index);
            tracing::warn!(
                table = table.name(),
                stream_seq = item.delivery.stream_seq,
                subject = %item.delivery.subject,
                %error,
                "clickhouse refused a row"
            );
            match table {
                Table::DeadLetters => {
                    progress.unstorable.insert(index, error);
                }
                _ => {
                    let class = failure::REJECTED_BY_CLICKHOUSE;
                    progress.refused.insert(index, Refusal { class, error });
                }
            }
        }
        progress.done.insert(table);
    }

    /// Acks accepted events, terminates dead letters, and pushes the answers out.
    async fn answer(&self, batch: &Batch, progress: &Progress) {
        let (mut acked, mut terminated) = (0u64, 0u64);
        for (index, item) in (0..).zip(batch.items()) {
            let class = match (&item.decoded, progress.refused.get(&index)) {
                (Ok(_), None) => None,
                (Ok(_), Some(refusal)) => Some(refusal.class),
                (Err(bad), _) => Some(bad.class),
            };
            match class {
                None => {
                    item.delivery.answer(AckKind::Ack).await;
                    acked += 1;
                }
                Some(class) => {
                    if let Some(error) = progress.unstorable.get(&index) {
                        tracing::error!(
                            stream_seq = item.delivery.stream_seq,
                            subject = %item.delivery.subject,
                            class,
                            %error,
                            "dead letter refused by clickhouse; terminating the message anyway"
                        );
                    } else {
                        self.metrics
                            .dead_lettered
                            .get_or_create(&ClassLabel { class })
                            .inc();
                    }
                    item.delivery.answer(AckKind::Term).await;
                    terminated += 1;
                }
            }
        }
        self.metrics
            .acked
            .get_or_create(&OutcomeLabel { outcome: "ack" })
            .inc_by(acked);
        self.metrics
            .acked
            .get_or_create(&OutcomeLabel { outcome: "term" })
            .inc_by(terminated);
        if let Err(e) = self.nats.flush().await {
            // The answers may be lost: JetStream then redelivers, dedup absorbs it.
            tracing::warn!(error = %e, "could not flush acks to nats");
        }
    }
}

/// Sends `kind` for every message of the batch.
pub async fn answer_all(batch: &Batch, kind: AckKind) {
    for item in batch.items() {
        item.delivery.answer(kind).await;
    }
}

/// A ticker whose first tick is one period from now.
pub fn progress_ticker(every: Duration) -> tokio::time::Interval {
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker
}

/// What [`insert_isolating`] did besides writing rows.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Isolated {
    /// Rows refused on their own, every time, with the last error: to dead-letter.
    pub refused: Vec<(Index, String)>,
    /// Inserts split in halves because ClickHouse refused their data.
    pub splits: u64,
    /// Rows refused on their own once, then stored by a later attempt.
    pub recovered: u64,
}

/// A row refused on its own, not yet confirmed.
struct Suspect {
    index: Index,
    /// The last refusal.
    error: String,
    /// Attempts in a row that failed with that refusal.
    attempts: u32,
}

/// Inserts `items`; when ClickHouse rejects the data, splits the insert in halves and
/// retries each, down to single rows. A row refused on its own is tried again, alone,
/// until `confirm` holds (the same refusal `confirm.attempts` times over `confirm.over`);
/// only then is it returned as refused. A row stored by a later attempt is counted as
/// recovered. A transient failure ends it (Err), whatever was already written.
pub async fn insert_isolating<I: Inserter>(
    inserter: &I,
    table: Table,
    batch: &Batch,
    items: &[Index],
    refused: &Refused,
    confirm: Confirmation,
) -> Result<Isolated, String> {
    let mut outcome = Isolated::default();
    let mut suspects = Vec::new();
    let mut pending: Vec<Range<usize>> = Vec::new();
    pending.push(0..items.len());
    while let Some(range) = pending.pop() {
        if range.is_empty() {
            continue;
        }
        match inserter
            .insert(table, batch, &items[range.clone()], refused)
            .await
        {
            Ok(()) => {}
            Err(InsertFailure::Transient(error)) => return Err(error),
            Err(InsertFailure::Rejected(error)) if range.len() == 1 => {
                suspects.push(Suspect {
                    index: items[range.start],
                    error,
                    attempts: 1,
                });
            }
            Err(InsertFailure::Rejected(_)) => {
                outcome.splits += 1;
                let middle = range.start + range.len() / 2;
                // Popped first half first, so refused rows come out in order.
                pending.push(middle..range.end);
                pending.push(range.start..middle);
            }
        }
    }
    // All suspects are retried together, each round one spacing after the last: a
    // batch with refused rows waits `confirm.over` once, not once per row.
    while suspects.iter().any(|s| s.attempts < confirm.attempts) {
        tokio::time::sleep(confirm.spacing()).await;
        let mut still = Vec::with_capacity(suspects.len());
        for mut suspect in suspects {
            if suspect.attempts >= confirm.attempts {
                still.push(suspect);
                continue;
            }
            match inserter
                .insert(table, batch, &[suspect.index], refused)
                .await
            {
                Ok(()) => outcome.recovered += 1,
                Err(InsertFailure::Transient(error)) => return Err(error),
                Err(InsertFailure::Rejected(error)) => {
                    // A different refusal starts the count again: a row is dead-lettered
                    // for an error that repeats, not for a run of different ones.
                    if failure::same_refusal(&error, &suspect.error) {
                        suspect.attempts += 1;
                    } else {
                        suspect.attempts = 1;
                    }
                    suspect.error = error;
                    still.push(suspect);
                }
            }
        }
        suspects = still;
    }
    outcome.refused = suspects.into_iter().map(|s| (s.index, s.error)).collect();
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Confirms a refusal in three attempts without waiting long.
    const QUICK: Confirmation = Confirmation {
        attempts: 3,
        over: Duration::from_millis(20),
    };

    /// Rejects any insert holding one of `poison`, and an insert holding a `flaky` row
    /// as many times as the map says; fails transiently `transient` times first.
    /// Records the item lists it accepted.
    struct FakeInserter {
        poison: Vec<Index>,
        flaky: Mutex<HashMap<Index, u32>>,
        transient: Mutex<u32>,
        calls: Mutex<u32>,
        written: Mutex<Vec<Index>>,
    }

    impl FakeInserter {
        fn new(poison: Vec<Index>, transient: u32) -> Self {
            FakeInserter {
                poison,
                flaky: Mutex::new(HashMap::new()),
                transient: Mutex::new(transient),
                calls: Mutex::new(0),
                written: Mutex::new(Vec::new()),
            }
        }
    }

    impl Inserter for FakeInserter {
        async fn insert(
            &self,
            _table: Table,
            _batch: &Batch,
            items: &[Index],
            _refused: &Refused,
        ) -> Result<(), InsertFailure> {
            *self.calls.lock().unwrap_or_else(|e| e.into_inner()) += 1;
            let mut transient = self.transient.lock().unwrap_or_else(|e| e.into_inner());
            if *transient > 0 {
                *transient -= 1;
                return Err(InsertFailure::Transient("server away".into()));
            }
            if let Some(bad) = items.iter().find(|i| self.poison.contains(i)) {
                return Err(InsertFailure::Rejected(format!("row {bad} refused")));
            }
            let mut flaky = self.flaky.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(left) = flaky
                .iter_mut()
                .find_map(|(i, left)| (items.contains(i) && *left > 0).then_some(left))
            {
                *left -= 1;
                return Err(InsertFailure::Rejected("Code: 6, refused for now".into()));
            }
            self.written
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(items);
            Ok(())
        }

        async fn originals(&self, _ids: &[Uuid]) -> Result<Originals, String> {
            Ok(Originals::new())
        }

        async fn probe(&self) -> bool {
            true
        }
    }

    fn run<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
            .block_on(future)
    }

    /// `items` of `events_raw` inserted through `inserter`, refused rows isolated.
    fn isolate(inserter: &FakeInserter, items: &[Index]) -> Result<Isolated, String> {
        run(insert_isolating(
            inserter,
            Table::EventsRaw,
            &Batch::default(),
            items,
            &Refused::new(),
            QUICK,
        ))
    }

    #[test]
    fn a_rejected_row_is_isolated_and_the_rest_written() {
        let inserter = FakeInserter::new(vec![37, 90], 0);
        let items: Vec<Index> = (0..100).collect();
        let isolated = isolate(&inserter, &items).expect("no transient failure");
        let refused: Vec<Index> = isolated.refused.iter().map(|(i, _)| *i).collect();
        assert_eq!(refused, vec![37, 90]);
        let mut written = inserter.written.into_inner().unwrap_or_default();
        written.sort_unstable();
        let expected: Vec<Index> = (0..100).filter(|i| *i != 37 && *i != 90).collect();
        assert_eq!(written, expected);
        // log2(100) levels for each bad row, not one insert per row, plus the two
        // confirmations of each.
        assert!(inserter.calls.into_inner().unwrap_or_default() < 44);
        assert_eq!(isolated.splits, 11);
        assert_eq!(isolated.recovered, 0);
    }

    #[test]
    fn a_row_refused_alone_once_or_twice_is_stored_not_dead_lettered() {
        for refusals in [1, 2] {
            let inserter = FakeInserter::new(vec![], 0);
            // Refused in the whole insert and the two halves holding it, then alone
            // `refusals` times.
            inserter
                .flaky
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(5, 3 + refusals);
            let items: Vec<Index> = (0..10).collect();
            let isolated = isolate(&inserter, &items).expect("no transient failure");
            assert_eq!(isolated.refused, vec![], "refused alone {refusals} times");
            assert_eq!(isolated.recovered, 1);
            let mut written = inserter.written.into_inner().unwrap_or_default();
            written.sort_unstable();
            assert_eq!(written, items);
        }
    }

    #[test]
    fn a_row_is_dead_lettered_only_after_the_same_refusal_three_times_alone() {
        let inserter = FakeInserter::new(vec![3], 0);
        let isolated = isolate(&inserter, &[3]).expect("no transient failure");
        assert_eq!(isolated.refused, vec![(3, "row 3 refused".to_owned())]);
        assert_eq!(inserter.calls.into_inner().unwrap_or_default(), 3);
    }

    #[test]
    fn a_shard_writer_reads_the_shards_own_event_ids() {
        let mut inserter =
            ClickHouseInserter::single(Client::default(), Duration::from_secs(1), "S".into());
        for sql in [PROBE_SQL, ORIGINALS_SQL] {
            assert_eq!(inserter.event_ids_query(sql), sql);
        }
        inserter.local = true;
        for sql in [PROBE_SQL, ORIGINALS_SQL] {
            let local = inserter.event_ids_query(sql);
            let code: String = local
                .lines()
                .filter(|line| !line.trim_start().starts_with("--"))
                .collect();
            assert!(code.contains("FROM event_ids_local"), "{local}");
        }
        assert_eq!(inserter.table("steps"), "steps_local");
    }

    #[test]
    fn a_transient_failure_is_not_a_rejection() {
        let inserter = FakeInserter::new(vec![], 1);
        let items: Vec<Index> = (0..10).collect();
        let result = isolate(&inserter, &items);
        assert_eq!(result, Err("server away".to_owned()));
        assert!(inserter.written.into_inner().unwrap_or_default().is_empty());
    }
}
