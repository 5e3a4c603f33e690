//! Long-lived answers' access, checked again for all of them at once: an
//! open event stream or a listening agent is watched while it lasts, and
//! every [`STREAM_ACCESS_CHECK`] one batch of queries per process (not one
//! per stream) finds whose token was revoked, session ended or membership
//! removed, and ends those.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use engine::tenancy::credentials::Held;
use engine::Engine;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// How often open streams' access is checked again.
pub const STREAM_ACCESS_CHECK: Duration = Duration::from_secs(5);

/// This process's watched answers.
#[derive(Clone, Debug, Default)]
pub struct AccessWatch(Arc<Mutex<Watched>>);

#[derive(Debug, Default)]
struct Watched {
    next: u64,
    open: HashMap<u64, (Held, CancellationToken)>,
}

/// One answer's watch: ends it when access is lost; dropping it stops
/// watching.
#[derive(Debug)]
pub struct Watching {
    id: u64,
    watch: Weak<Mutex<Watched>>,
    lost: CancellationToken,
}

impl Watching {
    /// Ready once the answer's access no longer holds.
    pub fn lost(&self) -> WaitForCancellationFutureOwned {
        self.lost.clone().cancelled_owned()
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        if let Some(watch) = self.watch.upgrade() {
            lock(&watch).open.remove(&self.id);
        }
    }
}

impl AccessWatch {
    /// A watch checking with `engine` every [`STREAM_ACCESS_CHECK`] for as
    /// long as any handle to it is kept. Call inside the Tokio runtime.
    pub fn start(engine: Engine) -> Self {
        let watch = Self::default();
        tokio::spawn(check_every(Arc::downgrade(&watch.0), engine));
        watch
    }

    /// Watches an answer proved by `held` until the guard drops.
    pub fn watch(&self, held: Held) -> Watching {
        let lost = CancellationToken::new();
        let mut watched = lock(&self.0);
        watched.next += 1;
        let id = watched.next;
        watched.open.insert(id, (held, lost.clone()));
        Watching {
            id,
            watch: Arc::downgrade(&self.0),
            lost,
        }
    }

    /// Checks every watched answer's access once, ending those that lost
    /// it. A database that cannot answer now is not a refusal.
    pub async fn check(&self, engine: &Engine) {
        // Each proof once, however many answers it holds open.
        let mut by_proof: HashMap<Held, Vec<CancellationToken>> = HashMap::new();
        for (held, lost) in lock(&self.0).open.values() {
            by_proof.entry(held.clone()).or_default().push(lost.clone());
        }
        if by_proof.is_empty() {
            return;
        }
        let (held, ends): (Vec<Held>, Vec<Vec<CancellationToken>>) = by_proof.into_iter().unzip();
        let holding = match engine.still_held(&held).await {
            Ok(holding) => holding,
            Err(e) => {
                tracing::warn!(error = %e, "Cannot check open streams' access again; keeping them for now.");
                return;
            }
        };
        for ((held, ends), holds) in held.iter().zip(ends).zip(holding) {
            if !holds {
                tracing::info!(
                    user = held.user_id,
                    workspace = held.workspace_id,
                    streams = ends.len(),
                    "Open streams lost their access; ending them."
                );
                ends.iter().for_each(CancellationToken::cancel);
            }
        }
    }
}

async fn check_every(watch: Weak<Mutex<Watched>>, engine: Engine) {
    let mut every = tokio::time::interval(STREAM_ACCESS_CHECK);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    every.tick().await;
    loop {
        every.tick().await;
        let Some(watch) = watch.upgrade() else {
            return;
        };
        AccessWatch(watch).check(&engine).await;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
