//! The REST door: JSON routes under `/api`. Every error is `{error, detail}`
//! with the status that says what kind it is.

mod error;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use model::Health;

pub use error::ApiError;

use crate::router::AppState;

/// The routes under `/api`; anything else there is a JSON 404.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/health", get(health))
        .fallback(|| async { ApiError::NotFound("no such API route".to_owned()) })
}

/// `GET /api/health`: the process answers and its database is reachable.
async fn health(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    state.engine.store.ping().await?;
    Ok(Json(Health::ok(env!("CARGO_PKG_VERSION"))))
}
