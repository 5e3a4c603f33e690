//! Capabilities and connectors of the caller's workspace: what serves
//! each capability, connectors' status, figures and audit trail, what
//! admins must act on, and admins' switches and probes.

use axum::extract::{Path, State};
use axum::Json;
use engine::store::StatusChange;
use model::{CapabilityView, ConnectorInfo, TestReport};
use serde::{Deserialize, Serialize};

use super::error::ErrorBody;
use super::extract::{AdminCaller, ApiBytes, Caller};
use super::ApiError;
use crate::router::AppState;

/// `GET /api/capabilities`: every verb the caller's workspace can call
/// (its search capabilities, then the typed verbs such as `web.scrape`),
/// each with the JSON Schemas of its input and of one result (made from
/// the types its doors parse), how it answers, what it bills and whether
/// some connector can answer it now.
#[utoipa::path(
    get, path = "/api/capabilities", tag = "catalog",
    responses((status = 200, body = Vec<CapabilityView>))
)]
pub async fn capabilities(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<CapabilityView>>, ApiError> {
    Ok(Json(state.engine.capabilities_of(&who).await?))
}

/// `GET /api/connectors`: every connector as the caller's workspace sees it,
/// with today's fires and its last day.
#[utoipa::path(
    get, path = "/api/connectors", tag = "connectors",
    responses((status = 200, body = Vec<model::InventoryRow>))
)]
pub async fn connectors(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<model::InventoryRow>>, ApiError> {
    Ok(Json(state.engine.inventory(&who).await?))
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DisableBody {
    #[serde(default)]
    pub reason: String,
}

/// `POST /api/connectors/{id}/disable` with an optional `{"reason": "..."}`
/// (admins): off for the caller's workspace only.
#[utoipa::path(
    post, path = "/api/connectors/{id}/disable", tag = "connectors",
    params(("id" = String, Path, description = "The connector")),
    request_body(content = Option<DisableBody>, description = "Optional reason"),
    responses((status = 200, body = ConnectorInfo), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn disable(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AdminCaller(who): AdminCaller,
    body: ApiBytes,
) -> Result<Json<ConnectorInfo>, ApiError> {
    let reason = body.json_or_default::<DisableBody>()?.reason;
    Ok(Json(
        state.engine.disable_connector(&who, &id, &reason).await?,
    ))
}

/// `POST /api/connectors/{id}/enable` (admins): on again for the caller's
/// workspace, and a refused key or rate limit cleared for another try.
#[utoipa::path(
    post, path = "/api/connectors/{id}/enable", tag = "connectors",
    params(("id" = String, Path, description = "The connector")),
    responses((status = 200, body = ConnectorInfo), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn enable(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AdminCaller(who): AdminCaller,
) -> Result<Json<ConnectorInfo>, ApiError> {
    Ok(Json(state.engine.enable_connector(&who, &id).await?))
}

/// `GET /api/connectors/{id}/audit`: the status changes the caller's
/// workspace may see, newest first.
#[utoipa::path(
    get, path = "/api/connectors/{id}/audit", tag = "connectors",
    params(("id" = String, Path, description = "The connector")),
    responses((status = 200, body = Vec<StatusChange>), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn audit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Caller(who): Caller,
) -> Result<Json<Vec<StatusChange>>, ApiError> {
    Ok(Json(state.engine.connector_audit(&who, &id).await?))
}

/// `GET /api/connectors/stats`: every connector's last day in the caller's
/// workspace (attempts by outcome, latency percentiles).
#[utoipa::path(
    get, path = "/api/connectors/stats", tag = "connectors",
    responses((status = 200, body = Vec<model::ConnectorStats>))
)]
pub async fn stats(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<model::ConnectorStats>>, ApiError> {
    Ok(Json(state.engine.connector_stats(&who).await?))
}

/// `GET /api/connectors/attention` (admins): the connectors the caller's
/// workspace's admins must act on (a refused key, a long suspension), oldest
/// first, each with what happened and what to do.
#[utoipa::path(
    get, path = "/api/connectors/attention", tag = "connectors",
    responses((status = 200, body = Vec<model::Attention>), (status = 403, description = "Only an admin may do this", body = ErrorBody))
)]
pub async fn attention(
    State(state): State<AppState>,
    AdminCaller(who): AdminCaller,
) -> Result<Json<Vec<model::Attention>>, ApiError> {
    Ok(Json(state.engine.attention(&who).await?))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Recheck {
    pub connector: ConnectorInfo,
    pub report: TestReport,
}

/// `POST /api/connectors/{id}/recheck` (admins): one probe fire; an answer
/// clears an earlier failure.
#[utoipa::path(
    post, path = "/api/connectors/{id}/recheck", tag = "connectors",
    params(("id" = String, Path, description = "The connector")),
    responses((status = 200, body = Recheck), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody), (status = 429, description = "A cap or limit stops it for now", body = ErrorBody))
)]
pub async fn recheck(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AdminCaller(who): AdminCaller,
) -> Result<Json<Recheck>, ApiError> {
    let (connector, report) = state.engine.recheck(&who, &id).await?;
    Ok(Json(Recheck { connector, report }))
}
