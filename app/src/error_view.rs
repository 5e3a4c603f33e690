//! The views every page uses to show a failed read, and what the last
//! action did.

use leptos::prelude::*;

/// Lists the errors an `ErrorBoundary` caught, as plain text.
pub fn error_list(errors: ArcRwSignal<Errors>) -> impl IntoView {
    view! {
        <div class="error" role="alert">
            <p>"Something went wrong:"</p>
            <ul>
                {move || {
                    errors
                        .get()
                        .into_iter()
                        .map(|(_, e)| view! { <li>{e.to_string()}</li> })
                        .collect_view()
                }}
            </ul>
        </div>
    }
}

/// A page's one line of news: what the last action did (`Ok`), or why it
/// failed (`Err`).
pub type Notice = RwSignal<Option<Result<String, String>>>;

/// Shows a page's notice: a status line, or an alert when it failed.
pub fn notice_line(notice: Notice) -> impl IntoView {
    move || {
        notice.get().map(|m| match m {
            Ok(text) => view! { <p class="notice" role="status">{text}</p> }.into_any(),
            Err(text) => view! { <p class="error" role="alert">{text}</p> }.into_any(),
        })
    }
}
