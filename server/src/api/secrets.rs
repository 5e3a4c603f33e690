//! Secrets of the caller's workspace: listed (names, who set them and
//! when), set and cleared by admins. Values go in, never out.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use model::{check_secret_name, SecretInfo, SecretValue};

use super::error::ErrorBody;
use super::extract::{AdminCaller, ApiJson, Caller};
use super::ApiError;
use crate::router::AppState;

/// `GET /api/secrets`: the names of the workspace's secrets, who set them
/// and when. Never a value.
#[utoipa::path(
    get, path = "/api/secrets", tag = "secrets",
    responses((status = 200, body = Vec<SecretInfo>))
)]
pub async fn secrets(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<SecretInfo>>, ApiError> {
    Ok(Json(state.engine.secrets(&who).await?))
}

/// `PUT /api/secrets/{name}` with `{"value": "..."}` (admins): sealed and
/// stored; the answer says it is set, not what it is.
#[utoipa::path(
    put, path = "/api/secrets/{name}", tag = "secrets",
    params(("name" = String, Path, description = "The secret, e.g. TAVILY_API_KEY")),
    request_body = SecretValue,
    responses((status = 200, body = SecretInfo), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 409, description = "Someone acted first, or it is not in a state for this", body = ErrorBody))
)]
pub async fn set_secret(
    State(state): State<AppState>,
    Path(name): Path<String>,
    AdminCaller(who): AdminCaller,
    ApiJson(body): ApiJson<SecretValue>,
) -> Result<Json<SecretInfo>, ApiError> {
    check_secret_name(&name).map_err(|m| ApiError::invalid(format!("name: {m}")))?;
    Ok(Json(
        state.engine.set_secret(&who, &name, &body.value).await?,
    ))
}

/// `DELETE /api/secrets/{name}` (admins).
#[utoipa::path(
    delete, path = "/api/secrets/{name}", tag = "secrets",
    params(("name" = String, Path, description = "The secret")),
    responses((status = 204, description = "Cleared"), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn clear_secret(
    State(state): State<AppState>,
    Path(name): Path<String>,
    AdminCaller(who): AdminCaller,
) -> Result<StatusCode, ApiError> {
    state.engine.clear_secret(&who, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
