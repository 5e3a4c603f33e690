//! The REST door: JSON routes under `/api`. This contract is public: keep it
//! stable. Every error is `{error, detail}` with the status that says what
//! kind it is.

mod account;
mod bulk;
mod calls;
mod connectors;
mod error;
mod events;
pub use events::{EventJson, MAX_STREAMS_PER_PERSON};
mod extract;
mod fires;
mod glance;
mod jobs;
mod manifests;
pub mod openapi;
mod packs;
mod record_sets;
mod refresh;
mod secrets;
mod spend;
mod verbs;

use axum::extract::State;
use axum::http::Method;
use axum::routing::any;
use axum::{Json, Router};
use model::Health;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use error::ApiError;
use error::ErrorBody;
pub use extract::{AdminCaller, Caller};

use crate::router::AppState;

/// The REST door as its handlers declare it: each handler's
/// `#[utoipa::path]` names its method and path once, and both the router
/// and the OpenAPI document are made from it.
fn door() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(health))
        .routes(routes!(ready))
        .routes(routes!(openapi::openapi_json))
        .routes(routes!(connectors::capabilities))
        .routes(routes!(calls::call))
        .routes(routes!(verbs::scrape))
        .routes(routes!(verbs::discover))
        .routes(routes!(verbs::maps_search))
        .routes(routes!(verbs::maps_place))
        .routes(routes!(verbs::maps_reviews))
        .routes(routes!(calls::get))
        .routes(routes!(calls::attempts))
        .routes(routes!(calls::cancel))
        .routes(routes!(connectors::connectors))
        .routes(routes!(connectors::stats))
        .routes(routes!(connectors::attention))
        .routes(routes!(connectors::disable))
        .routes(routes!(connectors::enable))
        .routes(routes!(connectors::audit))
        .routes(routes!(connectors::recheck))
        .routes(routes!(manifests::list))
        .routes(routes!(manifests::save))
        .routes(routes!(manifests::test))
        .routes(routes!(manifests::remove))
        .routes(routes!(secrets::secrets))
        .routes(routes!(secrets::set_secret))
        .routes(routes!(secrets::clear_secret))
        .routes(routes!(spend::list))
        .routes(routes!(spend::set))
        .routes(routes!(spend::remove))
        .routes(routes!(
            spend::record_caps,
            spend::set_record_cap,
            spend::remove_record_cap
        ))
        .routes(routes!(spend::report))
        .routes(routes!(spend::unanswered))
        .routes(routes!(bulk::preview))
        .routes(routes!(bulk::decide))
        .routes(routes!(bulk::undo))
        .routes(routes!(spend::export))
        .routes(routes!(packs::packs))
        .routes(routes!(packs::save_pack))
        .routes(routes!(packs::remove_pack))
        .routes(routes!(packs::bundles))
        .routes(routes!(packs::save_bundle))
        .routes(routes!(packs::remove_bundle))
        .routes(routes!(record_sets::list))
        .routes(routes!(record_sets::import))
        .routes(routes!(record_sets::remove))
        .routes(routes!(record_sets::records))
        .routes(routes!(glance::lines))
        .routes(routes!(glance::facets))
        .routes(routes!(record_sets::export))
        .routes(routes!(jobs::fanout))
        .routes(routes!(refresh::list))
        .routes(routes!(refresh::set))
        .routes(routes!(refresh::remove))
        .routes(routes!(fires::fire))
        .routes(routes!(fires::history))
        .routes(routes!(fires::items))
        .routes(routes!(fires::set_override))
        .routes(routes!(fires::menu))
        .routes(routes!(fires::cancel))
        .routes(routes!(fires::triage))
        .routes(routes!(jobs::get))
        .routes(routes!(jobs::cancel))
        .routes(routes!(events::stream))
        .routes(routes!(account::me))
        .routes(routes!(account::set_pack_label))
        .routes(routes!(account::my_chains))
        .routes(routes!(account::set_my_chain))
        .routes(routes!(account::members))
        .routes(routes!(account::add_member))
        .routes(routes!(account::set_role))
        .routes(routes!(account::remove_member))
}

/// The router of the REST door, and its OpenAPI document (before the
/// document's finishing touches, see [`openapi::document`]).
pub(crate) fn router_and_document() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    door().split_for_parts()
}

/// The routes under `/api`; anything else there is a JSON 404. All but
/// `/api/health`, `/api/ready` and `/api/openapi.json` need a session or a token
/// ([`crate::auth::gate`]).
pub fn router() -> Router<AppState> {
    router_and_document()
        .0
        .route("/api/{*rest}", any(no_such_route))
}

async fn no_such_route() -> ApiError {
    ApiError::from(engine::ops::OpError::NotFound(
        "no such API route".to_owned(),
    ))
}

/// Every method and path of the REST door, as its document lists them.
pub fn routes() -> Vec<(Method, String)> {
    let doc = openapi::document();
    doc.paths
        .paths
        .iter()
        .flat_map(|(path, item)| {
            [
                (Method::GET, item.get.is_some()),
                (Method::PUT, item.put.is_some()),
                (Method::POST, item.post.is_some()),
                (Method::DELETE, item.delete.is_some()),
                (Method::PATCH, item.patch.is_some()),
            ]
            .into_iter()
            .filter(|(_, has)| *has)
            .map(move |(method, _)| (method, path.clone()))
        })
        .collect()
}

/// `GET /api/health`: the process is up (it answers without asking the
/// database: a liveness probe; see `/api/ready`).
#[utoipa::path(
    get, path = "/api/health", tag = "health", security(()),
    responses((status = 200, body = Health))
)]
async fn health() -> Json<Health> {
    Json(Health::ok(env!("CARGO_PKG_VERSION")))
}

/// `GET /api/ready`: the process can serve, its database answering (a
/// load balancer's readiness probe); 503 with `Retry-After` while it does
/// not.
#[utoipa::path(
    get, path = "/api/ready", tag = "health", security(()),
    responses((status = 200, body = Health), (status = 503, description = "The database does not answer", body = ErrorBody))
)]
async fn ready(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    state.engine.ready().await?;
    Ok(Json(Health::ok(env!("CARGO_PKG_VERSION"))))
}
