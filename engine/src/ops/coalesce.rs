//! Reads many people ask for at once, made once: [`Coalesced`] runs an
//! expensive read at most once at a time per key, and answers each caller
//! with a run that started after the caller asked (so the answer holds
//! every change made before the question), never with one already under
//! way. However many people watch a set, its facets cost at most one read
//! running at a time.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How many keys are kept before those nobody is reading are let go.
const KEYS_KEPT: usize = 1024;

/// The last run of one key: when it started (a ticket), and what it read.
struct Last<T> {
    started: u64,
    value: Option<T>,
}

/// Shared by every clone (an engine's clones share its reads).
pub struct Coalesced<K, T> {
    inner: Arc<Shared<K, T>>,
}

struct Shared<K, T> {
    keys: Mutex<HashMap<K, Arc<tokio::sync::Mutex<Last<T>>>>>,
    tickets: AtomicU64,
}

impl<K, T> Default for Coalesced<K, T> {
    fn default() -> Self {
        Self {
            inner: Arc::new(Shared {
                keys: Mutex::new(HashMap::new()),
                tickets: AtomicU64::new(0),
            }),
        }
    }
}

impl<K, T> Clone for Coalesced<K, T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K, T> std::fmt::Debug for Coalesced<K, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coalesced").finish_non_exhaustive()
    }
}

impl<K: Eq + Hash + Clone, T: Clone> Coalesced<K, T> {
    /// The value of `key` as `run` reads it, by a run that started after
    /// this call: the one this call makes, or one another caller started
    /// after it while it waited for the run before to end.
    pub async fn get<E, Fut>(&self, key: K, run: impl FnOnce() -> Fut) -> Result<T, E>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        let asked = self.inner.tickets.fetch_add(1, Ordering::SeqCst);
        let slot = {
            let mut keys = self
                .inner
                .keys
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if keys.len() >= KEYS_KEPT {
                keys.retain(|_, slot| Arc::strong_count(slot) > 1);
            }
            keys.entry(key)
                .or_insert_with(|| {
                    Arc::new(tokio::sync::Mutex::new(Last {
                        started: 0,
                        value: None,
                    }))
                })
                .clone()
        };
        let mut last = slot.lock().await;
        if let Some(value) = last.value.as_ref().filter(|_| last.started > asked) {
            return Ok(value.clone());
        }
        let started = self.inner.tickets.fetch_add(1, Ordering::SeqCst);
        let value = run().await?;
        *last = Last {
            started,
            value: Some(value.clone()),
        };
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    #[tokio::test]
    async fn many_callers_at_once_share_a_run_that_started_after_they_asked() {
        let reads: Arc<Coalesced<i64, u32>> = Arc::default();
        let runs = Arc::new(AtomicU32::new(0));
        // The state read: bumped by a "change" before each wave of callers.
        let state = Arc::new(AtomicU32::new(0));
        let read = |reads: Arc<Coalesced<i64, u32>>,
                    runs: Arc<AtomicU32>,
                    state: Arc<AtomicU32>| async move {
            reads
                .get(7, || async {
                    let seen = state.load(Ordering::SeqCst);
                    runs.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok::<_, ()>(seen)
                })
                .await
                .unwrap()
        };
        // One caller starts a run; twenty more ask while it runs, after a
        // change it cannot have seen.
        let first = tokio::spawn(read(reads.clone(), runs.clone(), state.clone()));
        while runs.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        state.store(1, Ordering::SeqCst);
        let wave: Vec<_> = (0..20)
            .map(|_| tokio::spawn(read(reads.clone(), runs.clone(), state.clone())))
            .collect();
        assert_eq!(first.await.unwrap(), 0);
        for caller in wave {
            assert_eq!(
                caller.await.unwrap(),
                1,
                "every later caller sees the change"
            );
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2, "the wave shared one run");
        // Asked again after all that: a new run.
        state.store(2, Ordering::SeqCst);
        assert_eq!(read(reads.clone(), runs.clone(), state.clone()).await, 2);
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_failed_run_is_not_kept() {
        let reads: Coalesced<&str, u32> = Coalesced::default();
        assert_eq!(
            reads.get("k", || async { Err::<u32, _>("down") }).await,
            Err("down")
        );
        assert_eq!(reads.get("k", || async { Ok::<_, &str>(5) }).await, Ok(5));
    }
}
