//! The REST door: JSON routes under `/api`. This contract is public: keep it
//! stable. Every error is `{error, detail}` with the status that says what
//! kind it is.

mod catalog;
mod error;
mod events;
mod extract;
mod fires;
mod jobs;
mod record_sets;

use axum::extract::{DefaultBodyLimit, State};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use model::Health;

pub use error::ApiError;
pub use record_sets::MAX_IMPORT_BYTES;

use crate::router::AppState;

/// The routes under `/api`; anything else there is a JSON 404.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/health", get(health))
        .route("/capabilities", get(catalog::capabilities))
        .route("/connectors", get(catalog::connectors))
        .route("/connectors/{id}/disable", post(catalog::disable))
        .route("/connectors/{id}/enable", post(catalog::enable))
        .route("/connectors/{id}/audit", get(catalog::audit))
        .route("/packs", get(catalog::packs))
        .route("/bundles", get(catalog::bundles))
        .route(
            "/record-sets",
            get(record_sets::list)
                .post(record_sets::import)
                .layer(DefaultBodyLimit::max(MAX_IMPORT_BYTES + 1)),
        )
        .route("/record-sets/{id}", delete(record_sets::remove))
        .route("/record-sets/{id}/records", get(record_sets::records))
        .route("/record-sets/{id}/export", get(record_sets::export))
        .route("/record-sets/{id}/fanout", post(jobs::fanout))
        .route("/records/{id}/fire", post(fires::fire))
        .route("/records/{id}/history", get(fires::history))
        .route("/records/{id}/items", get(fires::items))
        .route("/records/{id}/overrides/{pack}", put(fires::set_override))
        .route("/records/{id}/menu/{pack}", get(fires::menu))
        .route("/fires/{id}/cancel", post(fires::cancel))
        .route("/items/{id}/triage", post(fires::triage))
        .route("/jobs/{id}", get(jobs::get))
        .route("/jobs/{id}/cancel", post(jobs::cancel))
        .route("/events", get(events::stream))
        .fallback(|| async { ApiError::NotFound("no such API route".to_owned()) })
}

/// `GET /api/health`: the process answers and its database is reachable.
async fn health(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    state.engine.store.ping().await?;
    Ok(Json(Health::ok(env!("CARGO_PKG_VERSION"))))
}
