//! The bus across processes on PostgreSQL. Publishing puts an event in this
//! process's outbox; one writer task writes whatever has queued as one batch
//! (one statement: ids from the database counter, then `NOTIFY`). One
//! listener task hears every batch of every process and reads the new rows
//! after the last id this process delivered, so delivery is in id order with
//! no gap, and a lost connection only delays it: after reconnecting the
//! listener reads everything it missed.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{EventBus, Inner, Unsent, KEPT};
use crate::store::{NewEvent, Store, StoreError};

/// At most this many events go into one statement.
const BATCH: usize = 512;
/// How many rows one catch-up read takes.
const READ: usize = 1024;
/// How long a batch is tried again before it is given up (and this
/// process's viewers told to resync).
const WRITE_PAUSES: [Duration; 5] = [
    Duration::from_millis(20),
    Duration::from_millis(100),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
];
/// Kept events: a day, and at most this many.
const KEEP_EVENTS: u64 = 100_000;
const KEEP_FOR_MS: i64 = 24 * 60 * 60 * 1000;

enum Outgoing {
    Event(Box<NewEvent>),
    /// Answered once everything queued before it is written.
    Flush(oneshot::Sender<()>),
}

/// This process's side of the shared bus: the queue to the writer, the
/// store for reading back, and what stops the listener when the bus goes.
#[derive(Debug)]
pub(super) struct Outbox {
    queue: mpsc::UnboundedSender<Outgoing>,
    store: Store,
    listening: watch::Receiver<bool>,
    _stop_listening: DropGuard,
}

/// What the tasks started by [`start`] take.
pub(super) struct Tasks {
    queue: mpsc::UnboundedReceiver<Outgoing>,
    stop: CancellationToken,
    /// Set by the listener once it listens and knows where it starts: the
    /// writer waits for it, so this process hears every event it publishes.
    listening: watch::Sender<bool>,
}

impl std::fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outgoing::Event(e) => e.fmt(f),
            Outgoing::Flush(_) => f.write_str("Flush"),
        }
    }
}

impl Outbox {
    pub(super) fn new(store: Store) -> (Self, Tasks) {
        let (queue, rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let (listening, heard) = watch::channel(false);
        (
            Self {
                queue,
                store,
                listening: heard,
                _stop_listening: stop.clone().drop_guard(),
            },
            Tasks {
                queue: rx,
                stop,
                listening,
            },
        )
    }

    pub(super) fn send(&self, event: Unsent) {
        // The writer ends only with this outbox.
        let _ = self.queue.send(Outgoing::Event(Box::new(NewEvent {
            record_set_id: event.record_set_id,
            workspace_id: event.workspace_id,
            kind: event.kind,
        })));
    }

    /// Returns once this process hears the deployment's events.
    pub(super) async fn listening(&self) {
        let _ = self.listening.clone().wait_for(|l| *l).await;
    }

    /// Waits until every event published so far is written (or given up).
    pub(super) async fn flush(&self) {
        let (done, written) = oneshot::channel();
        if self.queue.send(Outgoing::Flush(done)).is_ok() {
            let _ = written.await;
        }
    }

    /// The stored events after `last_id`, or `None` when some of them were
    /// pruned, `last_id` was never given out, or there are more than a
    /// stream should replay.
    pub(super) async fn since(&self, last_id: u64) -> Option<Vec<Arc<model::Event>>> {
        let answer = async {
            let span = self.store.event_span().await?;
            if last_id >= span.next_id {
                return Ok(None);
            }
            if last_id.saturating_add(1) == span.next_id {
                return Ok(Some(Vec::new()));
            }
            if span
                .oldest
                .is_none_or(|oldest| oldest > last_id.saturating_add(1))
            {
                return Ok(None);
            }
            let events = self.store.events_after(last_id, KEPT + 1).await?;
            if events.len() > KEPT {
                return Ok(None);
            }
            Ok::<_, StoreError>(Some(events.into_iter().map(Arc::new).collect()))
        };
        answer.await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "Cannot read the events a stream missed; it resyncs.");
            None
        })
    }

    /// Removes old events (any process may; it is the same for all).
    pub(super) async fn prune(&self) -> Result<u64, StoreError> {
        self.store
            .prune_events(KEEP_EVENTS, self.store.now_ms().saturating_sub(KEEP_FOR_MS))
            .await
    }
}

/// Starts the writer and the listener of `bus`.
pub(super) fn start(store: Store, bus: &EventBus, tasks: Tasks) {
    let weak = Arc::downgrade(&bus.inner);
    let heard = tasks.listening.subscribe();
    tokio::spawn(write(store.clone(), tasks.queue, heard, weak.clone()));
    tokio::spawn(async move {
        tokio::select! {
            () = tasks.stop.cancelled() => {}
            () = listen(store, weak, tasks.listening) => {}
        }
    });
}

/// Writes what is queued, a batch at a time, until the bus is dropped.
async fn write(
    store: Store,
    mut queue: mpsc::UnboundedReceiver<Outgoing>,
    mut listening: watch::Receiver<bool>,
    bus: Weak<Inner>,
) {
    if listening.wait_for(|l| *l).await.is_err() {
        // The bus was dropped before it listened.
        return;
    }
    let mut batch = Vec::with_capacity(BATCH);
    let mut flushed = Vec::new();
    while let Some(first) = queue.recv().await {
        let mut next = Some(first);
        while let Some(outgoing) = next.take() {
            match outgoing {
                Outgoing::Event(e) => batch.push(*e),
                Outgoing::Flush(done) => flushed.push(done),
            }
            if batch.len() < BATCH {
                next = queue.try_recv().ok();
            }
        }
        if !batch.is_empty() {
            write_batch(&store, &batch, &bus).await;
            batch.clear();
        }
        for done in flushed.drain(..) {
            let _ = done.send(());
        }
    }
}

async fn write_batch(store: &Store, batch: &[NewEvent], bus: &Weak<Inner>) {
    let mut pauses = WRITE_PAUSES.iter();
    loop {
        match store.write_events(batch, store.now_ms()).await {
            Ok(_) => return,
            Err(e) => match pauses.next() {
                Some(pause) => {
                    tracing::warn!(error = %e, events = batch.len(), "Cannot write events; trying again.");
                    tokio::time::sleep(*pause).await;
                }
                None => {
                    tracing::error!(error = %e, events = batch.len(), "Gave up writing events; this process's viewers resync.");
                    if let Some(inner) = bus.upgrade() {
                        let bus = EventBus { inner };
                        let id = bus.next_id().saturating_sub(1);
                        // Not kept: its id is the last one this process delivered.
                        let _ = bus.inner.tx.send(Arc::new(model::Event {
                            id,
                            record_set_id: None,
                            workspace_id: None,
                            kind: model::EventKind::Resync,
                        }));
                    }
                    return;
                }
            },
        }
    }
}

/// Hears every batch and delivers the new events in id order, from the
/// last event there was when it started listening.
async fn listen(store: Store, bus: Weak<Inner>, listening: watch::Sender<bool>) {
    let mut pause = Duration::from_millis(100);
    let mut listener = loop {
        match store.listen_events().await {
            Ok(listener) => break listener,
            Err(e) => {
                tracing::warn!(error = %e, "Cannot listen for events; trying again.");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
        }
    };
    // Listening first, then where to start: nothing falls in between.
    let mut delivered = loop {
        match store.event_span().await {
            Ok(span) => break span.next_id.saturating_sub(1),
            Err(e) => {
                tracing::warn!(error = %e, "Cannot read the event counter; trying again.");
                tokio::time::sleep(pause).await;
            }
        }
    };
    if let Some(inner) = bus.upgrade() {
        EventBus { inner }.kept().next_id = delivered.saturating_add(1);
    }
    listening.send_replace(true);
    loop {
        let announced = match listener.try_recv().await {
            Ok(Some(notification)) => notification.payload().parse::<u64>().ok(),
            // The connection dropped and is back: read whatever was missed.
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "Lost the event channel; listening again.");
                tokio::time::sleep(Duration::from_millis(200)).await;
                None
            }
        };
        if announced.is_some_and(|last| last <= delivered) {
            continue;
        }
        let Some(inner) = bus.upgrade() else { return };
        let bus = EventBus { inner };
        if let Some(last) = announced {
            if bus.skip_unheard(last) {
                // Nobody here streams events now: what a stream that opens
                // later asks for comes from the database.
                delivered = last;
                continue;
            }
        }
        loop {
            match store.events_after(delivered, READ).await {
                Ok(events) => {
                    let full = events.len() == READ;
                    if let Some(last) = events.last() {
                        delivered = last.id;
                    }
                    bus.deliver(events);
                    if !full {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "Cannot read new events; trying again.");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }
}
