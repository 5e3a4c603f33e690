//! The REST door: JSON routes under `/api`. This contract is public: keep it
//! stable. Every error is `{error, detail}` with the status that says what
//! kind it is.

mod account;
mod calls;
mod catalog;
mod error;
mod events;
pub use events::{MAX_STREAMS_PER_PERSON, STREAM_RECHECK};
mod extract;
mod fires;
mod jobs;
mod manifests;
pub mod openapi;
mod record_sets;
mod refresh;
mod spend;

use axum::extract::State;
use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::{Json, Router};
use model::Health;

pub use error::ApiError;
use error::ErrorBody;
pub use extract::{AdminCaller, Caller};

use crate::router::AppState;

/// One route: its method, its path under `/api`, and its handler.
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    handler: MethodRouter<AppState>,
}

fn route<H, T>(method: Method, path: &'static str, handler: H) -> Route
where
    H: Handler<T, AppState>,
    T: 'static,
{
    // Only the standard methods below are used, and each has a filter.
    let filter = MethodFilter::try_from(method.clone()).unwrap_or(MethodFilter::GET);
    Route {
        method,
        path,
        handler: on(filter, handler),
    }
}

/// Every route of the REST door, in one table the router is built from and
/// the access tests walk. All but `/health` and `/openapi.json` need a
/// session or a token ([`crate::auth::gate`]).
pub fn routes() -> Vec<Route> {
    vec![
        route(Method::GET, "/health", health),
        route(Method::GET, "/openapi.json", openapi::openapi_json),
        route(Method::GET, "/capabilities", catalog::capabilities),
        route(Method::POST, "/capabilities/{capability}/call", calls::call),
        route(Method::GET, "/calls/{id}", calls::get),
        route(Method::GET, "/calls/{id}/attempts", calls::attempts),
        route(Method::POST, "/calls/{id}/cancel", calls::cancel),
        route(Method::GET, "/connectors", catalog::connectors),
        route(Method::GET, "/connectors/stats", catalog::stats),
        route(Method::GET, "/connectors/attention", catalog::attention),
        route(Method::POST, "/connectors/{id}/disable", catalog::disable),
        route(Method::POST, "/connectors/{id}/enable", catalog::enable),
        route(Method::GET, "/connectors/{id}/audit", catalog::audit),
        route(Method::POST, "/connectors/{id}/recheck", manifests::recheck),
        route(Method::GET, "/manifests", manifests::list),
        route(Method::POST, "/manifests", manifests::save),
        route(Method::POST, "/manifests/test", manifests::test),
        route(Method::DELETE, "/manifests/{id}", manifests::remove),
        route(Method::GET, "/secrets", manifests::secrets),
        route(Method::PUT, "/secrets/{name}", manifests::set_secret),
        route(Method::DELETE, "/secrets/{name}", manifests::clear_secret),
        route(Method::GET, "/budgets", spend::list),
        route(Method::PUT, "/budgets", spend::set),
        route(Method::DELETE, "/budgets", spend::remove),
        route(Method::GET, "/spend", spend::report),
        route(Method::GET, "/spend/export", spend::export),
        route(Method::GET, "/packs", catalog::packs),
        route(Method::PUT, "/packs/{id}", catalog::save_pack),
        route(Method::DELETE, "/packs/{id}", catalog::remove_pack),
        route(Method::GET, "/bundles", catalog::bundles),
        route(Method::PUT, "/bundles/{id}", catalog::save_bundle),
        route(Method::DELETE, "/bundles/{id}", catalog::remove_bundle),
        route(Method::GET, "/record-sets", record_sets::list),
        route(Method::POST, "/record-sets", record_sets::import),
        route(Method::DELETE, "/record-sets/{id}", record_sets::remove),
        route(
            Method::GET,
            "/record-sets/{id}/records",
            record_sets::records,
        ),
        route(Method::GET, "/record-sets/{id}/export", record_sets::export),
        route(Method::POST, "/record-sets/{id}/fanout", jobs::fanout),
        route(Method::GET, "/record-sets/{id}/refresh", refresh::list),
        route(
            Method::PUT,
            "/record-sets/{id}/refresh/{pack}",
            refresh::set,
        ),
        route(
            Method::DELETE,
            "/record-sets/{id}/refresh/{pack}",
            refresh::remove,
        ),
        route(Method::POST, "/records/{id}/fire", fires::fire),
        route(Method::GET, "/records/{id}/history", fires::history),
        route(Method::GET, "/records/{id}/items", fires::items),
        route(
            Method::PUT,
            "/records/{id}/overrides/{pack}",
            fires::set_override,
        ),
        route(Method::GET, "/records/{id}/menu/{pack}", fires::menu),
        route(Method::POST, "/fires/{id}/cancel", fires::cancel),
        route(Method::POST, "/items/{id}/triage", fires::triage),
        route(Method::GET, "/jobs/{id}", jobs::get),
        route(Method::POST, "/jobs/{id}/cancel", jobs::cancel),
        route(Method::GET, "/events", events::stream),
        route(Method::GET, "/me", account::me),
        route(
            Method::PUT,
            "/me/pack-labels/{pack}",
            account::set_pack_label,
        ),
        route(Method::GET, "/members", account::members),
        route(Method::POST, "/members", account::add_member),
        route(Method::PUT, "/members/{id}", account::set_role),
        route(Method::DELETE, "/members/{id}", account::remove_member),
    ]
}

/// The routes under `/api`; anything else there is a JSON 404.
pub fn router() -> Router<AppState> {
    routes()
        .into_iter()
        .fold(Router::new(), |router, r| router.route(r.path, r.handler))
        .fallback(|| async {
            ApiError::from(engine::ops::OpError::NotFound(
                "no such API route".to_owned(),
            ))
        })
}

/// `GET /api/health`: the process answers and its database is reachable.
#[utoipa::path(
    get, path = "/api/health", tag = "health", security(()),
    responses((status = 200, body = Health), (status = 500, description = "The database does not answer", body = ErrorBody))
)]
async fn health(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    state.engine.ping().await?;
    Ok(Json(Health::ok(env!("CARGO_PKG_VERSION"))))
}
