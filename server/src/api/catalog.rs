//! Capabilities, connectors, packs and bundles.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use engine::packs::{BundleConfig, PackConfig};
use engine::store::StatusChange;
use model::{CapabilityView, ConnectorInfo};
use serde::Deserialize;

use super::error::ErrorBody;
use super::extract::{AdminCaller, ApiBytes, ApiJson, Caller};
use super::ApiError;
use crate::router::AppState;

/// `GET /api/capabilities`
#[utoipa::path(
    get, path = "/api/capabilities", tag = "catalog",
    responses((status = 200, body = Vec<CapabilityView>))
)]
pub async fn capabilities(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Json<Vec<CapabilityView>> {
    Json(state.engine.capabilities_of(&who))
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
    Ok(Json(state.engine.inventory(who.workspace_id).await?))
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
    Ok(Json(state.engine.connector_stats(who.workspace_id).await?))
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

/// `GET /api/packs`: the packs of the caller's workspace (shipped, and its
/// own laid over them).
#[utoipa::path(
    get, path = "/api/packs", tag = "catalog",
    responses((status = 200, body = Vec<PackConfig>))
)]
pub async fn packs(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<PackConfig>>, ApiError> {
    let catalog = state.engine.catalog_in(Some(who.workspace_id)).await?;
    Ok(Json(catalog.packs().to_vec()))
}

/// `GET /api/bundles`: the bundles of the caller's workspace.
#[utoipa::path(
    get, path = "/api/bundles", tag = "catalog",
    responses((status = 200, body = Vec<BundleConfig>))
)]
pub async fn bundles(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<BundleConfig>>, ApiError> {
    let catalog = state.engine.catalog_in(Some(who.workspace_id)).await?;
    Ok(Json(catalog.bundles().to_vec()))
}

fn same_id(path: &str, body: &str, field: &str) -> Result<(), ApiError> {
    if path == body {
        Ok(())
    } else {
        Err(ApiError::invalid(format!(
            "{field}: {body:?} differs from the address's {path:?}"
        )))
    }
}

/// `PUT /api/packs/{id}` with the pack (admins): creates it for the
/// workspace, or makes the workspace's version of a shipped one.
#[utoipa::path(
    put, path = "/api/packs/{id}", tag = "catalog",
    params(("id" = String, Path, description = "The pack")),
    request_body = PackConfig,
    responses((status = 200, body = PackConfig), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody))
)]
pub async fn save_pack(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AdminCaller(who): AdminCaller,
    ApiJson(pack): ApiJson<PackConfig>,
) -> Result<Json<PackConfig>, ApiError> {
    same_id(&id, &pack.pack_id, "pack_id")?;
    Ok(Json(state.engine.save_pack(&who, pack).await?))
}

/// `DELETE /api/packs/{id}` (admins): the workspace's own pack, or its
/// version of a shipped one.
#[utoipa::path(
    delete, path = "/api/packs/{id}", tag = "catalog",
    params(("id" = String, Path, description = "The pack")),
    responses((status = 204, description = "Removed"), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody), (status = 409, description = "Someone acted first, or it is not in a state for this", body = ErrorBody))
)]
pub async fn remove_pack(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AdminCaller(who): AdminCaller,
) -> Result<StatusCode, ApiError> {
    state.engine.remove_pack(&who, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT /api/bundles/{id}` with the bundle (admins).
#[utoipa::path(
    put, path = "/api/bundles/{id}", tag = "catalog",
    params(("id" = String, Path, description = "The bundle")),
    request_body = BundleConfig,
    responses((status = 200, body = BundleConfig), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody))
)]
pub async fn save_bundle(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AdminCaller(who): AdminCaller,
    ApiJson(bundle): ApiJson<BundleConfig>,
) -> Result<Json<BundleConfig>, ApiError> {
    same_id(&id, &bundle.bundle_id, "bundle_id")?;
    Ok(Json(state.engine.save_bundle(&who, bundle).await?))
}

/// `DELETE /api/bundles/{id}` (admins).
#[utoipa::path(
    delete, path = "/api/bundles/{id}", tag = "catalog",
    params(("id" = String, Path, description = "The bundle")),
    responses((status = 204, description = "Removed"), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody), (status = 409, description = "Someone acted first, or it is not in a state for this", body = ErrorBody))
)]
pub async fn remove_bundle(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AdminCaller(who): AdminCaller,
) -> Result<StatusCode, ApiError> {
    state.engine.remove_bundle(&who, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
