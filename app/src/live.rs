//! The live stream: one `EventSource` on `/api/events` for as long as the
//! view that opened it lives. The browser reconnects by itself and sends
//! `Last-Event-ID`, so a dropped stream resumes where it stopped. While it
//! is open, `<body data-live="true">` says so (people's tools and the
//! browser tests read it).
//!
//! Reading an event (every kind the stream carries, with everything each
//! holds) is a tenth of the browser's code, and no chip needs it to work:
//! it is a chunk of its own, fetched as soon as a stream opens. Texts that
//! arrive before it are kept, in order, and read when it is there.

/// Calls `on_event` with every event from `url`, in the order they came,
/// until the calling view is cleaned up (browser only; on the server it
/// does nothing).
#[cfg(feature = "hydrate")]
pub fn subscribe(url: &str, on_event: impl Fn(model::Event) + 'static) {
    use std::cell::RefCell;
    use std::rc::Rc;

    use leptos::prelude::*;
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;

    let Ok(source) = web_sys::EventSource::new(url) else {
        return;
    };
    let inbox = Rc::new(RefCell::new(Inbox::default()));
    let on_event: Rc<dyn Fn(model::Event)> = Rc::new(on_event);
    // The reader starts loading now, not at the first event.
    leptos::task::spawn_local(async {
        let _ = preload_read_event().await;
    });
    let on_message = {
        let inbox = Rc::clone(&inbox);
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            let Some(text) = e.data().as_string() else {
                return;
            };
            let mut held = inbox.borrow_mut();
            held.texts.push_back(text);
            if !held.reading && !held.closed {
                held.reading = true;
                leptos::task::spawn_local(read_in_order(Rc::clone(&inbox), Rc::clone(&on_event)));
            }
        })
    };
    let live = |on: bool| {
        move || {
            if let Some(body) = document().body() {
                let _ = body.set_attribute("data-live", if on { "true" } else { "false" });
            }
        }
    };
    let on_open = Closure::<dyn FnMut()>::new(live(true));
    let on_error = Closure::<dyn FnMut()>::new(live(false));
    source.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    let held = send_wrapper::SendWrapper::new((source, on_message, on_open, on_error, inbox));
    on_cleanup(move || {
        held.0.close();
        let mut inbox = held.4.borrow_mut();
        inbox.closed = true;
        inbox.texts.clear();
        live(false)();
    });
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
