//! Fires, their history and items, triage, and per-record overrides.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use engine::dispatch::FireRequest;
use model::{Envelope, EnvelopeStatus, FireReport, HistoryEntry, Item, Progress, TriageVerb};
use serde::{Deserialize, Serialize};

use engine::store::{Owned, Principal};

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

/// Whether the caller's workspace has the pack (shipped or its own).
async fn has_pack(state: &AppState, who: &Principal, pack_id: &str) -> Result<bool, ApiError> {
    let catalog = state.engine.catalog_in(Some(who.workspace_id)).await?;
    Ok(catalog.pack(pack_id).is_some())
}

/// `POST /api/records/{id}/fire` `{"pack": "...", "connector": optional}`:
/// the answer is the uniform envelope once the fire ends (`cancelled` when a
/// person cancelled it). The fire is the engine's: a client that disconnects
/// changes nothing about it.
pub async fn fire(
    State(state): State<AppState>,
    Path(record_id): Path<i64>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<FireBody>,
) -> Result<Json<Envelope<FireReport>>, ApiError> {
    state
        .engine
        .authorize(&who, Owned::Record(record_id))
        .await?;
    // An unknown pack is the dispatcher's 400 ("pack: no pack ...").
    let report = state
        .engine
        .dispatcher
        .fire(FireRequest::by_person(
            record_id,
            body.pack,
            body.connector.filter(|c| !c.trim().is_empty()),
            who.email,
        ))
        .await?;
    // Nothing could fire because caps are spent: say so with 429, not 200.
    let capped: Vec<&str> = report
        .skipped
        .iter()
        .filter(|s| s.reason.starts_with("daily cap"))
        .map(|s| s.connector_id.as_str())
        .collect();
    if report.attempts.is_empty() && !capped.is_empty() {
        return Err(ApiError::TooManyRequests(format!(
            "the daily cap of {} is reached; nothing else in the chain could fire",
            capped.join(", ")
        )));
    }
    let cancelled = report
        .attempts
        .last()
        .is_some_and(|a| a.outcome == Some(model::FireOutcome::Cancelled));
    Ok(Json(Envelope {
        status: if cancelled {
            EnvelopeStatus::Cancelled
        } else {
            EnvelopeStatus::Completed
        },
        job_id: None,
        progress: Progress { done: 1, total: 1 },
        results: vec![report],
        job: None,
    }))
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
    state.engine.authorize(&who, Owned::Fire(fire_id)).await?;
    if state.engine.dispatcher.cancel(fire_id) {
        return Ok(Json(Cancelled {
            fire_id,
            cancelled: true,
        }));
    }
    let (status, _) = state.engine.store.fire_status(fire_id).await?;
    Err(ApiError::Conflict {
        detail: format!("fire {fire_id} is not in flight here (it is {status})"),
        current: None,
    })
}

/// `GET /api/records/{id}/history`: every attempt, newest first.
pub async fn history(
    State(state): State<AppState>,
    Path(record_id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Vec<HistoryEntry>>, ApiError> {
    state
        .engine
        .authorize(&who, Owned::Record(record_id))
        .await?;
    Ok(Json(state.engine.store.history(record_id).await?))
}

/// `GET /api/records/{id}/items`: the curated layer of one record.
pub async fn items(
    State(state): State<AppState>,
    Path(record_id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Vec<Item>>, ApiError> {
    state
        .engine
        .authorize(&who, Owned::Record(record_id))
        .await?;
    Ok(Json(state.engine.store.items(record_id).await?))
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
    state.engine.authorize(&who, Owned::Item(item_id)).await?;
    let item = state
        .engine
        .triage(item_id, body.verb, body.version, &who.email)
        .await?;
    Ok(Json(item))
}

/// `GET /api/records/{id}/menu/{pack}`: the chip's connector menu.
pub async fn menu(
    State(state): State<AppState>,
    Path((record_id, pack_id)): Path<(i64, String)>,
    Caller(who): Caller,
) -> Result<Json<model::ConnectorMenu>, ApiError> {
    state
        .engine
        .authorize(&who, Owned::Record(record_id))
        .await?;
    if !has_pack(&state, &who, &pack_id).await? {
        return Err(ApiError::NotFound(format!("no pack {pack_id:?}")));
    }
    Ok(Json(
        state.engine.connector_menu(record_id, &pack_id).await?,
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
        .authorize(&who, Owned::Record(record_id))
        .await?;
    if !has_pack(&state, &who, &pack_id).await? {
        return Err(ApiError::NotFound(format!("no pack {pack_id:?}")));
    }
    if let Some(id) = &body.connector {
        if state
            .engine
            .registry
            .by_id_in(id, Some(who.workspace_id))
            .is_none()
        {
            return Err(ApiError::BadRequest(format!(
                "connector: no connector {id:?} is registered"
            )));
        }
    }
    state
        .engine
        .store
        .set_record_override(record_id, &pack_id, body.connector.as_deref(), &who.email)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
