//! The one axum router: the REST door under `/api`, sign-in under `/auth`,
//! the Leptos pages and server functions, and the static site files, all
//! behind [`crate::auth::gate`].

use axum::extract::{DefaultBodyLimit, FromRef};
use axum::http::Method;
use axum::routing::post;
use axum::Router;
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower_http::trace::TraceLayer;

use app::{shell, App};
use engine::Engine;

use crate::auth::{self, TrustedProxies};

/// What every handler can reach: the Leptos options, the domain engine and
/// the request limits.
#[derive(Clone, Debug)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub engine: Engine,
    /// The proxies whose `X-Forwarded-For` names the client (for the
    /// sign-in limits).
    pub trusted_proxies: TrustedProxies,
    /// Requests per API token.
    pub token_rate: auth::TokenRate,
    /// Mark the session cookie Secure (the site is served over https).
    pub secure_cookies: bool,
    /// Open event streams, by person.
    pub streams: engine::ops::Slots,
    /// Open streams' access, checked again for all of them at once.
    pub access: crate::auth::AccessWatch,
    /// Recent events' JSON, made once and shared by every stream.
    pub event_json: crate::api::EventJson,
    /// Cancelled when the process starts stopping: open event streams end
    /// with a hint to reconnect (to another process).
    pub stopping: tokio_util::sync::CancellationToken,
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

/// Prometheus scrapes this, with a token.
pub const METRICS_PATH: &str = "/metrics";

/// The form posts of signing in and out, switching workspace, and choosing
/// or changing one's password.
const AUTH_ROUTES: [(Method, &str); 5] = [
    (Method::POST, "/auth/sign-in"),
    (Method::POST, "/auth/sign-out"),
    (Method::POST, "/auth/workspace"),
    (Method::POST, "/auth/set-password"),
    (Method::POST, "/auth/password"),
];

/// Builds the whole router; tests call it with their own state.
pub fn app(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let engine = state.engine.clone();
    let site_files = crate::delivery::site_files(&state.leptos_options.site_root);
    Router::new()
        .merge(crate::api::router())
        .nest_service(
            crate::mcp::MCP_PATH,
            crate::mcp::service(state.engine.clone(), state.access.clone()),
        )
        .nest_service(crate::delivery::PKG_PATH, site_files)
        .route(AUTH_ROUTES[0].1, post(auth::sign_in))
        .route(AUTH_ROUTES[1].1, post(auth::sign_out))
        .route(AUTH_ROUTES[2].1, post(auth::switch_workspace))
        .route(AUTH_ROUTES[3].1, post(auth::set_password))
        .route(AUTH_ROUTES[4].1, post(auth::change_password))
        .route(METRICS_PATH, axum::routing::get(crate::metrics::metrics))
        .leptos_routes_with_context(&state, routes, move || provide_context(engine.clone()), {
            let options = state.leptos_options.clone();
            move || shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::gate,
        ))
        .layer(auth::session_layer(&state, state.secure_cookies))
        .layer(axum::middleware::from_fn(crate::csrf::same_origin_only))
        .layer(axum::middleware::from_fn(crate::csrf::never_framed))
        .layer(axum::middleware::from_fn(crate::body_limit::limit_body))
        .layer(DefaultBodyLimit::disable())
        .layer(axum::middleware::from_fn(crate::delivery::cache_rules))
        .layer(crate::delivery::compression())
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Every method and path the router answers (path parameters as `{name}`):
/// the REST door, the sign-in forms, the agents' door, the pages and the
/// server functions.
/// The access tests call each one.
pub fn inventory() -> Vec<(Method, String)> {
    let mut all: Vec<(Method, String)> = crate::api::routes();
    all.extend(
        AUTH_ROUTES
            .iter()
            .map(|(m, p)| (m.clone(), (*p).to_owned())),
    );
    all.push((Method::GET, METRICS_PATH.to_owned()));
    all.push((Method::POST, crate::mcp::MCP_PATH.to_owned()));
    for page in generate_route_list(App) {
        all.push((Method::GET, page.path().to_owned()));
    }
    for (path, method) in server_fn::axum::server_fn_paths() {
        all.push((method, path.to_owned()));
    }
    all
}
