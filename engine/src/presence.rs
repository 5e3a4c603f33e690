//! Who is viewing which record set right now, in this process: each open
//! event stream holds a [`Viewing`] guard, and every join or leave publishes
//! the set's viewers to its subscribers.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use model::EventKind;

use crate::events::EventBus;

/// Open streams per record set and viewer.
#[derive(Clone, Debug)]
pub struct Presence {
    open: Arc<Mutex<HashMap<i64, BTreeMap<String, usize>>>>,
    events: EventBus,
}

/// One viewer's open stream on one record set; dropping it leaves.
#[derive(Debug)]
pub struct Viewing {
    presence: Presence,
    record_set_id: i64,
    viewer: String,
}

impl Presence {
    pub fn new(events: EventBus) -> Self {
        Self {
            open: Arc::default(),
            events,
        }
    }

    /// Marks `viewer` as looking at a record set until the guard drops.
    pub fn join(&self, record_set_id: i64, viewer: &str) -> Viewing {
        self.change(record_set_id, viewer, true);
        Viewing {
            presence: self.clone(),
            record_set_id,
            viewer: viewer.to_owned(),
        }
    }

    /// The people viewing a record set, by name.
    pub fn viewers(&self, record_set_id: i64) -> Vec<String> {
        self.lock()
            .get(&record_set_id)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, BTreeMap<String, usize>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn change(&self, record_set_id: i64, viewer: &str, join: bool) {
        let viewers = {
            let mut open = self.lock();
            let set = open.entry(record_set_id).or_default();
            let count = set.entry(viewer.to_owned()).or_insert(0);
            if join {
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
            .publish(Some(record_set_id), EventKind::Presence { viewers });
    }
}

impl Drop for Viewing {
    fn drop(&mut self) {
        self.presence
            .change(self.record_set_id, &self.viewer, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewers_come_and_go_with_their_streams() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let presence = Presence::new(bus);
        let a1 = presence.join(1, "ada@example.org");
        let a2 = presence.join(1, "ada@example.org");
        let b = presence.join(1, "bob@example.org");
        let _other = presence.join(2, "carol@example.org");
        assert_eq!(presence.viewers(1), ["ada@example.org", "bob@example.org"]);
        drop(a1);
        // Ada still has a second tab open.
        assert_eq!(presence.viewers(1), ["ada@example.org", "bob@example.org"]);
        drop(a2);
        drop(b);
        assert!(presence.viewers(1).is_empty());
        assert_eq!(presence.viewers(2), ["carol@example.org"]);
        let mut last_of_set_1 = None;
        while let Ok(event) = rx.try_recv() {
            if event.record_set_id == Some(1) {
                last_of_set_1 = Some(event.kind.clone());
            }
        }
        assert_eq!(last_of_set_1, Some(EventKind::Presence { viewers: vec![] }));
    }
}
