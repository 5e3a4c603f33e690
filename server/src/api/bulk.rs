//! Decisions in bulk through the REST door: preview, decide, undo.

use axum::extract::{Path, State};
use axum::Json;
use model::{BulkExpect, BulkOutcome, BulkPreview, BulkSelection, TriageVerb};
use serde::Deserialize;

use super::error::ErrorBody;
use super::extract::{ApiJson, Caller};
use super::ApiError;
use crate::router::AppState;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkAsk {
    pub selection: BulkSelection,
    /// accept-canonical, accept-context or discard.
    pub verb: TriageVerb,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkBody {
    pub selection: BulkSelection,
    pub verb: TriageVerb,
    /// The items to decide on, each at the version the preview listed.
    pub expect: Vec<BulkExpect>,
}

/// `POST /api/record-sets/{id}/bulk-triage/preview`: every untriaged item
/// the selection takes, with the version a decision will expect.
#[utoipa::path(
    post, path = "/api/record-sets/{id}/bulk-triage/preview", tag = "records",
    params(("id" = i64, Path, description = "The record set")),
    request_body = BulkAsk,
    responses((status = 200, body = BulkPreview), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn preview(
    State(state): State<AppState>,
    Path(set_id): Path<i64>,
    Caller(who): Caller,
    ApiJson(ask): ApiJson<BulkAsk>,
) -> Result<Json<BulkPreview>, ApiError> {
    Ok(Json(
        state
            .engine
            .bulk_preview(&who, set_id, ask.selection, ask.verb)
            .await?,
    ))
}

/// `POST /api/record-sets/{id}/bulk-triage`: decides the verb on each
/// expected item, recorded with who and when as one batch; an item someone
/// else decided on since the preview is skipped and named.
#[utoipa::path(
    post, path = "/api/record-sets/{id}/bulk-triage", tag = "records",
    params(("id" = i64, Path, description = "The record set")),
    request_body = BulkBody,
    responses((status = 200, body = BulkOutcome), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody), (status = 413, description = "More items than one decision takes", body = ErrorBody))
)]
pub async fn decide(
    State(state): State<AppState>,
    Path(set_id): Path<i64>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<BulkBody>,
) -> Result<Json<BulkOutcome>, ApiError> {
    Ok(Json(
        state
            .engine
            .bulk_triage(&who, set_id, (body.selection, body.verb), &body.expect)
            .await?,
    ))
}

/// `POST /api/bulk-triage/{batch}/undo`: takes a bulk decision back as one
/// step; items someone decided on since are skipped and named.
#[utoipa::path(
    post, path = "/api/bulk-triage/{batch}/undo", tag = "records",
    params(("batch" = i64, Path, description = "The bulk decision")),
    responses((status = 200, body = BulkOutcome), (status = 404, description = "Not in the caller's workspace", body = ErrorBody), (status = 409, description = "Already undone", body = ErrorBody))
)]
pub async fn undo(
    State(state): State<AppState>,
    Path(batch_id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<BulkOutcome>, ApiError> {
    Ok(Json(state.engine.undo_bulk(&who, batch_id).await?))
}
