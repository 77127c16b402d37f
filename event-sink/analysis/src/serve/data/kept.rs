//! Answers kept per key (an experiment's standing, a comparison asked for), each with the
//! version of the data it was computed at (a cheap read: runs started and finished, ...).
//!
//! - **Single flight.** One computation per key and version runs at a time, on a thread
//!   of its own below the server's priority (off the runtime's workers, which go on
//!   answering): every request of that key awaits the same one, and it goes on (and its
//!   answer is kept) when the request that started it gives up.
//! - **Stale while revalidating.** When the version read now differs from the kept
//!   answer's (or the answer is older than the maximum age, which bounds how long a
//!   change the version does not see goes unseen), a request gets the kept answer at
//!   once, marked stale, and the fresh one is computed in the background. Only a key
//!   never computed waits for its computation, and a page waits at most a bound
//!   ([`Kept::get_within`]): past it, it says the answer is being computed.
//! - **Bounded.** At most `capacity` keys are kept; beyond, the least recently used key
//!   without a computation under way is dropped.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use futures::future::{BoxFuture, FutureExt, Shared};

use super::DataError;

/// An answer as kept: the version it was computed at, when, and the answer.
#[derive(Debug)]
pub struct Answer<N, V> {
    /// The version of the data it was computed at.
    pub version: N,
    /// When its computation ended.
    pub computed_at: SystemTime,
    /// Its computation's number: a later computation's answer replaces it, an earlier
    /// one's does not.
    generation: u64,
    /// When it was computed, for its age.
    at: Instant,
    /// The answer.
    pub value: V,
}

/// What [`Kept::get`] gives: an answer, and whether it is stale (a fresh one is being
/// computed).
#[derive(Debug)]
pub struct Got<N, V> {
    /// The answer.
    pub answer: Arc<Answer<N, V>>,
    /// Computed at another version than the one asked for, or older than the maximum
    /// age: a fresh answer is under way.
    pub stale: bool,
}

/// A computation under way, awaited by every request of its key.
type Computation<N, V> = Shared<BoxFuture<'static, Result<Arc<Answer<N, V>>, Arc<DataError>>>>;

#[derive(Debug)]
struct Running<N, V> {
    version: N,
    generation: u64,
    done: Computation<N, V>,
}

#[derive(Debug)]
struct Slot<N, V> {
    kept: Option<Arc<Answer<N, V>>>,
    running: Option<Running<N, V>>,
    /// Its place in the least-recently-used order (larger: used later).
    used: u64,
    /// When a request last asked for it (the background's reads do not count).
    visited: Option<Instant>,
}

#[derive(Debug)]
struct Inner<K, N, V> {
    slots: HashMap<K, Slot<N, V>>,
    /// Ticks of use and computation numbers.
    clock: u64,
}

/// Answers `V` per key `K`, each with the version `N` it was computed at.
#[derive(Debug)]
pub struct Kept<K, N, V> {
    max_age: Duration,
    capacity: usize,
    inner: Arc<Mutex<Inner<K, N, V>>>,
}

/// Who asks: a request (counts as a visit, may get a stale answer) or the background
/// (waits for the fresh answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asker {
    Request,
    Background,
}

impl<K, N, V> Kept<K, N, V>
where
    K: Eq + Hash + Clone + Send + 'static,
    N: PartialEq + Clone + Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    /// An empty cache of at most `capacity` keys (at least 1) whose answers are fresh at
    /// most `max_age`.
    pub fn new(capacity: usize, max_age: Duration) -> Self {
        Kept {
            max_age,
            capacity: capacity.max(1),
            inner: Arc::new(Mutex::new(Inner {
                slots: HashMap::new(),
                clock: 0,
            })),
        }
    }

    /// The answer of `key` at `version` for a request: the one kept when fresh; the one
    /// kept marked stale when not (`compute`, or the computation of this version under
    /// way, runs on in the background); else the computation's answer, awaited.
    pub async fn get<F, Fut>(&self, key: K, version: N, compute: F) -> Result<Got<N, V>, DataError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, DataError>> + Send + 'static,
    {
        self.ask(key, version, compute, Asker::Request, None)
            .await
            .map(|got| got.expect("awaited without a bound"))
    }

    /// As [`Kept::get`], but a key with nothing kept is awaited at most `wait`: `None`
    /// when its computation (which goes on, and its answer is kept) takes longer.
    pub async fn get_within<F, Fut>(
        &self,
        key: K,
        version: N,
        compute: F,
        wait: Duration,
    ) -> Result<Option<Got<N, V>>, DataError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, DataError>> + Send + 'static,
    {
        self.ask(key, version, compute, Asker::Request, Some(wait))
            .await
    }

    /// The fresh answer of `key` at `version`, for the background: the one kept when
    /// fresh, else the computation's (joined when one of this version is under way).
    /// Not a visit: [`Kept::visited_since`] does not list the key for it.
    pub async fn fresh<F, Fut>(
        &self,
        key: K,
        version: N,
        compute: F,
    ) -> Result<Arc<Answer<N, V>>, DataError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, DataError>> + Send + 'static,
    {
        let got = self
            .ask(key, version, compute, Asker::Background, None)
            .await?;
        Ok(got.expect("awaited without a bound").answer)
    }

    /// The keys a request asked for within `within`.
    pub fn visited_since(&self, within: Duration) -> Vec<K> {
        self.lock()
            .slots
            .iter()
            .filter(|(_, slot)| slot.visited.is_some_and(|v| v.elapsed() < within))
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// The answer of `key` at `version` for `asker`, a computation awaited at most `wait`
    /// (`None`: until it ends); `None` past it.
    async fn ask<F, Fut>(
        &self,
        key: K,
        version: N,
        compute: F,
        asker: Asker,
        wait: Option<Duration>,
    ) -> Result<Option<Got<N, V>>, DataError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, DataError>> + Send + 'static,
    {
        let done = {
            let mut inner = self.lock();
            inner.clock += 1;
            let tick = inner.clock;
            let slot = inner.slots.entry(key.clone()).or_insert(Slot {
                kept: None,
                running: None,
                used: tick,
                visited: None,
            });
            slot.used = tick;
            if asker == Asker::Request {
                slot.visited = Some(Instant::now());
            }
            let kept = slot.kept.clone();
            if let Some(answer) = &kept {
                if answer.version == version && answer.at.elapsed() < self.max_age {
                    return Ok(Some(Got {
                        answer: answer.clone(),
                        stale: false,
                    }));
                }
            }
            let joined = slot
                .running
                .as_ref()
                .filter(|r| r.version == version)
                .map(|r| r.done.clone());
            let done = match joined {
                Some(done) => done,
                None => {
                    inner.clock += 1;
                    let generation = inner.clock;
                    let done = self.start(key.clone(), version.clone(), generation, compute());
                    if let Some(slot) = inner.slots.get_mut(&key) {
                        slot.running = Some(Running {
                            version,
                            generation,
                            done: done.clone(),
                        });
                    }
                    self.evict(&mut inner);
                    done
                }
            };
            if let (Some(answer), Asker::Request) = (kept, asker) {
                return Ok(Some(Got {
                    answer,
                    stale: true,
                }));
            }
            done
        };
        let done = match wait {
            None => done.await,
            // Dropping the shared handle leaves the computation running.
            Some(wait) => match tokio::time::timeout(wait, done).await {
                Ok(done) => done,
                Err(_) => return Ok(None),
            },
        };
        let answer = done.map_err(DataError::Shared)?;
        Ok(Some(Got {
            answer,
            stale: false,
        }))
    }

    /// Spawns the computation numbered `generation` of `key` at `version`: on its end,
    /// its answer is kept unless a later computation's already is.
    fn start(
        &self,
        key: K,
        version: N,
        generation: u64,
        compute: impl Future<Output = Result<V, DataError>> + Send + 'static,
    ) -> Computation<N, V> {
        let inner = self.inner.clone();
        // On a thread of its own, not the runtime's workers: `compare`'s statistics hold
        // their thread for seconds at scale, and requests must go on being answered. That
        // thread (and those `compare` spreads its statistics over, which inherit it) runs
        // below the server's: requests are answered first while it computes. It is a
        // scoped thread of a blocking task, so the blocking pool's threads keep their
        // priority and the runtime's shutdown waits for it as for any blocking task.
        let runtime = tokio::runtime::Handle::current();
        let task = tokio::task::spawn_blocking(move || {
            std::thread::scope(|scope| {
                scope
                    .spawn(move || {
                        lower_priority();
                        runtime.block_on(compute_and_keep(inner, key, version, generation, compute))
                    })
                    .join()
                    .unwrap_or_else(|_| {
                        Err(Arc::new(DataError::Stopped(
                            "the computation panicked".to_owned(),
                        )))
                    })
            })
        });
        task.map(|joined| match joined {
            Ok(result) => result,
            Err(e) => Err(Arc::new(DataError::Stopped(e.to_string()))),
        })
        .boxed()
        .shared()
    }

    /// Drops the least recently used keys without a computation under way until at most
    /// `capacity` are kept.
    fn evict(&self, inner: &mut Inner<K, N, V>) {
        while inner.slots.len() > self.capacity {
            let oldest = inner
                .slots
                .iter()
                .filter(|(_, slot)| slot.running.is_none())
                .min_by_key(|(_, slot)| slot.used)
                .map(|(key, _)| key.clone());
            match oldest {
                Some(key) => inner.slots.remove(&key),
                None => break,
            };
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<K, N, V>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The nice value of the threads computing answers: below the server's (0), so a page is
/// answered before a computation goes on.
const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's priority to [`BACKGROUND_NICE`] (on Linux the nice value
/// is a thread's, and the threads it starts inherit it). Failing leaves it as it was:
/// pages are then only slower while it computes.
fn lower_priority() {
    if let Err(error) = rustix::process::nice(BACKGROUND_NICE) {
        tracing::debug!(%error, "the computation runs at the server's priority");
    }
}

/// Runs `compute`, the computation numbered `generation` of `key` at `version`, and keeps
/// its answer in `inner` unless a later computation's already is.
async fn compute_and_keep<K, N, V>(
    inner: Arc<Mutex<Inner<K, N, V>>>,
    key: K,
    version: N,
    generation: u64,
    compute: impl Future<Output = Result<V, DataError>>,
) -> Result<Arc<Answer<N, V>>, Arc<DataError>>
where
    K: Eq + Hash,
{
    let result = compute.await.map(|value| {
        Arc::new(Answer {
            version,
            computed_at: SystemTime::now(),
            generation,
            at: Instant::now(),
            value,
        })
    });
    let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(slot) = inner.slots.get_mut(&key) {
        if let Ok(answer) = &result {
            if slot.kept.as_ref().is_none_or(|k| k.generation < generation) {
                slot.kept = Some(answer.clone());
            }
        }
        if slot
            .running
            .as_ref()
            .is_some_and(|r| r.generation == generation)
        {
            slot.running = None;
        }
        if slot.kept.is_none() && slot.running.is_none() {
            inner.slots.remove(&key);
        }
    }
    result.map_err(Arc::new)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Poll;

    use tokio::sync::Semaphore;

    use super::*;

    /// Counts computations; each answers `value` once `gate` lets it (closed: at once).
    #[derive(Clone)]
    struct Computations {
        started: Arc<AtomicUsize>,
        gate: Option<Arc<Semaphore>>,
    }

    impl Computations {
        fn new(gated: bool) -> Computations {
            Computations {
                started: Arc::new(AtomicUsize::new(0)),
                gate: gated.then(|| Arc::new(Semaphore::new(0))),
            }
        }

        fn of(
            &self,
            value: &'static str,
        ) -> impl FnOnce() -> BoxFuture<'static, Result<&'static str, DataError>> {
            let this = self.clone();
            move || {
                this.started.fetch_add(1, Ordering::SeqCst);
                async move {
                    if let Some(gate) = &this.gate {
                        gate.acquire().await.expect("open").forget();
                    }
                    Ok(value)
                }
                .boxed()
            }
        }

        fn open(&self) {
            if let Some(gate) = &self.gate {
                gate.add_permits(1000);
            }
        }

        fn count(&self) -> usize {
            self.started.load(Ordering::SeqCst)
        }
    }

    fn kept(capacity: usize) -> Kept<&'static str, u32, &'static str> {
        Kept::new(capacity, Duration::from_secs(3600))
    }

    #[tokio::test]
    async fn two_concurrent_requests_of_a_key_never_computed_await_one_computation() {
        let kept = kept(8);
        let runs = Computations::new(true);
        let mut first = Box::pin(kept.get("exp", 1, runs.of("answer")));
        assert!(futures::poll!(&mut first).is_pending(), "it waits");
        let mut second = Box::pin(kept.get("exp", 1, runs.of("other")));
        assert!(futures::poll!(&mut second).is_pending(), "it waits too");
        runs.open();
        let (first, second) = (first.await.expect("ok"), second.await.expect("ok"));
        assert_eq!(runs.count(), 1, "one computation");
        assert!(Arc::ptr_eq(&first.answer, &second.answer));
        assert_eq!((first.answer.value, first.stale), ("answer", false));
        let again = kept.get("exp", 1, runs.of("other")).await.expect("ok");
        assert_eq!((again.answer.value, runs.count()), ("answer", 1), "kept");
    }

    #[tokio::test]
    async fn a_page_waits_a_bound_for_a_first_computation_which_goes_on_and_is_kept() {
        let kept = kept(8);
        let runs = Computations::new(true);
        let waited = kept
            .get_within("exp", 1, runs.of("answer"), Duration::from_millis(1))
            .await
            .expect("ok");
        assert!(waited.is_none(), "past the bound: being computed");
        // The next page joins the computation under way rather than starting another.
        let again = kept
            .get_within("exp", 1, runs.of("other"), Duration::from_millis(1))
            .await
            .expect("ok");
        assert!(again.is_none());
        runs.open();
        let got = kept.get("exp", 1, runs.of("other")).await.expect("ok");
        assert_eq!(
            (got.answer.value, got.stale, runs.count()),
            ("answer", false, 1)
        );
        // Kept: within the bound at once.
        let kept_now = kept
            .get_within("exp", 1, runs.of("other"), Duration::from_millis(1))
            .await
            .expect("ok")
            .expect("kept");
        assert_eq!((kept_now.answer.value, runs.count()), ("answer", 1));
    }

    #[tokio::test]
    async fn at_most_capacity_keys_are_kept_the_least_recently_used_dropped() {
        let kept = kept(2);
        let runs = Computations::new(false);
        for key in ["a", "b", "a", "c", "a"] {
            kept.get(key, 1, runs.of(key)).await.expect("ok");
        }
        // a computed, b computed, a kept, c computed (b dropped: used least lately), a kept.
        assert_eq!(runs.count(), 3);
        kept.get("b", 1, runs.of("b")).await.expect("ok");
        assert_eq!(runs.count(), 4, "b was dropped and is computed again");
        kept.get("a", 1, runs.of("a")).await.expect("ok");
        assert_eq!(runs.count(), 4, "a is still kept");
    }

    #[tokio::test]
    async fn a_changed_version_gets_the_kept_answer_marked_stale_then_the_fresh_one() {
        let kept = kept(8);
        let runs = Computations::new(true);
        runs.open();
        kept.get("exp", 1, runs.of("at 1")).await.expect("ok");
        let runs = Computations::new(true);
        // The runs changed: the answer at 1 at once (its computation at 2 is held): the
        // request is answered on its first poll, without waiting.
        let mut request = Box::pin(kept.get("exp", 2, runs.of("at 2")));
        let Poll::Ready(stale) = futures::poll!(&mut request) else {
            panic!("the request waited for the computation instead of the kept answer");
        };
        let stale = stale.expect("ok");
        assert_eq!((stale.answer.value, stale.stale), ("at 1", true));
        assert_eq!(stale.answer.version, 1);
        let again = kept.get("exp", 2, runs.of("at 2 again")).await.expect("ok");
        assert_eq!((again.answer.value, again.stale), ("at 1", true));
        assert_eq!(runs.count(), 1, "one computation at 2 under way, not two");
        runs.open();
        let fresh = kept.fresh("exp", 2, runs.of("unused")).await.expect("ok");
        assert_eq!((fresh.value, fresh.version), ("at 2", 2));
        let now = kept.get("exp", 2, runs.of("unused")).await.expect("ok");
        assert_eq!((now.answer.value, now.stale), ("at 2", false));
        assert_eq!(runs.count(), 1);
    }

    #[tokio::test]
    async fn a_failed_computation_is_not_kept_and_is_tried_again() {
        let kept = kept(8);
        let failing = || async { Err(DataError::NotFound("nothing".into())) };
        let error = kept.get("exp", 1, failing).await.expect_err("fails");
        assert!(matches!(error.root(), DataError::NotFound(_)), "{error}");
        assert!(kept.visited_since(Duration::from_secs(60)).is_empty());
        let runs = Computations::new(false);
        let got = kept.get("exp", 1, runs.of("found")).await.expect("ok");
        assert_eq!((got.answer.value, runs.count()), ("found", 1));
        assert_eq!(kept.visited_since(Duration::from_secs(60)), vec!["exp"]);
    }

    #[tokio::test]
    async fn the_background_waits_for_the_fresh_answer_and_is_no_visit() {
        let kept = kept(8);
        let runs = Computations::new(false);
        kept.fresh("exp", 1, runs.of("at 1")).await.expect("ok");
        let fresh = kept.fresh("exp", 2, runs.of("at 2")).await.expect("ok");
        assert_eq!((fresh.value, runs.count()), ("at 2", 2));
        assert!(kept.visited_since(Duration::from_secs(60)).is_empty());
    }
}
