//! The one view every page uses to show a failed read.

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
