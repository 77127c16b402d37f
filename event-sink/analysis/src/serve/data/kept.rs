//! Answers kept per key (an experiment, a comparison asked for) while what they were
//! computed from is unchanged: each is stored with the version of the data it was read
//! at (a cheap read: runs started and finished, ...) and given again while the version
//! read now is the same and it is younger than the cache's maximum age (which bounds how
//! long a change the version does not see can go unseen).

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::DataError;

/// An answer kept: the version it was computed at, when, the answer.
type Entry<N, V> = (N, Instant, Arc<V>);

/// Answers `V` per key `K`, each with the version `N` it was computed at.
#[derive(Debug)]
pub struct Kept<K, N, V> {
    max_age: Duration,
    kept: Mutex<HashMap<K, Entry<N, V>>>,
}

impl<K: Eq + Hash, N: PartialEq, V> Kept<K, N, V> {
    /// An empty cache whose answers are kept at most `max_age`.
    pub fn new(max_age: Duration) -> Self {
        Kept {
            max_age,
            kept: Mutex::new(HashMap::new()),
        }
    }

    /// The answer of `key` at `version`: the one kept, or `compute`'s, then kept.
    pub async fn get<F>(&self, key: K, version: N, compute: F) -> Result<Arc<V>, DataError>
    where
        F: Future<Output = Result<V, DataError>>,
    {
        if let Some((kept_at, at, answer)) = self.lock().get(&key) {
            if *kept_at == version && at.elapsed() < self.max_age {
                return Ok(answer.clone());
            }
        }
        let answer = Arc::new(compute.await?);
        self.lock()
            .insert(key, (version, Instant::now(), answer.clone()));
        Ok(answer)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Entry<N, V>>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
