//! A record set's refresh schedules: a pack re-fired over the set's stale
//! records by itself, as `scheduled-refresh` jobs.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use model::{RefreshPlan, RefreshSchedule};

use super::error::ErrorBody;
use super::extract::{AdminCaller, ApiJson, Caller};
use super::ApiError;
use crate::router::AppState;

/// `GET /api/record-sets/{id}/refresh`: the set's schedules, by pack.
#[utoipa::path(
    get, path = "/api/record-sets/{id}/refresh", tag = "jobs",
    params(("id" = i64, Path, description = "The record set")),
    responses((status = 200, body = Vec<RefreshSchedule>), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn list(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Vec<RefreshSchedule>>, ApiError> {
    Ok(Json(state.engine.refreshes(&who, id).await?))
}

/// `PUT /api/record-sets/{id}/refresh/{pack}` (admins) with
/// `{every_hours, window_start?, window_end?}`: re-fires the pack over the
/// records whose last fire of it is older than `every_hours`, within the
/// window of UTC hours, as jobs triggered by `scheduled-refresh`.
#[utoipa::path(
    put, path = "/api/record-sets/{id}/refresh/{pack}", tag = "jobs",
    params(("id" = i64, Path, description = "The record set"), ("pack" = String, Path, description = "A pack of the set's bundle")),
    request_body = RefreshPlan,
    responses((status = 200, body = RefreshSchedule), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn set(
    State(state): State<AppState>,
    Path((id, pack)): Path<(i64, String)>,
    AdminCaller(who): AdminCaller,
    ApiJson(plan): ApiJson<RefreshPlan>,
) -> Result<Json<RefreshSchedule>, ApiError> {
    Ok(Json(state.engine.set_refresh(&who, id, &pack, plan).await?))
}

/// `DELETE /api/record-sets/{id}/refresh/{pack}` (admins).
#[utoipa::path(
    delete, path = "/api/record-sets/{id}/refresh/{pack}", tag = "jobs",
    params(("id" = i64, Path, description = "The record set"), ("pack" = String, Path, description = "The pack")),
    responses((status = 204, description = "Removed"), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "No such schedule", body = ErrorBody))
)]
pub async fn remove(
    State(state): State<AppState>,
    Path((id, pack)): Path<(i64, String)>,
    AdminCaller(who): AdminCaller,
) -> Result<StatusCode, ApiError> {
    state.engine.remove_refresh(&who, id, &pack).await?;
    Ok(StatusCode::NO_CONTENT)
}
