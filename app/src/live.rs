//! The live stream: one `EventSource` on `/api/events` for as long as the
//! view that opened it lives. The browser reconnects by itself and sends
//! `Last-Event-ID`, so a dropped stream resumes where it stopped. While it
//! is open, `<body data-live="true">` says so (people's tools and the
//! browser tests read it).

/// Calls `on_event` with every event from `url` until the calling view is
/// cleaned up (browser only; on the server it does nothing).
#[cfg(feature = "hydrate")]
pub fn subscribe(url: &str, on_event: impl Fn(model::Event) + 'static) {
    use leptos::prelude::*;
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;

    let Ok(source) = web_sys::EventSource::new(url) else {
        return;
    };
    let on_message =
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            if let Some(text) = e.data().as_string() {
                if let Ok(event) = serde_json::from_str::<model::Event>(&text) {
                    on_event(event);
                }
            }
        });
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
    let held = send_wrapper::SendWrapper::new((source, on_message, on_open, on_error));
    on_cleanup(move || {
        held.0.close();
        live(false)();
    });
}

/// On the server there is no stream.
#[cfg(not(feature = "hydrate"))]
pub fn subscribe(_url: &str, _on_event: impl Fn(model::Event) + 'static) {}
