//! Whether this process's database answers, as every open stream hears it:
//! one probe a second per process (never one per stream), and each change
//! told once, so a page can say "nothing can change until it is back" and
//! read its state again when it is.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::Engine;

/// How often a process asks its database whether it answers.
pub const DATABASE_PROBE_EVERY: Duration = Duration::from_secs(1);

/// The latest answer of the probe, shared by every stream of a process.
#[derive(Clone, Debug)]
pub struct DatabaseWatch(Arc<watch::Sender<bool>>);

impl Default for DatabaseWatch {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(true)))
    }
}

impl DatabaseWatch {
    /// Records the probe's answer; only a change wakes the streams.
    fn record(&self, answering: bool) {
        self.0.send_if_modified(|was| {
            let changed = *was != answering;
            *was = answering;
            changed
        });
    }

    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.0.subscribe()
    }
}

impl Engine {
    /// Whether the database answers, as the process's probe last found it;
    /// the receiver wakes at each change.
    pub fn database_answers(&self) -> watch::Receiver<bool> {
        self.database.subscribe()
    }

    /// Probes the database every [`DATABASE_PROBE_EVERY`] until the process
    /// stops.
    pub(crate) async fn follow_database(&self) {
        let mut every = tokio::time::interval(DATABASE_PROBE_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => {}
                () = self.upkeep.cancelled() => return,
            }
            let answering = self.ready().await.is_ok();
            if answering != *self.database.subscribe().borrow() {
                if answering {
                    tracing::info!("The database answers again.");
                } else {
                    tracing::warn!("The database does not answer; open streams are told.");
                }
            }
            self.database.record(answering);
        }
    }
}
