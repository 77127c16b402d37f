//! Live updates: one ephemeral ordered consumer on the events stream (in memory, no
//! acks, deleted when the viewer stops; the sinks' durable consumer is not affected),
//! its events fanned out to every `/api/live` listener as Server-Sent Events, each
//! listener with its own filter (`?run=`, `?experiment=`, `?task=`).
//!
//! Only a `run_start` names its experiment: the experiment of other events is what the
//! run's `run_start` said, seen live or read once from ClickHouse.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_nats::jetstream::consumer::pull::OrderedConfig;
use async_nats::jetstream::consumer::DeliverPolicy;
use axum::response::sse::{Event, KeepAlive, Sse};
use clickhouse::Client;
use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::args::ServeConfig;
use super::db;

/// Events a slow listener may fall behind by before it misses some.
const BUFFER: usize = 4096;

/// One event as the listeners get it.
#[derive(Debug)]
pub struct LiveEvent {
    run_id: String,
    task_id: String,
    experiment: Option<String>,
    /// A `run_start` or a `run_stop`: the experiment's runs changed.
    starts_or_stops: bool,
    /// The event's JSON as published.
    json: String,
}

/// The live feed: on, or off and why.
#[derive(Debug)]
pub struct Live {
    feed: Result<broadcast::Sender<Arc<LiveEvent>>, String>,
    listeners: Arc<AtomicUsize>,
    shutdown: CancellationToken,
}

/// `/api/live`'s filters: each given one must hold.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LiveFilter {
    /// Only this run's events.
    pub run: Option<String>,
    /// Only events of runs of this experiment.
    pub experiment: Option<String>,
    /// Only this task's events.
    pub task: Option<String>,
}

impl LiveFilter {
    fn matches(&self, event: &LiveEvent) -> bool {
        let holds = |wanted: &Option<String>, value: Option<&str>| {
            wanted.as_deref().is_none_or(|w| value == Some(w))
        };
        holds(&self.run, Some(&event.run_id))
            && holds(&self.task, Some(&event.task_id))
            && holds(&self.experiment, event.experiment.as_deref())
    }
}

impl Live {
    /// Starts following the events stream of `config`, or says why live updates are off
    /// (no `--nats-url`, the broker or stream unreachable): the pages work either way.
    pub async fn start(
        config: &ServeConfig,
        changes: mpsc::UnboundedSender<String>,
        shutdown: CancellationToken,
    ) -> Arc<Live> {
        let feed = match follow(config, changes, shutdown.clone()).await {
            Ok(feed) => Ok(feed),
            Err(why) => {
                tracing::warn!(%why, "live updates are off");
                Err(why)
            }
        };
        Arc::new(Live {
            feed,
            listeners: Arc::new(AtomicUsize::new(0)),
            shutdown,
        })
    }

    /// Why live updates are off; `None` when they are on.
    pub fn off(&self) -> Option<&str> {
        self.feed.as_ref().err().map(String::as_str)
    }

    /// Browsers listening now.
    pub fn listeners(&self) -> usize {
        self.listeners.load(Ordering::Relaxed)
    }

    /// The SSE answer for one listener; `None` when live updates are off.
    pub fn listen(
        &self,
        filter: LiveFilter,
    ) -> Option<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
        let receiver = self.feed.as_ref().ok()?.subscribe();
        let guard = Listener::new(self.listeners.clone());
        let shutdown = self.shutdown.clone();
        let events = futures::stream::unfold(
            (receiver, guard, shutdown),
            move |(mut receiver, guard, shutdown)| {
                let filter = filter.clone();
                async move {
                    loop {
                        let next = tokio::select! {
                            _ = shutdown.cancelled() => return None,
                            next = receiver.recv() => next,
                        };
                        match next {
                            Ok(event) if filter.matches(&event) => {
                                let sse = Event::default().data(event.json.as_str());
                                return Some((Ok(sse), (receiver, guard, shutdown)));
                            }
                            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                            Err(broadcast::error::RecvError::Closed) => return None,
                        }
                    }
                }
            },
        );
        Some(Sse::new(events).keep_alive(KeepAlive::default()))
    }
}

/// Counts a listener while it is connected.
struct Listener(Arc<AtomicUsize>);

impl Listener {
    fn new(count: Arc<AtomicUsize>) -> Listener {
        count.fetch_add(1, Ordering::Relaxed);
        Listener(count)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Connects, creates the consumer and spawns the task that feeds the channel, and tells
/// `changes` the experiment of each `run_start` and `run_stop`.
async fn follow(
    config: &ServeConfig,
    changes: mpsc::UnboundedSender<String>,
    shutdown: CancellationToken,
) -> Result<broadcast::Sender<Arc<LiveEvent>>, String> {
    let nats = config.nats.as_ref().ok_or("no --nats-url given")?;
    let client = bench_nats::connect(nats, false)
        .await
        .map_err(|e| e.to_string())?;
    let stream = async_nats::jetstream::new(client)
        .get_stream(&config.stream)
        .await
        .map_err(|e| format!("no stream {}: {e}", config.stream))?;
    let name = format!("viewer-{}", Uuid::now_v7().simple());
    let consumer = stream
        .create_consumer(OrderedConfig {
            name: Some(name.clone()),
            description: Some("bench-analysis serve".to_owned()),
            filter_subject: format!("{}.events.>", config.subject_prefix),
            deliver_policy: DeliverPolicy::New,
            ..OrderedConfig::default()
        })
        .await
        .map_err(|e| format!("cannot follow stream {}: {e}", config.stream))?;
    let mut messages = consumer.messages().await.map_err(|e| e.to_string())?;
    let (sender, _) = broadcast::channel(BUFFER);
    let feed = sender.clone();
    let mut experiments = Experiments::new(config.clickhouse.client());
    tokio::spawn(async move {
        loop {
            let message = tokio::select! {
                _ = shutdown.cancelled() => break,
                next = messages.next() => match next {
                    Some(Ok(message)) => message,
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "live consumer; the client recreates it");
                        continue;
                    }
                    None => break,
                },
            };
            if let Some(event) = experiments.event(&message.payload).await {
                if let (true, Some(name)) = (event.starts_or_stops, &event.experiment) {
                    // Closed only when the server stops.
                    let _ = changes.send(name.clone());
                }
                // No listener is no error.
                let _ = feed.send(Arc::new(event));
            }
        }
        let _ = stream.delete_consumer(&name).await;
    });
    Ok(sender)
}

/// The experiment of each run seen, from its `run_start` or from ClickHouse.
struct Experiments {
    client: Client,
    known: HashMap<String, Option<String>>,
}

impl Experiments {
    fn new(client: Client) -> Experiments {
        Experiments {
            client,
            known: HashMap::new(),
        }
    }

    /// `payload` as a [`LiveEvent`]; `None` when it is no event.
    async fn event(&mut self, payload: &[u8]) -> Option<LiveEvent> {
        let value: Value = serde_json::from_slice(payload).ok()?;
        let run_id = value["run_id"].as_str()?.to_owned();
        let experiment = if value["type"] == "run_start" {
            let experiment = value["data"]["experiment"].as_str().map(str::to_owned);
            self.known.insert(run_id.clone(), experiment.clone());
            experiment
        } else {
            self.of(&run_id).await
        };
        Some(LiveEvent {
            starts_or_stops: value["type"] == "run_start" || value["type"] == "run_stop",
            task_id: value["task_id"].as_str().unwrap_or_default().to_owned(),
            run_id,
            experiment,
            json: String::from_utf8_lossy(payload).into_owned(),
        })
    }

    /// The experiment of `run_id`: remembered, or read and then remembered; unknown
    /// (asked again next time) while its `run_start` is not stored.
    async fn of(&mut self, run_id: &str) -> Option<String> {
        if let Some(known) = self.known.get(run_id) {
            return known.clone();
        }
        let id = Uuid::parse_str(run_id).ok()?;
        let stored = db::run_experiment(&self.client, &id).await.ok().flatten()?;
        self.known.insert(run_id.to_owned(), stored.clone());
        stored
    }
}
