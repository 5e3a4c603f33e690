//! Manifest connectors of the caller's workspace: list, check and
//! test-fire, save, remove.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use model::{ConnectorInfo, ManifestFormat, ManifestTest, SavedManifest, TestReport};
use serde::Deserialize;

use super::error::ErrorBody;
use super::extract::{AdminCaller, ApiBytes, ApiQuery, Caller};
use super::ApiError;
use crate::router::AppState;

/// The manifest in a request body: TOML sent as `application/toml`, or JSON
/// as `application/json`.
fn manifest_body(body: &ApiBytes) -> Result<(String, ManifestFormat), ApiError> {
    if body.is_blank() {
        return Err(ApiError::invalid(
            "request body: send the manifest (TOML as application/toml, or JSON as application/json)"
                .to_owned(),
        ));
    }
    let format = match body.media_type(&["application/toml", "application/json"])? {
        "application/json" => ManifestFormat::Json,
        _ => ManifestFormat::Toml,
    };
    let text = std::str::from_utf8(&body.bytes).map_err(|_| {
        ApiError::invalid("request body: the manifest is not UTF-8 text".to_owned())
    })?;
    Ok((text.to_owned(), format))
}

/// `GET /api/manifests`: the workspace's saved manifests, as written, each
/// with why it is not serving when it is not.
#[utoipa::path(
    get, path = "/api/manifests", tag = "manifests",
    responses((status = 200, body = Vec<SavedManifest>))
)]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<SavedManifest>>, ApiError> {
    Ok(Json(state.engine.manifests(&who).await?))
}

/// `POST /api/manifests` with the manifest as the body (admins): checked,
/// saved for the workspace and registered at once; the same id again
/// replaces it. 422 lists every mistake with its field.
#[utoipa::path(
    post, path = "/api/manifests", tag = "manifests",
    request_body(content((String = "application/toml"), (String = "application/json")), description = "The manifest"),
    responses((status = 201, body = ConnectorInfo), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 409, description = "Someone acted first, or it is not in a state for this", body = ErrorBody), (status = 413, description = "The body is over the limit", body = ErrorBody), (status = 415, description = "The body is not in a media type this route takes", body = ErrorBody), (status = 422, description = "The manifest does not check: every mistake in problems", body = ErrorBody))
)]
pub async fn save(
    State(state): State<AppState>,
    AdminCaller(who): AdminCaller,
    body: ApiBytes,
) -> Result<(StatusCode, Json<ConnectorInfo>), ApiError> {
    let (text, format) = manifest_body(&body)?;
    let info = state.engine.save_manifest(&who, &text, format).await?;
    Ok((StatusCode::CREATED, Json(info)))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TestParams {
    pub query: String,
    #[serde(default)]
    pub record: Option<i64>,
}

/// `POST /api/manifests/test?query=...[&record=ID]` with the manifest as the
/// body (admins): fires it once without saving; its mistakes, or what it
/// found and how its answer is classified.
#[utoipa::path(
    post, path = "/api/manifests/test", tag = "manifests",
    params(TestParams),
    request_body(content((String = "application/toml"), (String = "application/json")), description = "The manifest"),
    responses((status = 200, body = TestReport), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody), (status = 413, description = "The body is over the limit", body = ErrorBody), (status = 415, description = "The body is not in a media type this route takes", body = ErrorBody), (status = 422, description = "The manifest does not check: every mistake in problems", body = ErrorBody))
)]
pub async fn test(
    State(state): State<AppState>,
    AdminCaller(who): AdminCaller,
    ApiQuery(params): ApiQuery<TestParams>,
    body: ApiBytes,
) -> Result<Json<TestReport>, ApiError> {
    let (text, format) = manifest_body(&body)?;
    let test = ManifestTest {
        text,
        format,
        query: params.query,
        record_id: params.record,
    };
    Ok(Json(state.engine.test_manifest(&who, &test).await?))
}

/// `DELETE /api/manifests/{id}` (admins): unregistered at once.
#[utoipa::path(
    delete, path = "/api/manifests/{id}", tag = "manifests",
    params(("id" = String, Path, description = "The manifest connector")),
    responses((status = 204, description = "Removed"), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn remove(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AdminCaller(who): AdminCaller,
) -> Result<StatusCode, ApiError> {
    state.engine.remove_manifest(&who, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
