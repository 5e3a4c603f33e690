//! The event bus: every change worth showing live is published here once and
//! fanned out to every subscriber (the SSE streams). Recent events are kept so
//! a reconnecting browser can resume from its `Last-Event-ID`.
//!
//! On SQLite (one process) the bus lives in memory and ids count from 1 at
//! each start. On PostgreSQL every process shares it: a published event is
//! written to the `events` table, which gives it its id, and every process
//! (this one included) hears of it through `LISTEN/NOTIFY` and reads it back
//! by id, so every process delivers every event in id order and any of them
//! can resume any viewer's stream (see [`shared`]).

mod shared;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use model::{Event, EventKind};
use tokio::sync::broadcast;

use crate::store::{Backend, Store};

/// How many recent events each process keeps in memory for resuming streams.
const KEPT: usize = 4096;

/// Publishes events to every subscriber. Cheap to clone.
#[derive(Clone, Debug)]
pub struct EventBus {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    tx: broadcast::Sender<Arc<Event>>,
    kept: Mutex<Kept>,
    /// Where events go on PostgreSQL; `None`: this process alone.
    shared: Option<shared::Outbox>,
}

/// The recent events this process delivered, and the id after the last one.
#[derive(Debug)]
struct Kept {
    recent: VecDeque<Arc<Event>>,
    next_id: u64,
}

/// One event before it has an id.
#[derive(Debug)]
struct Unsent {
    record_set_id: Option<i64>,
    workspace_id: Option<i64>,
    kind: EventKind,
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBus {
    /// A bus for this process alone.
    pub fn new() -> Self {
        Self::with(None)
    }

    /// The bus for `store`: shared by every process on PostgreSQL, this
    /// process's own on SQLite. Call inside the Tokio runtime: on PostgreSQL
    /// it starts the tasks that write and hear events.
    pub fn for_store(store: &Store) -> Self {
        match store.backend() {
            Backend::Sqlite => Self::new(),
            Backend::Postgres => {
                let (outbox, tasks) = shared::Outbox::new(store.clone());
                let bus = Self::with(Some(outbox));
                shared::start(store.clone(), &bus, tasks);
                bus
            }
        }
    }

    fn with(shared: Option<shared::Outbox>) -> Self {
        let (tx, _) = broadcast::channel(1024);
        Self {
            inner: Arc::new(Inner {
                tx,
                kept: Mutex::new(Kept {
                    recent: VecDeque::with_capacity(KEPT),
                    next_id: 1,
                }),
                shared,
            }),
        }
    }

    /// Whether events cross processes (PostgreSQL).
    pub fn is_shared(&self) -> bool {
        self.inner.shared.is_some()
    }

    /// Publishes one event about a record set (`None`: for every viewer).
    pub fn publish(&self, record_set_id: Option<i64>, kind: EventKind) {
        self.send(Unsent {
            record_set_id,
            workspace_id: None,
            kind,
        });
    }

    /// Publishes an event only `workspace_id`'s viewers get (`None`: everyone).
    pub fn publish_in(&self, workspace_id: Option<i64>, kind: EventKind) {
        self.send(Unsent {
            record_set_id: None,
            workspace_id,
            kind,
        });
    }

    fn send(&self, event: Unsent) {
        match &self.inner.shared {
            // The database gives it its id; it comes back to this process
            // like to every other.
            Some(outbox) => outbox.send(event),
            None => {
                let mut kept = self.kept();
                // Ids are taken under the lock so the kept list stays in id order.
                let id = kept.next_id;
                let event = Event {
                    id,
                    record_set_id: event.record_set_id,
                    workspace_id: event.workspace_id,
                    kind: event.kind,
                };
                self.deliver_locked(&mut kept, event);
            }
        }
    }

    /// Keeps and broadcasts events that have their ids, in id order.
    fn deliver(&self, events: impl IntoIterator<Item = Event>) {
        let mut kept = self.kept();
        for event in events {
            self.deliver_locked(&mut kept, event);
        }
    }

    /// Moves past events up to `last_id` without reading them when nobody
    /// here subscribes, and says whether it did; the kept events no longer
    /// run up to now, so they go. Decided under the kept lock: a stream
    /// subscribes before it asks what it missed, so either it is counted
    /// here or it finds the skip done.
    fn skip_unheard(&self, last_id: u64) -> bool {
        let mut kept = self.kept();
        if self.inner.tx.receiver_count() > 0 {
            return false;
        }
        kept.recent.clear();
        kept.next_id = last_id.saturating_add(1);
        true
    }

    fn deliver_locked(&self, kept: &mut Kept, event: Event) {
        kept.next_id = event.id.saturating_add(1);
        let event = Arc::new(event);
        if kept.recent.len() == KEPT {
            kept.recent.pop_front();
        }
        kept.recent.push_back(event.clone());
        // No subscriber is not an error.
        let _ = self.inner.tx.send(event);
    }

    /// Returns once this process hears every process's events (at once on
    /// SQLite): events published before were written but not heard here.
    pub async fn listening(&self) {
        if let Some(outbox) = &self.inner.shared {
            outbox.listening().await;
        }
    }

    /// Waits until every event published so far has left this process
    /// (PostgreSQL; at once on SQLite). For a process about to stop.
    pub async fn flush(&self) {
        if let Some(outbox) = &self.inner.shared {
            outbox.flush().await;
        }
    }

    /// Removes events older than a day, and all but the newest 100,000
    /// (PostgreSQL; nothing to do on SQLite, whose events live in memory).
    pub async fn prune(&self) -> Result<u64, crate::store::StoreError> {
        match &self.inner.shared {
            Some(outbox) => outbox.prune().await,
            None => Ok(0),
        }
    }

    /// A receiver of every event delivered from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.inner.tx.subscribe()
    }

    /// The events after `last_id`, or `None` when some of them are no longer
    /// kept, or `last_id` was never given out (a client of an earlier run of
    /// the server, or of another database): the caller should tell its
    /// client to resync. On PostgreSQL what this process no longer keeps in
    /// memory (or has not heard of yet) is read from the database.
    pub async fn since(&self, last_id: u64) -> Option<Vec<Arc<Event>>> {
        if let Some(answer) = self.since_in_memory(last_id) {
            return answer;
        }
        let shared = self.inner.shared.as_ref()?;
        shared.since(last_id).await
    }

    /// What the kept events say about `last_id`: `Some(answer)` when they
    /// settle it, `None` when only the database can.
    fn since_in_memory(&self, last_id: u64) -> Option<Option<Vec<Arc<Event>>>> {
        let kept = self.kept();
        if last_id.saturating_add(1) == kept.next_id {
            return Some(Some(Vec::new()));
        }
        if last_id >= kept.next_id {
            // Not given out yet here; another process may have (PostgreSQL).
            return if self.is_shared() { None } else { Some(None) };
        }
        match kept.recent.front() {
            Some(first) if first.id <= last_id.saturating_add(1) => Some(Some(
                kept.recent
                    .iter()
                    .filter(|e| e.id > last_id)
                    .cloned()
                    .collect(),
            )),
            _ if self.is_shared() => None,
            _ => Some(None),
        }
    }

    /// The id after the last event this process delivered.
    pub fn next_id(&self) -> u64 {
        self.kept().next_id
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.inner.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Reads which id the bus gives next, and nothing else: what a door's
/// stream keeps to name where a resync starts.
#[derive(Clone, Debug)]
pub struct EventIds(EventBus);

impl EventIds {
    pub fn new(bus: &EventBus) -> Self {
        Self(bus.clone())
    }

    /// The id after the last event this process delivered.
    pub fn next(&self) -> u64 {
        self.0.next_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resync() -> EventKind {
        EventKind::Resync
    }

    #[tokio::test]
    async fn subscribers_get_every_event_in_order() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        bus.publish(Some(1), resync());
        bus.publish(None, resync());
        let a = rx.recv().await.unwrap();
        let b = rx.recv().await.unwrap();
        assert_eq!((a.id, a.record_set_id), (1, Some(1)));
        assert_eq!((b.id, b.record_set_id), (2, None));
    }

    #[tokio::test]
    async fn resuming_replays_what_was_missed_or_asks_for_a_resync() {
        let bus = EventBus::new();
        assert_eq!(bus.since(0).await.unwrap().len(), 0);
        for _ in 0..10 {
            bus.publish(Some(1), resync());
        }
        let missed: Vec<u64> = bus.since(7).await.unwrap().iter().map(|e| e.id).collect();
        assert_eq!(missed, vec![8, 9, 10]);
        assert!(bus.since(10).await.unwrap().is_empty());
        for _ in 0..KEPT {
            bus.publish(Some(1), resync());
        }
        assert!(bus.since(3).await.is_none(), "event 4 is no longer kept");
        assert!(
            bus.since(u64::MAX).await.is_none(),
            "an id from an earlier run of the server"
        );
        assert!(bus.since(bus.next_id() + 5).await.is_none());
        assert_eq!(bus.since(bus.next_id() - 2).await.unwrap().len(), 1);
    }
}
