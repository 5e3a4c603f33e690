//! The event bus: every change worth showing live is published here once and
//! fanned out to every subscriber (the SSE streams). Recent events are kept so
//! a reconnecting browser can resume from its `Last-Event-ID`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use model::{Event, EventKind};
use tokio::sync::broadcast;

/// How many recent events are kept for resuming streams.
const KEPT: usize = 4096;

/// Publishes events to every subscriber. Cheap to clone.
#[derive(Clone, Debug)]
pub struct EventBus {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    tx: broadcast::Sender<Arc<Event>>,
    next_id: AtomicU64,
    recent: Mutex<VecDeque<Arc<Event>>>,
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBus {
    pub fn new() -> Self {
        let (tx, _) = broadcast::channel(1024);
        Self {
            inner: Arc::new(Inner {
                tx,
                next_id: AtomicU64::new(1),
                recent: Mutex::new(VecDeque::with_capacity(KEPT)),
            }),
        }
    }

    /// Publishes one event and returns its id.
    pub fn publish(&self, record_set_id: Option<i64>, kind: EventKind) -> u64 {
        self.send(record_set_id, None, kind)
    }

    /// Publishes an event only `workspace_id`'s viewers get (`None`: everyone).
    pub fn publish_in(&self, workspace_id: Option<i64>, kind: EventKind) -> u64 {
        self.send(None, workspace_id, kind)
    }

    fn send(&self, record_set_id: Option<i64>, workspace_id: Option<i64>, kind: EventKind) -> u64 {
        let mut recent = self.recent();
        // Ids are taken under the lock so the kept list stays in id order.
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let event = Arc::new(Event {
            id,
            record_set_id,
            workspace_id,
            kind,
        });
        if recent.len() == KEPT {
            recent.pop_front();
        }
        recent.push_back(event.clone());
        drop(recent);
        // No subscriber is not an error.
        let _ = self.inner.tx.send(event);
        id
    }

    /// A receiver of every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.inner.tx.subscribe()
    }

    /// The kept events after `last_id`, or `None` when some of them are no
    /// longer kept, or `last_id` was never given out here (a client of an
    /// earlier run of the server): the caller should tell its client to resync.
    pub fn since(&self, last_id: u64) -> Option<Vec<Arc<Event>>> {
        let recent = self.recent();
        let next = self.inner.next_id.load(Ordering::Relaxed);
        if last_id.saturating_add(1) == next {
            return Some(Vec::new());
        }
        if last_id >= next {
            return None;
        }
        match recent.front() {
            Some(first) if first.id <= last_id + 1 => {
                Some(recent.iter().filter(|e| e.id > last_id).cloned().collect())
            }
            _ => None,
        }
    }

    /// The id the next event will get.
    pub fn next_id(&self) -> u64 {
        self.inner.next_id.load(Ordering::Relaxed)
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, VecDeque<Arc<Event>>> {
        self.inner.recent.lock().unwrap_or_else(|e| e.into_inner())
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
        let a = bus.publish(Some(1), resync());
        let b = bus.publish(None, resync());
        assert_eq!(rx.recv().await.unwrap().id, a);
        assert_eq!(rx.recv().await.unwrap().id, b);
        assert!(b > a);
    }

    #[test]
    fn resuming_replays_what_was_missed_or_asks_for_a_resync() {
        let bus = EventBus::new();
        assert_eq!(bus.since(0).unwrap().len(), 0);
        for _ in 0..10 {
            bus.publish(Some(1), resync());
        }
        let missed: Vec<u64> = bus.since(7).unwrap().iter().map(|e| e.id).collect();
        assert_eq!(missed, vec![8, 9, 10]);
        assert!(bus.since(10).unwrap().is_empty());
        for _ in 0..KEPT {
            bus.publish(Some(1), resync());
        }
        assert!(bus.since(3).is_none(), "event 4 is no longer kept");
        assert!(
            bus.since(u64::MAX).is_none(),
            "an id from an earlier run of the server"
        );
        assert!(bus.since(bus.next_id() + 5).is_none());
        assert_eq!(bus.since(bus.next_id() - 2).unwrap().len(), 1);
    }
}
