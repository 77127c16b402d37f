//! Writing to a cluster shard by shard, so that a shard that is down holds only its own
//! rows (`[clickhouse] replica_urls`).
//!
//! On 18.16 a synchronous insert into a Distributed table connects to every shard, and
//! so does a lookup through one: with every replica of one shard down, both fail even
//! for rows of the others. So the sink does what the Distributed table would, itself:
//!
//! - [`Layout::discover`] reads the cluster's shards and weights from `system.clusters`
//!   and asks each server of `replica_urls` which shard it is (`is_local`);
//! - [`Layout::shard_of`] places each message as the Distributed tables' sharding key
//!   ([`crate::cluster::sharding_key`]) does: `sipHash64(toString(run_id))` for an
//!   event, `sipHash64(toString(stream), toString(stream_seq))` for a message that did
//!   not decode, then the shard of slot `hash % total weight`. The dead letter of an
//!   event that decoded (a conflict, a row ClickHouse refused) is written with the rest
//!   of its message's rows, on its run's shard;
//! - [`write_by_shard`] splits every batch the receiver hands over by shard into one
//!   queue per shard and returns at once. Each shard has its own [`Writer`] over its
//!   replicas' `_local` tables (lookups included), which flushes everything queued for
//!   the shard, retrying and probing that shard only (on each replica in turn). A shard
//!   that is down keeps its messages queued and unacked (progress acks keep them
//!   alive) while the others' batches go on; JetStream's `max_ack_pending` bounds what
//!   waits. `bench_sink_rows_waiting{shard}` counts each shard's queued and in-flight
//!   messages.

use std::sync::Arc;

use async_nats::jetstream::AckKind;
use clickhouse::Row;
use serde::Deserialize;
use tokio::sync::{mpsc, Notify, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

use crate::batch::{Batch, Item};
use crate::metrics::{Metrics, ShardLabel};
use crate::writer::{answer_all, progress_ticker, Abandoned, ClickHouseInserter, Writer};
use bench_clickhouse::ClickHouseConfig;

/// Why the cluster's layout could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// A query of `system.clusters` failed.
    #[error("cannot read the layout of cluster {cluster} from {url}: {error}")]
    Query {
        cluster: String,
        url: String,
        error: clickhouse::error::Error,
    },
    /// The cluster has no shard (an unknown name).
    #[error("cluster {cluster} has no shard in system.clusters of {url}")]
    NoShard { cluster: String, url: String },
    /// A server of `replica_urls` is not one of the cluster's.
    #[error("{url} is not a server of cluster {cluster} (no is_local row in system.clusters)")]
    NotInCluster { cluster: String, url: String },
    /// No server of `replica_urls` answered for a shard.
    #[error(
        "no server of clickhouse.replica_urls answered for shard {shard} of cluster {cluster}"
    )]
    NoReplica { cluster: String, shard: u32 },
}

/// One shard: its number, and the URLs of the replicas that write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// `shard_num` in `system.clusters`.
    pub num: u32,
    /// HTTP URLs of its replicas, in `replica_urls` order.
    pub replicas: Vec<String>,
}

/// The cluster's shards and how keys map to them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// In `shard_num` order.
    pub shards: Vec<Shard>,
    /// Position in `shards` of each weight slot, as the Distributed table's
    /// `slot_to_shard`: shard 1 `weight` times, then shard 2, ...
    slots: Vec<usize>,
}

/// A row of the shard list.
#[derive(Debug, Row, Deserialize)]
struct ShardRow {
    num: u32,
    weight: u32,
}

impl Layout {
    /// The layout of shards (`num`, `weight`) with their replicas' URLs.
    pub fn new(shards: &[(u32, u32)], replicas: &[(u32, String)]) -> Self {
        let slots = shards
            .iter()
            .enumerate()
            .flat_map(|(at, &(_, weight))| std::iter::repeat_n(at, weight as usize))
            .collect();
        let shards = shards
            .iter()
            .map(|&(num, _)| Shard {
                num,
                replicas: replicas
                    .iter()
                    .filter(|(of, _)| *of == num)
                    .map(|(_, url)| url.clone())
                    .collect(),
            })
            .collect();
        Layout { shards, slots }
    }

    /// Reads the shards of `cluster` through `config.url` and the shard of each of
    /// `config.replica_urls`. A server that does not answer is left out (logged); every
    /// shard needs one that answers.
    pub async fn discover(config: &ClickHouseConfig, cluster: &str) -> Result<Self, LayoutError> {
        let query_error = |url: &str, error| LayoutError::Query {
            cluster: cluster.to_owned(),
            url: url.to_owned(),
            error,
        };
        let shards: Vec<ShardRow> = config
            .server_client()
            .query(
                "SELECT toUInt32(shard_num) AS num, toUInt32(any(shard_weight)) AS weight \
                 FROM system.clusters WHERE cluster = ? GROUP BY shard_num ORDER BY shard_num",
            )
            .bind(cluster)
            .fetch_all()
            .await
            .map_err(|e| query_error(&config.url, e))?;
        if shards.is_empty() || shards.iter().all(|s| s.weight == 0) {
            return Err(LayoutError::NoShard {
                cluster: cluster.to_owned(),
                url: config.url.clone(),
            });
        }
        let mut replicas = Vec::new();
        for url in &config.replica_urls {
            let local = config
                .replica_client(url)
                .query(
                    "SELECT toUInt32(shard_num) FROM system.clusters \
                     WHERE cluster = ? AND is_local = 1",
                )
                .bind(cluster)
                .fetch_all::<u32>()
                .await;
            match local {
                Ok(nums) => match nums.first() {
                    Some(&num) => replicas.push((num, url.clone())),
                    None => {
                        return Err(LayoutError::NotInCluster {
                            cluster: cluster.to_owned(),
                            url: url.clone(),
                        })
                    }
                },
                Err(error) => {
                    tracing::warn!(%url, %error, "replica does not answer; left out of the shard writers");
                }
            }
        }
        let pairs: Vec<(u32, u32)> = shards.iter().map(|s| (s.num, s.weight)).collect();
        let layout = Layout::new(&pairs, &replicas);
        if let Some(shard) = layout.shards.iter().find(|s| s.replicas.is_empty()) {
            return Err(LayoutError::NoReplica {
                cluster: cluster.to_owned(),
                shard: shard.num,
            });
        }
        Ok(layout)
    }

    /// Position in [`Self::shards`] of the shard holding rows whose sharding key hashes
    /// to `hash`.
    pub fn shard_of_hash(&self, hash: u64) -> usize {
        // `slots` is never empty: a layout without weight is refused by `discover`.
        let len = self.slots.len().max(1) as u64;
        self.slots
            .get((hash % len) as usize)
            .copied()
            .unwrap_or_default()
    }

    /// Position in [`Self::shards`] of the shard of a message of `stream`.
    pub fn shard_of(&self, item: &Item, stream: &str) -> usize {
        let hash = match &item.decoded {
            Ok(env) => sip_hash64(env.run_id.to_string().as_bytes()),
            Err(_) => combine(
                sip_hash64(stream.as_bytes()),
                sip_hash64(item.delivery.stream_seq.to_string().as_bytes()),
            ),
        };
        self.shard_of_hash(hash)
    }
}

/// ClickHouse's `sipHash64` of one string: SipHash-2-4 with both keys 0.
pub fn sip_hash64(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    // std's SipHasher is SipHash-2-4, the function ClickHouse uses; it is deprecated
    // only as a default hasher for hash maps, which it is not used as here.
    #[allow(deprecated)]
    let mut hasher = std::hash::SipHasher::new_with_keys(0, 0);
    hasher.write(bytes);
    hasher.finish()
}

/// ClickHouse's `sipHash64` of several arguments: each hashed, and each hash after the
/// first combined with the result so far as `sipHash64` of the two, little-endian.
pub fn combine(first: u64, second: u64) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&first.to_le_bytes());
    bytes[8..].copy_from_slice(&second.to_le_bytes());
    sip_hash64(&bytes)
}

/// The messages queued for one shard's writer.
#[derive(Default)]
struct Queue {
    batch: tokio::sync::Mutex<Batch>,
    /// Signalled when messages are queued or the queues close.
    ready: Notify,
}

/// One [`Writer`] per shard of `layout`, over the `_local` tables of its replicas.
pub fn shard_writers(
    layout: &Layout,
    config: &ClickHouseConfig,
    stream: &str,
    template: &Writer<ClickHouseInserter>,
) -> Vec<Writer<ClickHouseInserter>> {
    layout
        .shards
        .iter()
        .map(|shard| Writer {
            inserter: ClickHouseInserter {
                replicas: shard
                    .replicas
                    .iter()
                    .map(|url| config.replica_client(url))
                    .collect(),
                current: Arc::default(),
                local: true,
                timeout: config.insert_timeout,
                stream: stream.to_owned(),
            },
            nats: template.nats.clone(),
            metrics: template.metrics.clone(),
            retry: template.retry,
            confirm: template.confirm,
            progress_every: template.progress_every,
        })
        .collect()
}

/// Writes the batches handed over through `batches`, shard by shard (see the module
/// docs), until the channel closes and every queue is flushed. Gives up like
/// [`Writer::flush`] when `give_up` is cancelled.
pub async fn write_by_shard(
    layout: Layout,
    writers: Vec<Writer<ClickHouseInserter>>,
    mut batches: mpsc::Receiver<(Batch, OwnedSemaphorePermit)>,
    stream: String,
    metrics: Metrics,
    give_up: CancellationToken,
) -> Result<(), Abandoned> {
    let progress_every = writers
        .first()
        .map(|w| w.progress_every)
        .unwrap_or(crate::writer::PROBE_EVERY);
    let queues: Vec<Arc<Queue>> = layout.shards.iter().map(|_| Arc::default()).collect();
    let gauges: Vec<_> = layout
        .shards
        .iter()
        .map(|s| {
            metrics
                .rows_waiting
                .get_or_create(&ShardLabel { shard: s.num })
                .clone()
        })
        .collect();
    let closed = CancellationToken::new();
    let tasks: Vec<_> = writers
        .into_iter()
        .zip(&queues)
        .zip(&gauges)
        .map(|((writer, queue), gauge)| {
            let (queue, gauge) = (Arc::clone(queue), gauge.clone());
            let (closed, give_up) = (closed.clone(), give_up.clone());
            tokio::spawn(async move {
                loop {
                    let batch = std::mem::take(&mut *queue.batch.lock().await);
                    if batch.is_empty() {
                        if closed.is_cancelled() {
                            return Ok::<(), Abandoned>(());
                        }
                        tokio::select! {
                            _ = queue.ready.notified() => {}
                            _ = closed.cancelled() => {}
                        }
                        continue;
                    }
                    writer.flush(&batch, &give_up).await?;
                    gauge.dec_by(i64::try_from(batch.len()).unwrap_or(i64::MAX));
                }
            })
        })
        .collect();

    // Queued messages get progress acks here; the batch a shard writer is flushing gets
    // them from the writer.
    let mut ticker = progress_ticker(progress_every);
    loop {
        tokio::select! {
            next = batches.recv() => {
                // The permit is dropped at once: the receiver hands over its next batch
                // when it is due, whatever a shard's writer is doing.
                let Some((batch, _permit)) = next else { break };
                let mut parts: Vec<Batch> = queues.iter().map(|_| Batch::default()).collect();
                batch.move_into(&mut parts, |item| layout.shard_of(item, &stream));
                for ((part, queue), gauge) in parts.into_iter().zip(&queues).zip(&gauges) {
                    if part.is_empty() {
                        continue;
                    }
                    gauge.inc_by(i64::try_from(part.len()).unwrap_or(i64::MAX));
                    let mut queued = queue.batch.lock().await;
                    part.move_into(std::slice::from_mut(&mut *queued), |_| 0);
                    drop(queued);
                    queue.ready.notify_one();
                }
            }
            _ = ticker.tick() => {
                for queue in &queues {
                    answer_all(&*queue.batch.lock().await, AckKind::Progress).await;
                }
            }
        }
    }
    closed.cancel();
    let mut result = Ok(());
    for task in tasks {
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(abandoned)) => {
                let messages = match result {
                    Err(Abandoned { messages }) => messages,
                    Ok(()) => 0,
                };
                result = Err(Abandoned {
                    messages: messages + abandoned.messages,
                });
            }
            Err(join) => {
                // The shard writers have no panicking path; a panic is a bug.
                tracing::error!(error = %join, "shard writer task failed");
                result = result.and(Err(Abandoned { messages: 0 }));
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_clickhouse_sip_hash64() {
        // Values computed by ClickHouse (chdb): sipHash64(''), sipHash64('abc'),
        // sipHash64(toString(toUUID('6f1c2d3e-0000-4000-8000-000000000001'))) and
        // sipHash64('BENCH_EVENTS', toString(toUInt64(42))).
        assert_eq!(sip_hash64(b""), 2202906307356721367);
        assert_eq!(sip_hash64(b"abc"), 4596069200710135518);
        assert_eq!(
            sip_hash64(b"6f1c2d3e-0000-4000-8000-000000000001"),
            13242072065241695891
        );
        assert_eq!(
            combine(sip_hash64(b"BENCH_EVENTS"), sip_hash64(b"42")),
            3680531455046794295
        );
    }

    #[test]
    fn slots_follow_the_weights_in_shard_order() {
        let layout = Layout::new(&[(1, 1), (2, 2)], &[]);
        let shards: Vec<usize> = (0..6).map(|h| layout.shard_of_hash(h)).collect();
        assert_eq!(shards, vec![0, 1, 1, 0, 1, 1]);
        let even = Layout::new(&[(1, 1), (2, 1)], &[(2, "b".into()), (1, "a".into())]);
        assert_eq!(even.shard_of_hash(13242072065241695891), 1);
        assert_eq!(even.shards[0].replicas, vec!["a".to_owned()]);
    }
}
