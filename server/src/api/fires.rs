//! Fires, their history and items, triage, and per-record overrides.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use model::{Envelope, FireReport, HistoryEntry, Item, TriageVerb};
use serde::{Deserialize, Serialize};

use super::error::ErrorBody;
use super::extract::{ApiJson, Caller};
use super::ApiError;
use crate::router::AppState;
use engine::ops::FireChoice;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FireBody {
    pub pack: String,
    /// Fire exactly this connector.
    #[serde(default)]
    pub connector: Option<String>,
    /// Spend past the record's daily cap this time (the answer to a 402
    /// `spend_more`).
    #[serde(default)]
    pub spend_more: bool,
}

/// `POST /api/records/{id}/fire` `{"pack": "...", "connector": optional,
/// "spend_more": optional}`: the answer is the uniform envelope once the
/// fire ends (`cancelled` when a person cancelled it, `failed` with each
/// connector's reason when every connector tried failed); 402 `spend_more`
/// with the question when the record's daily cap stopped it before anything
/// went out (send `"spend_more": true` to spend past it); 429 when daily
/// caps stopped everything the chain could fire. The fire is the engine's:
/// a client that disconnects changes nothing about it.
#[utoipa::path(
    post, path = "/api/records/{id}/fire", tag = "records",
    params(("id" = i64, Path, description = "The record")),
    request_body = FireBody,
    responses((status = 200, body = Envelope<FireReport>), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 402, description = "The record's daily cap: `spend_more` holds the question", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody), (status = 429, description = "A cap or limit stops it for now", body = ErrorBody))
)]
pub async fn fire(
    State(state): State<AppState>,
    Path(record_id): Path<i64>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<FireBody>,
) -> Result<Json<Envelope<FireReport>>, ApiError> {
    Ok(Json(
        state
            .engine
            .fire_pack_envelope(
                &who,
                record_id,
                &body.pack,
                FireChoice {
                    connector: body.connector.as_deref(),
                    spend_more: body.spend_more,
                },
            )
            .await?,
    ))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Cancelled {
    pub fire_id: i64,
    pub cancelled: bool,
}

/// `POST /api/fires/{id}/cancel`: asks a fire in flight to stop. The answer
/// comes at once; the fire's end follows as its walk stops (its own
/// `POST /api/records/{id}/fire` answers `cancelled`, and its viewers get
/// the attempt's end): read the record's history or chips after that, not
/// after this answer.
#[utoipa::path(
    post, path = "/api/fires/{id}/cancel", tag = "records",
    params(("id" = i64, Path, description = "The fire")),
    responses((status = 200, body = Cancelled), (status = 404, description = "Not in the caller's workspace", body = ErrorBody), (status = 409, description = "Someone acted first, or it is not in a state for this", body = ErrorBody))
)]
pub async fn cancel(
    State(state): State<AppState>,
    Path(fire_id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Cancelled>, ApiError> {
    state.engine.cancel_fire(&who, fire_id).await?;
    Ok(Json(Cancelled {
        fire_id,
        cancelled: true,
    }))
}

/// `GET /api/records/{id}/history`: every attempt, newest first.
#[utoipa::path(
    get, path = "/api/records/{id}/history", tag = "records",
    params(("id" = i64, Path, description = "The record")),
    responses((status = 200, body = Vec<HistoryEntry>), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn history(
    State(state): State<AppState>,
    Path(record_id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Vec<HistoryEntry>>, ApiError> {
    Ok(Json(state.engine.record_history(&who, record_id).await?))
}

/// `GET /api/records/{id}/items`: the curated layer of one record.
#[utoipa::path(
    get, path = "/api/records/{id}/items", tag = "records",
    params(("id" = i64, Path, description = "The record")),
    responses((status = 200, body = Vec<Item>), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn items(
    State(state): State<AppState>,
    Path(record_id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Vec<Item>>, ApiError> {
    Ok(Json(state.engine.record_items(&who, record_id).await?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TriageBody {
    pub verb: TriageVerb,
    /// The item version the person saw.
    pub version: i64,
}

/// `POST /api/items/{id}/triage` `{"verb": "accept-canonical", "version": 1}`.
/// A stale version is refused with 409 and the item as it is now.
#[utoipa::path(
    post, path = "/api/items/{id}/triage", tag = "records",
    params(("id" = i64, Path, description = "The item")),
    request_body = TriageBody,
    responses((status = 200, body = Item), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody), (status = 409, description = "Someone acted first, or it is not in a state for this", body = ErrorBody))
)]
pub async fn triage(
    State(state): State<AppState>,
    Path(item_id): Path<i64>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<TriageBody>,
) -> Result<Json<Item>, ApiError> {
    Ok(Json(
        state
            .engine
            .triage_item(&who, item_id, body.verb, body.version)
            .await?,
    ))
}

/// `GET /api/records/{id}/menu/{pack}`: the chip's connector menu.
#[utoipa::path(
    get, path = "/api/records/{id}/menu/{pack}", tag = "records",
    params(("id" = i64, Path, description = "The record"), ("pack" = String, Path, description = "The pack")),
    responses((status = 200, body = model::ConnectorMenu), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn menu(
    State(state): State<AppState>,
    Path((record_id, pack_id)): Path<(i64, String)>,
    Caller(who): Caller,
) -> Result<Json<model::ConnectorMenu>, ApiError> {
    Ok(Json(
        state.engine.record_menu(&who, record_id, &pack_id).await?,
    ))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OverrideBody {
    /// The connector this record starts with for the pack; `null` clears it.
    pub connector: Option<String>,
}

/// `PUT /api/records/{id}/overrides/{pack}` `{"connector": "serpapi" | null}`
#[utoipa::path(
    put, path = "/api/records/{id}/overrides/{pack}", tag = "records",
    params(("id" = i64, Path, description = "The record"), ("pack" = String, Path, description = "The pack")),
    request_body = OverrideBody,
    responses((status = 204, description = "Set"), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn set_override(
    State(state): State<AppState>,
    Path((record_id, pack_id)): Path<(i64, String)>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<OverrideBody>,
) -> Result<StatusCode, ApiError> {
    state
        .engine
        .set_start_with(&who, record_id, &pack_id, body.connector.as_deref())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
