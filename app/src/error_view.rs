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
                        .map(|(_, e)| view! { <li>{readable(&e.to_string())}</li> })
                        .collect_view()
                }}
            </ul>
        </div>
    }
}

/// A server function's failure as a person reads it. An error rendered on
/// the server reaches the browser in its wire encoding (`ServerError|...`);
/// the kind before the bar is for programs.
fn readable(text: &str) -> String {
    const KINDS: [&str; 10] = [
        "ServerError",
        "WrappedServerFn",
        "Registration",
        "Request",
        "Response",
        "MiddlewareError",
        "Deserialization",
        "Serialization",
        "Args",
        "MissingArg",
    ];
    match text.split_once('|') {
        Some((kind, rest)) if KINDS.contains(&kind) => rest.to_owned(),
        _ => text.to_owned(),
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

#[cfg(test)]
mod tests {
    use super::readable;

    #[test]
    fn a_server_error_reads_without_its_wire_kind() {
        assert_eq!(
            readable("ServerError|record set 1 does not exist"),
            "record set 1 does not exist"
        );
        assert_eq!(readable("no bar here"), "no bar here");
        assert_eq!(readable("Odd|kept whole"), "Odd|kept whole");
    }
}
