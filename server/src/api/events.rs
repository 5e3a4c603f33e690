//! `GET /api/events?record_set=ID&after=EVENT`: server-sent events for one
//! record set (and the events every viewer gets), with keep-alive, resumed
//! after `after` or a reconnecting browser's `Last-Event-ID`.
//! An open stream checks every few seconds that its caller may still have
//! it: a revoked token or a removed member's stream ends. It also says when
//! the database stops answering and when it answers again.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::Extension;
use futures::stream::{self, Stream, StreamExt};
use model::{Event, EventKind};
use serde::Deserialize;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::{BroadcastStream, WatchStream};

use engine::store::Owned;
use engine::tenancy::credentials::Held;

use super::error::ErrorBody;
use super::extract::{ApiQuery, Caller};
use super::ApiError;
use crate::auth::Watching;
use crate::router::AppState;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventParams {
    /// The record set whose events to receive; without it, only the events
    /// every viewer gets (connector changes).
    #[serde(default)]
    pub record_set: Option<i64>,
    /// Resume after this event id (a page's data says which it is as new
    /// as); a `Last-Event-ID` header, sent by a reconnecting browser, wins.
    #[serde(default)]
    pub after: Option<u64>,
}

/// The JSON of the most recent events, each made once by the first stream
/// sending it and shared by every other: a thousand viewers of one set
/// cost one serialisation per event, not a thousand. Per process (an id
/// names one event of one bus).
#[derive(Clone, Debug, Default)]
pub struct EventJson(Arc<Mutex<VecDeque<Made>>>);

/// An event's id and its JSON.
type Made = (u64, Arc<str>);

/// Events whose JSON is kept: more than a burst of events any stream is
/// still sending (a stream further behind makes its own).
const EVENT_JSON_KEPT: usize = 256;

impl EventJson {
    fn of(&self, event: &Event) -> Arc<str> {
        let make = || -> Arc<str> {
            serde_json::to_string(event)
                .unwrap_or_else(|_| "{}".to_owned())
                .into()
        };
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, json)) = kept.iter().rev().find(|(id, _)| *id == event.id) {
            return json.clone();
        }
        let json = make();
        kept.push_back((event.id, json.clone()));
        if kept.len() > EVENT_JSON_KEPT {
            kept.pop_front();
        }
        json
    }
}

fn sse(json: &EventJson, event: &Event) -> SseEvent {
    SseEvent::default()
        .id(event.id.to_string())
        .data(&*json.of(event))
}

fn resync(id: u64) -> SseEvent {
    let data = serde_json::to_string(&Event {
        id,
        record_set_id: None,
        workspace_id: None,
        kind: EventKind::Resync,
    })
    .unwrap_or_else(|_| "{}".to_owned());
    SseEvent::default().id(id.to_string()).data(data)
}

/// Whether the database answers, as the process's probe found it: no id,
/// so a reconnecting browser resumes from the last event that was kept.
fn database(answering: bool) -> SseEvent {
    let event = Event {
        id: 0,
        record_set_id: None,
        workspace_id: None,
        kind: EventKind::Database { answering },
    };
    let data = serde_json::to_string(&event).unwrap_or_else(|_| "{}".to_owned());
    SseEvent::default().data(data)
}

/// How soon a browser reconnects when the process it streamed from stops.
pub const RECONNECT_AFTER_STOP: Duration = Duration::from_millis(500);

/// Event streams one person may hold open at once in a process (a tab
/// each, and a few scripts): past it, 429. Each costs a subscription and
/// a periodic access check.
pub const MAX_STREAMS_PER_PERSON: usize = 20;

#[utoipa::path(
    get, path = "/api/events", tag = "events",
    params(EventParams),
    responses((status = 200, description = "Server-sent events, one JSON Event each, with its id", content_type = "text/event-stream", body = Event), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody), (status = 429, description = "A cap or limit stops it for now", body = ErrorBody))
)]
pub async fn stream(
    State(state): State<AppState>,
    Caller(who): Caller,
    Extension(held): Extension<Held>,
    headers: HeaderMap,
    ApiQuery(params): ApiQuery<EventParams>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    // Only the caller's own sets, and of the connector changes those of
    // every workspace plus the caller's own.
    if let Some(id) = params.record_set {
        state.engine.authorize(&who, Owned::RecordSet(id)).await?;
    }
    let slot = state.streams.take_or_refuse(
        who.user_id,
        MAX_STREAMS_PER_PERSON,
        Duration::from_secs(30),
        || format!("events: you have {MAX_STREAMS_PER_PERSON} event streams open; close a tab or a script's stream first"),
    )?;
    let engine = &state.engine;
    // Subscribe before reading what was kept, so nothing falls in between.
    let live = engine.subscribe();
    let last_id: Option<u64> = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .or(params.after);
    let workspace = who.workspace_id;
    let wanted = Wanted {
        record_set: params.record_set,
        workspace,
    };

    let (replay, replayed_to): (Vec<SseEvent>, u64) = match last_id {
        // Nothing to replay: every event from the subscription on is new.
        None => (Vec::new(), 0),
        Some(last) => match engine.events_since(last).await {
            Some(missed) => {
                let to = missed.last().map_or(last, |e| e.id);
                (
                    missed
                        .iter()
                        .filter(|e| wanted.wants(e))
                        .map(|e| sse(&state.event_json, e))
                        .collect(),
                    to,
                )
            }
            // What was missed is no longer kept: the page must reload its state.
            None => {
                let now = engine.next_event_id().saturating_sub(1);
                (vec![resync(now)], now)
            }
        },
    };
    // Joining after subscribing: this viewer's own stream carries the news.
    let viewing = match params.record_set {
        Some(id) => Some(engine.join_viewers(id, &who).await),
        None => None,
    };
    let live = LiveEvents {
        received: BroadcastStream::new(live),
        wanted,
        replayed_to,
        json: state.event_json.clone(),
        ids: engine.event_ids(),
        _held: (viewing, slot),
    };
    let replay = stream::iter(replay.into_iter().map(Ok));
    // The database going away and coming back, told between events.
    let database = WatchStream::from_changes(engine.database_answers())
        .map(|answering| Ok(database(answering)));
    let watching = state.access.watch(held);
    let (ended, goodbye) = stream_end(&state, watching);
    Ok(Sse::new(
        stream::select(replay.chain(live), database)
            .take_until(ended)
            .chain(goodbye),
    )
    .keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// Which events a stream sends: its set's, and those of every set, of its
/// caller's workspace or of every workspace.
#[derive(Clone, Copy, Debug)]
struct Wanted {
    record_set: Option<i64>,
    workspace: i64,
}

impl Wanted {
    fn wants(self, e: &Event) -> bool {
        (e.record_set_id.is_none() || e.record_set_id == self.record_set)
            && e.workspace_id.is_none_or(|ws| ws == self.workspace)
    }
}

/// A stream's live events, as it sends them: a few hundred bytes each (a
/// thousand viewers of one set hold a thousand of these).
struct LiveEvents {
    received: BroadcastStream<Arc<Event>>,
    wanted: Wanted,
    /// The last event the replay sent.
    replayed_to: u64,
    json: EventJson,
    /// For the id a resync names.
    ids: engine::live::events::EventIds,
    /// Held while the stream is open: closing it leaves the set's viewers
    /// and gives the caller's stream slot back.
    _held: (Option<engine::live::presence::Viewing>, engine::ops::Slot),
}

impl Stream for LiveEvents {
    type Item = Result<SseEvent, Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        loop {
            let received = match self.received.poll_next_unpin(cx) {
                Poll::Ready(Some(received)) => received,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            };
            let out = match received {
                Ok(event) if event.id > self.replayed_to && self.wanted.wants(&event) => {
                    sse(&self.json, &event)
                }
                Ok(_) => continue,
                // This subscriber fell behind and events were dropped for it.
                Err(BroadcastStreamRecvError::Lagged(_)) => {
                    resync(self.ids.next().saturating_sub(1))
                }
            };
            return Poll::Ready(Some(Ok(out)));
        }
    }
}

/// When an open stream ends, and its last words: it ends when its caller's
/// access no longer holds (the process's [`crate::auth::AccessWatch`]
/// checks every open stream every [`crate::auth::STREAM_ACCESS_CHECK`]) or
/// when the process starts stopping; then it says to reconnect soon, and
/// the browser's next connection reaches a process that stays.
fn stream_end(
    state: &AppState,
    watching: Watching,
) -> (
    impl std::future::Future<Output = ()>,
    impl Stream<Item = Result<SseEvent, Infallible>>,
) {
    let stopping = state.stopping.clone();
    let ended = {
        let stopping = stopping.clone();
        async move {
            tokio::select! {
                () = watching.lost() => {}
                () = stopping.cancelled() => {}
            }
        }
    };
    let goodbye = stream::once(async move {
        stopping.is_cancelled().then(|| {
            SseEvent::default()
                .retry(RECONNECT_AFTER_STOP)
                .comment("this server is stopping; reconnect")
        })
    })
    .filter_map(|bye| async move { bye.map(Ok) });
    (ended, goodbye)
}
