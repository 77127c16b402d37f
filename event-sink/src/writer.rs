//! Flushing a batch: one INSERT per table, retried until it succeeds, then one answer per
//! message. The at-least-once guarantee lives here.
//!
//! - Order: the typed tables (concurrently), then `events_raw`, then `dead_letters`. A
//!   row a typed table rejects is left out of `events_raw` and dead-lettered instead.
//! - A rejected insert ([`InsertFailure::Rejected`]) is split in halves, recursively,
//!   until the refused rows stand alone; only those are dead-lettered.
//! - A transient failure retries the tables not yet written, after a capped exponential
//!   backoff, for as long as it takes (or until the caller gives up on shutdown). Tables
//!   written before the failure are not written again; an insert that failed midway may
//!   have landed anyway, and dedup (ReplacingMergeTree + FINAL) absorbs the copy.
//! - While a batch waits, every message gets a progress ack each third of `ack_wait`, so
//!   JetStream neither redelivers it nor counts a delivery against `max_deliver`.
//! - Only after every table is written: `Ack` for accepted events, `Term` for dead
//!   letters, then a flush of the NATS connection so the answers are on the server.
//!
//! The inserts go through the [`Inserter`] trait so that the split logic is tested
//! without a server.

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;
use std::time::{Duration, Instant};

use async_nats::jetstream::AckKind;
use clickhouse::insert::Insert;
use clickhouse::{Client, Row, RowWrite};
use schemas::EventType;
use tokio_util::sync::CancellationToken;

use crate::batch::{Batch, Index};
use crate::classify::{self, Backoff, InsertFailure};
use crate::metrics::{CauseLabel, ClassLabel, Metrics, OutcomeLabel, TableLabel};
use crate::rows::{
    ContextDecisionRow, DeliberationRow, EventRawRow, FailureRow, FromEvent, OptimizerUpdateRow,
    RunStartRow, RunStopRow, StepRow, Table, ToolCallRow,
};

/// Rows ClickHouse refused, by item, with its error text.
pub type Rejected = BTreeMap<Index, String>;

/// Writes the rows of some items of a batch into one table, as one INSERT.
pub trait Inserter {
    /// Inserts the rows of `items` into `table`. `rejected` gives the error text of
    /// items dead-lettered because ClickHouse refused them (for `dead_letters` rows).
    fn insert(
        &self,
        table: Table,
        batch: &Batch,
        items: &[Index],
        rejected: &Rejected,
    ) -> impl std::future::Future<Output = Result<(), InsertFailure>> + Send;
}

/// The real [`Inserter`]: RowBinary over HTTP with the `clickhouse` crate.
#[derive(Clone)]
pub struct ClickHouseInserter {
    /// Client of the sink's database.
    pub client: Client,
    /// Limit on sending one chunk and on waiting for the server's answer.
    pub timeout: Duration,
    /// Stream name, stored in `dead_letters.stream`.
    pub stream: String,
}

impl ClickHouseInserter {
    async fn start<R: Row>(&self, table: &str) -> Result<Insert<R>, clickhouse::error::Error> {
        Ok(self
            .client
            .insert::<R>(table)
            .await?
            .with_timeouts(Some(self.timeout), Some(self.timeout)))
    }

    async fn write<'b, R: RowWrite>(
        &self,
        table: &str,
        rows: impl Iterator<Item = R::Value<'b>>,
    ) -> Result<(), clickhouse::error::Error> {
        let mut insert = self.start::<R>(table).await?;
        for row in rows {
            insert.write(&row).await?;
        }
        insert.end().await
    }

    /// Typed rows are built from the body decoded again, one at a time, so that only
    /// the JSON is held per message.
    async fn write_typed(
        &self,
        event_type: EventType,
        batch: &Batch,
        items: &[Index],
    ) -> Result<(), clickhouse::error::Error> {
        let table = Table::Typed(event_type).name();
        macro_rules! typed {
            ($row:ident) => {{
                let mut insert = self.start::<$row<'_>>(table).await?;
                for &i in items {
                    let item = batch.item(i);
                    let Some(event) = item.event() else { continue };
                    if let Some(row) = $row::from_event(&event, item.arrival()) {
                        insert.write(&row).await?;
                    }
                }
                insert.end().await
            }};
        }
        match event_type {
            EventType::RunStart => typed!(RunStartRow),
            EventType::RunStop => typed!(RunStopRow),
            EventType::Step => typed!(StepRow),
            EventType::ToolCall => typed!(ToolCallRow),
            EventType::Deliberation => typed!(DeliberationRow),
            EventType::ContextDecision => typed!(ContextDecisionRow),
            EventType::Failure => typed!(FailureRow),
            EventType::OptimizerUpdate => typed!(OptimizerUpdateRow),
        }
    }
}

impl Inserter for ClickHouseInserter {
    async fn insert(
        &self,
        table: Table,
        batch: &Batch,
        items: &[Index],
        rejected: &Rejected,
    ) -> Result<(), InsertFailure> {
        let result = match table {
            Table::Typed(event_type) => self.write_typed(event_type, batch, items).await,
            Table::EventsRaw => {
                let rows = items.iter().filter_map(|&i| batch.item(i).raw_row());
                self.write::<EventRawRow<'_>>(table.name(), rows).await
            }
            Table::DeadLetters => {
                let rows = items.iter().map(|&i| {
                    let item = batch.item(i);
                    let (class, error) = match (&item.decoded, rejected.get(&i)) {
                        (Err(bad), _) => (bad.class, bad.error.as_str()),
                        (Ok(_), Some(error)) => (classify::REJECTED_BY_CLICKHOUSE, error.as_str()),
                        (Ok(_), None) => (classify::REJECTED_BY_CLICKHOUSE, ""),
                    };
                    item.dead_letter_row(&self.stream, class, error)
                });
                self.write::<crate::rows::DeadLetterRow<'_>>(table.name(), rows)
                    .await
            }
        };
        result.map_err(|e| classify::insert_failure(&e))
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
    /// Tables written completely.
    done: HashSet<Table>,
    /// Items ClickHouse refused; dead-lettered.
    rejected: Rejected,
    /// Dead letters ClickHouse refused too; logged and terminated.
    unstorable: Rejected,
}

/// Flushes batches.
pub struct Writer<I> {
    pub inserter: I,
    /// Used to flush acks to the server.
    pub nats: async_nats::Client,
    pub metrics: Metrics,
    pub retry: Backoff,
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
        self.answer(batch, &progress).await;
        self.metrics
            .batch_duration
            .observe(started.elapsed().as_secs_f64());
        Ok(())
    }

    /// Every table, retried until done.
    async fn insert_all(&self, batch: &Batch) -> Progress {
        let mut progress = Progress::default();
        let mut attempt = 0;
        while let Err(error) = self.try_insert_all(batch, &mut progress).await {
            attempt += 1;
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
            tokio::time::sleep(delay).await;
        }
        progress
    }

    /// One pass over the tables not yet written, in three stages: the typed tables
    /// (concurrently: ClickHouse parses them on several cores), then `events_raw`, then
    /// `dead_letters`. Err = a transient failure.
    async fn try_insert_all(&self, batch: &Batch, progress: &mut Progress) -> Result<(), String> {
        let stages = [
            EventType::ALL.map(Table::Typed).to_vec(),
            vec![Table::EventsRaw],
            vec![Table::DeadLetters],
        ];
        for stage in stages {
            let pending: Vec<(Table, Vec<Index>)> = stage
                .into_iter()
                .filter(|table| !progress.done.contains(table))
                .map(|table| (table, self.items_of(table, batch, progress)))
                .collect();
            let results = futures::future::join_all(pending.iter().map(|(table, items)| {
                insert_isolating(&self.inserter, *table, batch, items, &progress.rejected)
            }))
            .await;
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

    /// The items with rows in `table`, minus those a typed table refused.
    fn items_of(&self, table: Table, batch: &Batch, progress: &Progress) -> Vec<Index> {
        match table {
            Table::Typed(t) => without(batch.of_type(t), &progress.rejected),
            Table::EventsRaw => without(batch.accepted(), &progress.rejected),
            Table::DeadLetters => {
                let mut items: Vec<Index> = batch.bad().to_vec();
                items.extend(progress.rejected.keys());
                items.sort_unstable();
                items
            }
        }
    }

    /// Marks `table` written, counting its rows and remembering the refused ones.
    fn record(
        &self,
        table: Table,
        batch: &Batch,
        written: usize,
        refused: Vec<(Index, String)>,
        progress: &mut Progress,
    ) {
        self.metrics
            .inserted
            .get_or_create(&TableLabel {
                table: table.name(),
            })
            .inc_by((written - refused.len()) as u64);
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
                Table::DeadLetters => progress.unstorable.insert(index, error),
                _ => progress.rejected.insert(index, error),
            };
        }
        progress.done.insert(table);
    }

    /// Acks accepted events, terminates dead letters, and pushes the answers out.
    async fn answer(&self, batch: &Batch, progress: &Progress) {
        let (mut acked, mut terminated) = (0u64, 0u64);
        for (index, item) in (0..).zip(batch.items()) {
            let class = match (&item.decoded, progress.rejected.contains_key(&index)) {
                (Ok(_), false) => None,
                (Ok(_), true) => Some(classify::REJECTED_BY_CLICKHOUSE),
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

fn without(items: &[Index], rejected: &Rejected) -> Vec<Index> {
    items
        .iter()
        .copied()
        .filter(|i| !rejected.contains_key(i))
        .collect()
}

/// Inserts `items`; when ClickHouse rejects the data, splits the insert in halves and
/// retries each, down to single rows. Returns the rows refused on their own. A transient
/// failure ends it (Err), whatever was already written.
pub async fn insert_isolating<I: Inserter>(
    inserter: &I,
    table: Table,
    batch: &Batch,
    items: &[Index],
    rejected: &Rejected,
) -> Result<Vec<(Index, String)>, String> {
    let mut refused = Vec::new();
    let mut pending: Vec<Range<usize>> = Vec::new();
    pending.push(0..items.len());
    while let Some(range) = pending.pop() {
        if range.is_empty() {
            continue;
        }
        match inserter
            .insert(table, batch, &items[range.clone()], rejected)
            .await
        {
            Ok(()) => {}
            Err(InsertFailure::Transient(error)) => return Err(error),
            Err(InsertFailure::Rejected(error)) if range.len() == 1 => {
                refused.push((items[range.start], error));
            }
            Err(InsertFailure::Rejected(_)) => {
                let middle = range.start + range.len() / 2;
                // Popped first half first, so refused rows come out in order.
                pending.push(middle..range.end);
                pending.push(range.start..middle);
            }
        }
    }
    Ok(refused)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Rejects any insert holding one of `poison`; fails transiently `transient` times
    /// first. Records the item lists it accepted.
    struct FakeInserter {
        poison: Vec<Index>,
        transient: Mutex<u32>,
        calls: Mutex<u32>,
        written: Mutex<Vec<Index>>,
    }

    impl FakeInserter {
        fn new(poison: Vec<Index>, transient: u32) -> Self {
            FakeInserter {
                poison,
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
            _rejected: &Rejected,
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
            self.written
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(items);
            Ok(())
        }
    }

    fn run<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(future)
    }

    #[test]
    fn a_rejected_row_is_isolated_and_the_rest_written() {
        let inserter = FakeInserter::new(vec![37, 90], 0);
        let items: Vec<Index> = (0..100).collect();
        let refused = run(insert_isolating(
            &inserter,
            Table::EventsRaw,
            &Batch::default(),
            &items,
            &Rejected::new(),
        ))
        .expect("no transient failure");
        let refused: Vec<Index> = refused.into_iter().map(|(i, _)| i).collect();
        assert_eq!(refused, vec![37, 90]);
        let mut written = inserter.written.into_inner().unwrap_or_default();
        written.sort_unstable();
        let expected: Vec<Index> = (0..100).filter(|i| *i != 37 && *i != 90).collect();
        assert_eq!(written, expected);
        // log2(100) levels for each bad row, not one insert per row.
        assert!(inserter.calls.into_inner().unwrap_or_default() < 40);
    }

    #[test]
    fn a_transient_failure_is_not_a_rejection() {
        let inserter = FakeInserter::new(vec![], 1);
        let items: Vec<Index> = (0..10).collect();
        let result = run(insert_isolating(
            &inserter,
            Table::EventsRaw,
            &Batch::default(),
            &items,
            &Rejected::new(),
        ));
        assert_eq!(result, Err("server away".to_owned()));
        assert!(inserter.written.into_inner().unwrap_or_default().is_empty());
    }
}
