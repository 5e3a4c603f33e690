//! The live stream: one `EventSource` on `/api/events` for as long as the
//! view that opened it lives. The browser reconnects by itself and sends
//! `Last-Event-ID`, so a dropped stream resumes where it stopped; one it
//! gave up on is opened again here, after the last event heard. While it
//! is open, `<body data-live="true">` says so (people's tools and the
//! browser tests read it).
//!
//! Reading an event (every kind the stream carries, with everything each
//! holds) is a tenth of the browser's code, and no chip needs it to work:
//! it is a chunk of its own, fetched as soon as a stream opens. Texts that
//! arrive before it are kept, in order, and read when it is there.

/// Calls `on_event` with every event from `url`, in the order they came,
/// until the calling view is cleaned up (browser only; on the server it
/// does nothing). A stream the browser gave up on (the server answered
/// anything but 200, say a 503 while its database was busy, or a proxy's
/// 502 during a restart) is opened again after a while, growing from 1 s
/// to 30 s with a random part (so a thousand viewers do not all come back
/// in the same instant), resuming after the last event heard.
#[cfg(feature = "hydrate")]
pub fn subscribe(url: &str, on_event: impl Fn(model::Event) + 'static) {
    use std::rc::Rc;

    use leptos::prelude::*;

    let stream = Rc::new(Stream {
        url: url.to_owned(),
        last_id: Default::default(),
        open: Default::default(),
        retry_ms: std::cell::Cell::new(FIRST_RETRY_MS),
        inbox: Default::default(),
        on_event: Rc::new(on_event),
    });
    // The reader starts loading now, not at the first event.
    leptos::task::spawn_local(async {
        let _ = preload_read_event().await;
    });
    open(&stream);
    let held = send_wrapper::SendWrapper::new(stream);
    on_cleanup(move || {
        let mut inbox = held.inbox.borrow_mut();
        inbox.closed = true;
        inbox.texts.clear();
        drop(inbox);
        if let Some(open) = held.open.borrow_mut().take() {
            open.source.close();
        }
        set_live(false);
    });
}

/// The first wait before opening a stream the browser gave up on, and the
/// longest.
#[cfg(feature = "hydrate")]
const FIRST_RETRY_MS: u32 = 1_000;
#[cfg(feature = "hydrate")]
const LAST_RETRY_MS: u32 = 30_000;

/// One view's stream: what it opens, what it heard last, and the open
/// `EventSource` with its handlers (replaced when it is opened again).
#[cfg(feature = "hydrate")]
struct Stream {
    url: String,
    /// The id of the last event heard, to resume after.
    last_id: std::cell::RefCell<Option<String>>,
    open: std::cell::RefCell<Option<Open>>,
    retry_ms: std::cell::Cell<u32>,
    inbox: std::rc::Rc<std::cell::RefCell<Inbox>>,
    on_event: std::rc::Rc<dyn Fn(model::Event)>,
}

#[cfg(feature = "hydrate")]
struct Open {
    source: web_sys::EventSource,
    /// Kept as long as the source calls them.
    _on_message: wasm_bindgen::closure::Closure<dyn FnMut(web_sys::MessageEvent)>,
    _on_open_or_error: [wasm_bindgen::closure::Closure<dyn FnMut()>; 2],
}

/// `<body data-live>`: whether the stream is open.
#[cfg(feature = "hydrate")]
fn set_live(on: bool) {
    if let Some(body) = leptos::prelude::document().body() {
        let _ = body.set_attribute("data-live", if on { "true" } else { "false" });
    }
}

/// Opens (or opens again) a view's stream, after the last event heard.
#[cfg(feature = "hydrate")]
fn open(stream: &std::rc::Rc<Stream>) {
    use std::rc::{Rc, Weak};

    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;

    let url = match &*stream.last_id.borrow() {
        Some(id) => resume_url(&stream.url, id),
        None => stream.url.clone(),
    };
    let Ok(source) = web_sys::EventSource::new(&url) else {
        return;
    };
    let weak = Rc::downgrade(stream);
    let on_message = {
        let weak = Weak::clone(&weak);
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            let Some(stream) = weak.upgrade() else {
                return;
            };
            let Some(text) = e.data().as_string() else {
                return;
            };
            let id = e.last_event_id();
            if !id.is_empty() {
                *stream.last_id.borrow_mut() = Some(id);
            }
            let mut held = stream.inbox.borrow_mut();
            held.texts.push_back(text);
            if !held.reading && !held.closed {
                held.reading = true;
                let (inbox, on_event) = (Rc::clone(&stream.inbox), Rc::clone(&stream.on_event));
                leptos::task::spawn_local(read_in_order(inbox, on_event));
            }
        })
    };
    let on_open = {
        let weak = Weak::clone(&weak);
        Closure::<dyn FnMut()>::new(move || {
            if let Some(stream) = weak.upgrade() {
                stream.retry_ms.set(FIRST_RETRY_MS);
            }
            set_live(true);
        })
    };
    let on_error = Closure::<dyn FnMut()>::new(move || {
        set_live(false);
        if let Some(stream) = weak.upgrade() {
            open_again_if_given_up(&stream);
        }
    });
    source.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    let replaced = stream.open.borrow_mut().replace(Open {
        source,
        _on_message: on_message,
        _on_open_or_error: [on_open, on_error],
    });
    if let Some(old) = replaced {
        old.source.close();
    }
}

/// The browser reconnects a dropped stream by itself, but not one whose
/// answer was not a 200: that one is opened again here, after a while.
#[cfg(feature = "hydrate")]
fn open_again_if_given_up(stream: &std::rc::Rc<Stream>) {
    let given_up = stream
        .open
        .borrow()
        .as_ref()
        .is_some_and(|o| o.source.ready_state() == web_sys::EventSource::CLOSED);
    if !given_up || stream.inbox.borrow().closed {
        return;
    }
    let wait = stream.retry_ms.get();
    stream
        .retry_ms
        .set(wait.saturating_mul(2).min(LAST_RETRY_MS));
    // Half the wait, plus up to as much again at random.
    let jitter = (js_sys::Math::random() * f64::from(wait / 2)) as u64;
    let after = std::time::Duration::from_millis(u64::from(wait / 2) + jitter);
    let weak = std::rc::Rc::downgrade(stream);
    leptos::prelude::set_timeout(
        move || {
            if let Some(stream) = weak.upgrade() {
                if !stream.inbox.borrow().closed {
                    open(&stream);
                }
            }
        },
        after,
    );
}

/// `url` with its `after` parameter set to `last_id` (any earlier one
/// dropped): where an opened-again stream resumes.
#[cfg(any(feature = "hydrate", test))]
fn resume_url(url: &str, last_id: &str) -> String {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let mut params: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("after="))
        .collect();
    let after = format!("after={last_id}");
    params.push(&after);
    format!("{path}?{}", params.join("&"))
}

/// Event texts heard and not yet read.
#[cfg(feature = "hydrate")]
#[derive(Default)]
struct Inbox {
    texts: std::collections::VecDeque<String>,
    /// A task is reading them (one at a time keeps their order).
    reading: bool,
    /// The view went: nothing more is read.
    closed: bool,
}

/// Reads the held texts one by one, oldest first, until none is left.
#[cfg(feature = "hydrate")]
async fn read_in_order(
    inbox: std::rc::Rc<std::cell::RefCell<Inbox>>,
    on_event: std::rc::Rc<dyn Fn(model::Event)>,
) {
    // The chunk that reads them, once: if the network fails it, the texts
    // wait for the next event, which tries again.
    if preload_read_event().await.is_err() {
        inbox.borrow_mut().reading = false;
        return;
    }
    loop {
        let next = inbox.borrow_mut().texts.pop_front();
        let Some(text) = next else {
            inbox.borrow_mut().reading = false;
            return;
        };
        // Not an event this build knows: skipped.
        if let Ok(Some(event)) = read_event(text).await {
            on_event(event);
        }
    }
}

/// One event from the stream's text, or `None` when it is not one.
#[cfg(feature = "hydrate")]
#[leptos::wasm_split::wasm_split(
    live_events,
    wasm_split_path = ::leptos::wasm_split,
    fallible,
    preload(preload_read_event)
)]
fn read_event(text: String) -> Result<Option<model::Event>, leptos::wasm_split::SplitLoaderError> {
    Ok(crate::wire::read(&text).ok())
}

/// On the server there is no stream.
#[cfg(not(feature = "hydrate"))]
pub fn subscribe(_url: &str, _on_event: impl Fn(model::Event) + 'static) {}

#[cfg(test)]
mod tests {
    use super::resume_url;

    #[test]
    fn an_opened_again_stream_resumes_after_the_last_event_heard() {
        assert_eq!(
            resume_url("/api/events?record_set=4&after=10", "57"),
            "/api/events?record_set=4&after=57"
        );
        assert_eq!(resume_url("/api/events", "3"), "/api/events?after=3");
        assert_eq!(
            resume_url("/api/events?after=1&record_set=9", "2"),
            "/api/events?record_set=9&after=2"
        );
    }
}
