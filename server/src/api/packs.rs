//! Packs and bundles of the caller's workspace: the shipped catalogue with
//! its own laid over it; admins save and remove their own.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use engine::packs::{BundleConfig, PackConfig};

use super::error::ErrorBody;
use super::extract::{AdminCaller, ApiJson, Caller};
use super::ApiError;
use crate::router::AppState;

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
    let catalog = state.engine.catalog_of(&who).await?;
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
    let catalog = state.engine.catalog_of(&who).await?;
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
