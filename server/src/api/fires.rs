//! Fires, their history and items, triage, and per-record overrides.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use model::{Envelope, FireReport, HistoryEntry, Item, TriageVerb};
use serde::{Deserialize, Serialize};

use super::extract::{ApiJson, Caller};
use super::ApiError;
use crate::router::AppState;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FireBody {
    pub pack: String,
    /// Fire exactly this connector.
    #[serde(default)]
    pub connector: Option<String>,
}

/// `POST /api/records/{id}/fire` `{"pack": "...", "connector": optional}`:
/// the answer is the uniform envelope once the fire ends (`cancelled` when a
/// person cancelled it); 429 when daily caps stopped everything the chain
/// could fire. The fire is the engine's: a client that disconnects changes
/// nothing about it.
pub async fn fire(
    State(state): State<AppState>,
    Path(record_id): Path<i64>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<FireBody>,
) -> Result<Json<Envelope<FireReport>>, ApiError> {
    Ok(Json(
        state
            .engine
            .fire_pack_envelope(&who, record_id, &body.pack, body.connector.as_deref())
            .await?,
    ))
}

#[derive(Debug, Serialize)]
pub struct Cancelled {
    pub fire_id: i64,
    pub cancelled: bool,
}

/// `POST /api/fires/{id}/cancel`
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
pub async fn history(
    State(state): State<AppState>,
    Path(record_id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Vec<HistoryEntry>>, ApiError> {
    Ok(Json(state.engine.record_history(&who, record_id).await?))
}

/// `GET /api/records/{id}/items`: the curated layer of one record.
pub async fn items(
    State(state): State<AppState>,
    Path(record_id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Vec<Item>>, ApiError> {
    Ok(Json(state.engine.record_items(&who, record_id).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriageBody {
    pub verb: TriageVerb,
    /// The item version the person saw.
    pub version: i64,
}

/// `POST /api/items/{id}/triage` `{"verb": "accept-canonical", "version": 1}`.
/// A stale version is refused with 409 and the item as it is now.
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
pub async fn menu(
    State(state): State<AppState>,
    Path((record_id, pack_id)): Path<(i64, String)>,
    Caller(who): Caller,
) -> Result<Json<model::ConnectorMenu>, ApiError> {
    Ok(Json(
        state.engine.record_menu(&who, record_id, &pack_id).await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverrideBody {
    /// The connector this record starts with for the pack; `null` clears it.
    pub connector: Option<String>,
}

/// `PUT /api/records/{id}/overrides/{pack}` `{"connector": "serpapi" | null}`
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
