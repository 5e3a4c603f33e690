//! Who is viewing which record set right now: each open event stream holds
//! a [`Viewing`] guard, and every join or leave publishes the set's viewers
//! to its subscribers. On SQLite the count lives in this process; on
//! PostgreSQL every process writes its own streams to the database (renewed
//! with its heartbeat), so the list names the viewers on every process.
//! A set's news goes out at most once per [`PRESENCE_NEWS_EVERY`]: the
//! first change at once, the ones that follow within it together at its
//! end (a thousand people arriving is a few dozen events, not a thousand).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use model::EventKind;
use tokio::sync::{mpsc, oneshot};

use crate::execution::lease::{LeaseConfig, Owner};
use crate::live::events::EventBus;
use crate::store::{Backend, Store, StoreError};

/// How often at most a set's viewers are news.
pub const PRESENCE_NEWS_EVERY: Duration = Duration::from_millis(250);

/// Open streams per record set and viewer.
#[derive(Clone, Debug)]
pub struct Presence {
    counts: Counts,
    news: News,
}

/// The presence news of each set told within the last
/// [`PRESENCE_NEWS_EVERY`], with its viewers since if they changed: the
/// news still to tell at the window's end.
#[derive(Clone, Debug)]
struct News {
    events: EventBus,
    every: Duration,
    recent: Arc<Mutex<HashMap<i64, Option<EventKind>>>>,
}

impl News {
    fn new(events: EventBus) -> Self {
        Self {
            events,
            every: PRESENCE_NEWS_EVERY,
            recent: Arc::default(),
        }
    }

    /// Tells a set's viewers (a presence event) now, or at the end of the
    /// window its last news opened (the latest news then).
    fn tell(&self, record_set_id: i64, news: EventKind) {
        let mut recent = lock(&self.recent);
        if let Some(waiting) = recent.get_mut(&record_set_id) {
            *waiting = Some(news);
            return;
        }
        // Published under the lock: news of one set keeps its order.
        self.events.publish(Some(record_set_id), news);
        // Outside a runtime (a guard dropped as it ends) nothing waits.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            recent.insert(record_set_id, None);
            runtime.spawn(self.clone().window(record_set_id));
        }
    }

    /// Closes a set's window, telling what changed within it (and opening
    /// the next window when it did).
    async fn window(self, record_set_id: i64) {
        tokio::time::sleep(self.every).await;
        let waiting = lock(&self.recent).remove(&record_set_id).flatten();
        if let Some(news) = waiting {
            self.tell(record_set_id, news);
        }
    }
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
            news: News::new(events),
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
            news: News::new(events),
        };
        tokio::spawn(presence.clone().write_changes(queue));
        presence
    }

    /// Marks `viewer` as looking at a record set until the guard drops, and
    /// returns once the set's new viewers are told or waiting to be (news
    /// told at once comes before anything this viewer does next).
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
            self.news.tell(set, EventKind::presence(viewers));
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
                {
                    // Told under the lock, so news of two changes cannot
                    // cross: the last told is the last state.
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
                    // The first names only: a thousand viewers' list is not
                    // copied for each arrival.
                    let news = EventKind::presence_of(set.keys().cloned(), set.len());
                    if set.is_empty() {
                        open.remove(&record_set_id);
                    }
                    self.news.tell(record_set_id, news);
                }
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

    /// Writes joins and leaves in the order they happened and tells each
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
        let news = self.news.clone();
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
                Ok(viewers) => news.tell(change.record_set_id, EventKind::presence(viewers)),
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
        // The leaves' news comes at the end of the window.
        tokio::time::sleep(PRESENCE_NEWS_EVERY * 2).await;
        let mut last_of_set_1 = None;
        while let Ok(event) = rx.try_recv() {
            if event.record_set_id == Some(1) {
                last_of_set_1 = Some(event.kind.clone());
            }
        }
        assert_eq!(last_of_set_1, Some(EventKind::presence(vec![])));
    }

    /// Every event of set `set` received so far.
    fn news_of(
        rx: &mut tokio::sync::broadcast::Receiver<Arc<model::Event>>,
        set: i64,
    ) -> Vec<EventKind> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .filter(|e| e.record_set_id == Some(set))
            .map(|e| e.kind.clone())
            .collect()
    }

    #[tokio::test]
    async fn arrivals_close_together_are_one_piece_of_news() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        // A window longer than a hundred joins take on any machine.
        let window = Duration::from_secs(2);
        let mut presence = Presence::new(bus);
        presence.news.every = window;
        let first = presence.join(1, "viewer0@example.org").await;
        // The first arrival is news at once.
        assert_eq!(
            news_of(&mut rx, 1),
            [EventKind::presence(vec!["viewer0@example.org".to_owned()])]
        );
        let mut guards = vec![first];
        for n in 1..100 {
            guards.push(presence.join(1, &format!("viewer{n}@example.org")).await);
        }
        assert!(
            news_of(&mut rx, 1).is_empty(),
            "the others wait for the window"
        );
        tokio::time::sleep(window + Duration::from_millis(100)).await;
        let told = news_of(&mut rx, 1);
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(
            matches!(&told[0], EventKind::Presence { count: 100, .. }),
            "{told:?}"
        );
        // A quiet window opens none after it: the next arrival is news at once.
        tokio::time::sleep(window + Duration::from_millis(100)).await;
        assert!(news_of(&mut rx, 1).is_empty());
        let _late = presence.join(1, "late@example.org").await;
        assert!(matches!(
            news_of(&mut rx, 1).as_slice(),
            [EventKind::Presence { count: 101, .. }]
        ));
    }
}
