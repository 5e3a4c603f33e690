//! Who is viewing which record set right now: each open event stream holds
//! a [`Viewing`] guard, and every join or leave publishes the set's viewers
//! to its subscribers. On SQLite the count lives in this process; on
//! PostgreSQL every process writes its own streams to the database (renewed
//! with its heartbeat), so the list names the viewers on every process.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use model::EventKind;
use tokio::sync::{mpsc, oneshot};

use crate::execution::lease::{LeaseConfig, Owner};
use crate::live::events::EventBus;
use crate::store::{Backend, Store, StoreError};

/// Open streams per record set and viewer.
#[derive(Clone, Debug)]
pub struct Presence {
    counts: Counts,
    events: EventBus,
}

#[derive(Clone, Debug)]
enum Counts {
    /// This process's streams (SQLite).
    Local(Arc<Mutex<HashMap<i64, BTreeMap<String, usize>>>>),
    /// Every process's, in the database; changes are written in order by
    /// one task.
    Shared {
        changes: mpsc::UnboundedSender<Change>,
        store: Store,
        owner: Owner,
        leases: LeaseConfig,
    },
}

#[derive(Debug)]
struct Change {
    record_set_id: i64,
    viewer: String,
    delta: i32,
    /// Told once the set's viewers are published.
    published: Option<oneshot::Sender<()>>,
}

/// One viewer's open stream on one record set; dropping it leaves.
#[derive(Debug)]
pub struct Viewing {
    presence: Presence,
    record_set_id: i64,
    viewer: String,
}

impl Presence {
    /// This process's viewers only.
    pub fn new(events: EventBus) -> Self {
        Self {
            counts: Counts::Local(Arc::default()),
            events,
        }
    }

    /// The viewers of `store`: shared by every process on PostgreSQL. Call
    /// inside the Tokio runtime.
    pub fn for_store(store: &Store, events: EventBus, owner: Owner, leases: LeaseConfig) -> Self {
        if store.backend() == Backend::Sqlite {
            return Self::new(events);
        }
        let (changes, queue) = mpsc::unbounded_channel();
        let presence = Self {
            counts: Counts::Shared {
                changes,
                store: store.clone(),
                owner,
                leases,
            },
            events,
        };
        tokio::spawn(presence.clone().write_changes(queue));
        presence
    }

    /// Marks `viewer` as looking at a record set until the guard drops, and
    /// returns once the set's new viewers are published (so they come before
    /// anything this viewer does next).
    pub async fn join(&self, record_set_id: i64, viewer: &str) -> Viewing {
        let (published, done) = oneshot::channel();
        self.change(record_set_id, viewer, 1, Some(published));
        let _ = done.await;
        Viewing {
            presence: self.clone(),
            record_set_id,
            viewer: viewer.to_owned(),
        }
    }

    /// The people viewing a record set, by name.
    pub async fn viewers(&self, record_set_id: i64) -> Result<Vec<String>, StoreError> {
        match &self.counts {
            Counts::Local(open) => Ok(lock(open)
                .get(&record_set_id)
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()),
            Counts::Shared { store, .. } => store.viewers(record_set_id, store.now_ms()).await,
        }
    }

    /// Renews this process's viewer rows (PostgreSQL), and drops those of
    /// processes that stopped renewing theirs, telling their sets' viewers.
    /// Called with every heartbeat.
    pub async fn renew(&self) -> Result<(), StoreError> {
        if let Counts::Shared {
            store,
            owner,
            leases,
            ..
        } = &self.counts
        {
            store
                .renew_viewers(owner.as_str(), leases.expiry(store.now_ms()))
                .await?;
            self.forget(None).await?;
        }
        Ok(())
    }

    /// Removes this process's viewers at once (it is stopping), telling
    /// their sets' viewers on other processes.
    pub async fn leave_all(&self) -> Result<(), StoreError> {
        match &self.counts {
            Counts::Local(_) => Ok(()),
            Counts::Shared { owner, .. } => self.forget(Some(owner)).await,
        }
    }

    async fn forget(&self, owner: Option<&Owner>) -> Result<(), StoreError> {
        let Counts::Shared { store, .. } = &self.counts else {
            return Ok(());
        };
        let now = store.now_ms();
        for set in store.drop_viewers(now, owner.map(Owner::as_str)).await? {
            let viewers = store.viewers(set, now).await?;
            self.events.publish(Some(set), EventKind::presence(viewers));
        }
        Ok(())
    }

    fn change(
        &self,
        record_set_id: i64,
        viewer: &str,
        delta: i32,
        published: Option<oneshot::Sender<()>>,
    ) {
        match &self.counts {
            Counts::Local(open) => {
                let viewers = {
                    let mut open = lock(open);
                    let set = open.entry(record_set_id).or_default();
                    let count = set.entry(viewer.to_owned()).or_insert(0);
                    if delta > 0 {
                        *count += 1;
                    } else {
                        *count = count.saturating_sub(1);
                        if *count == 0 {
                            set.remove(viewer);
                        }
                    }
                    let viewers: Vec<String> = set.keys().cloned().collect();
                    if set.is_empty() {
                        open.remove(&record_set_id);
                    }
                    viewers
                };
                self.events
                    .publish(Some(record_set_id), EventKind::presence(viewers));
                if let Some(published) = published {
                    let _ = published.send(());
                }
            }
            Counts::Shared { changes, .. } => {
                let _ = changes.send(Change {
                    record_set_id,
                    viewer: viewer.to_owned(),
                    delta,
                    published,
                });
            }
        }
    }

    /// Writes joins and leaves in the order they happened and publishes each
    /// set's viewers after its change.
    async fn write_changes(self, mut queue: mpsc::UnboundedReceiver<Change>) {
        let Counts::Shared {
            store,
            owner,
            leases,
            ..
        } = &self.counts
        else {
            return;
        };
        let (store, owner, leases) = (store.clone(), owner.clone(), *leases);
        // The queue ends when the last handle (every `Presence`) is gone;
        // this task holds only what it needs to write.
        let events = self.events.clone();
        drop(self);
        while let Some(change) = queue.recv().await {
            let written = crate::store::retrying(|| {
                store.count_viewer(
                    owner.as_str(),
                    change.record_set_id,
                    &change.viewer,
                    change.delta,
                    store.now_ms(),
                    leases.expiry(store.now_ms()),
                )
            })
            .await;
            match written {
                Ok(viewers) => {
                    events.publish(Some(change.record_set_id), EventKind::presence(viewers))
                }
                Err(e) => {
                    tracing::warn!(error = %e, set = change.record_set_id, "Cannot record who views a record set.")
                }
            }
            if let Some(published) = change.published {
                let _ = published.send(());
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for Viewing {
    fn drop(&mut self) {
        self.presence
            .change(self.record_set_id, &self.viewer, -1, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn viewers_come_and_go_with_their_streams() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let presence = Presence::new(bus);
        let a1 = presence.join(1, "ada@example.org").await;
        let a2 = presence.join(1, "ada@example.org").await;
        let b = presence.join(1, "bob@example.org").await;
        let _other = presence.join(2, "carol@example.org").await;
        assert_eq!(
            presence.viewers(1).await.unwrap(),
            ["ada@example.org", "bob@example.org"]
        );
        drop(a1);
        // Ada still has a second tab open.
        assert_eq!(
            presence.viewers(1).await.unwrap(),
            ["ada@example.org", "bob@example.org"]
        );
        drop(a2);
        drop(b);
        assert!(presence.viewers(1).await.unwrap().is_empty());
        assert_eq!(presence.viewers(2).await.unwrap(), ["carol@example.org"]);
        let mut last_of_set_1 = None;
        while let Ok(event) = rx.try_recv() {
            if event.record_set_id == Some(1) {
                last_of_set_1 = Some(event.kind.clone());
            }
        }
        assert_eq!(last_of_set_1, Some(EventKind::presence(vec![])));
    }
}
