//! The one axum router: the REST door under `/api`, the Leptos pages and server
//! functions, and the static site files.

use axum::extract::FromRef;
use axum::Router;
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower_http::trace::TraceLayer;

use app::{shell, App};
use engine::Engine;

/// What every handler can reach: the Leptos options and the domain engine.
#[derive(Clone, Debug)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub engine: Engine,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}

impl FromRef<AppState> for Engine {
    fn from_ref(state: &AppState) -> Self {
        state.engine.clone()
    }
}

/// Builds the whole router; tests call it with their own state.
pub fn app(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let engine = state.engine.clone();
    Router::new()
        .nest("/api", crate::api::router())
        .leptos_routes_with_context(&state, routes, move || provide_context(engine.clone()), {
            let options = state.leptos_options.clone();
            move || shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}
