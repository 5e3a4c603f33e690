//! Switchyard's user interface: the HTML shell, the router and the pages, with
//! the server functions they call. Built twice: `ssr` for the server, `hydrate`
//! for the browser.

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Title};
use leptos_router::components::{Route, Router, Routes, A};
use leptos_router::{path, Lazy};

pub mod access;
pub mod capability;
mod chunk;
mod clock;
mod error_view;
mod live;
pub mod pages;
pub mod triage;
mod wire;

use pages::{lazy, provide_viewer, AccountCorner, NotFoundPage};

/// The whole HTML document the server renders around the app.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                // The build's name for the script, module and stylesheet
                // (content-hashed: browsers keep them for good).
                <link rel="stylesheet" id="leptos" href=format!("/pkg/{}.css", options.output_name)/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The app: header with navigation, and the routed page below it.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    provide_viewer();

    view! {
        <Title formatter=|page: String| {
            if page.is_empty() { "Switchyard".to_owned() } else { format!("{page} · Switchyard") }
        }/>
        <Router>
            <header class="app-header">
                <A href="/" attr:class="brand">"Switchyard"</A>
                <nav aria-label="Main">
                    <A href="/record-sets">"Record sets"</A>
                    <A href="/inventory">"Inventory"</A>
                    <A href="/packs">"Packs"</A>
                    <A href="/spend">"Spend"</A>
                    <A href="/members">"Members"</A>
                    <A href="/settings">"Settings"</A>
                </nav>
                <AccountCorner/>
            </header>
            <main class="app-main">
                <Routes fallback=NotFoundPage>
                    <Route path=path!("/") view={Lazy::<lazy::RecordSetsRoute>::new()}/>
                    <Route path=path!("/record-sets") view={Lazy::<lazy::RecordSetsRoute>::new()}/>
                    <Route path=path!("/record-sets/:id") view=triage::TriageView/>
                    <Route path=path!("/inventory") view={Lazy::<lazy::InventoryRoute>::new()}/>
                    <Route path=path!("/packs") view={Lazy::<lazy::PacksRoute>::new()}/>
                    <Route path=path!("/spend") view={Lazy::<lazy::SpendRoute>::new()}/>
                    <Route path=path!("/members") view={Lazy::<lazy::MembersRoute>::new()}/>
                    <Route path=path!("/settings") view={Lazy::<lazy::SettingsRoute>::new()}/>
                    <Route path=path!("/sign-in") view={Lazy::<lazy::SignInRoute>::new()}/>
                    <Route path=path!("/set-password") view={Lazy::<lazy::SetPasswordRoute>::new()}/>
                </Routes>
            </main>
        </Router>
    }
}
