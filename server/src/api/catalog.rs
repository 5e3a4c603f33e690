//! Capabilities, connectors, packs and bundles.

use axum::extract::{Path, State};
use axum::Json;
use engine::packs::{BundleConfig, PackConfig};
use engine::store::StatusChange;
use model::{Capability, ConnectorInfo};
use serde::{Deserialize, Serialize};

use super::extract::{AdminCaller, ApiBytes};
use super::ApiError;
use crate::router::AppState;

#[derive(Serialize)]
pub struct CapabilityView {
    pub name: Capability,
    pub label: String,
    pub builtin: bool,
    /// Connectors serving it (any status).
    pub connectors: usize,
}

/// `GET /api/capabilities`
pub async fn capabilities(State(state): State<AppState>) -> Json<Vec<CapabilityView>> {
    let registry = &state.engine.registry;
    Json(
        registry
            .capabilities()
            .into_iter()
            .map(|cap| CapabilityView {
                label: cap.label().to_owned(),
                builtin: matches!(cap, Capability::Builtin(_)),
                connectors: registry.serving(&cap).len(),
                name: cap,
            })
            .collect(),
    )
}

/// A connector with today's use.
#[derive(Serialize)]
pub struct ConnectorView {
    #[serde(flatten)]
    pub info: ConnectorInfo,
    pub fires_today: i64,
}

/// `GET /api/connectors`
pub async fn connectors(
    State(state): State<AppState>,
) -> Result<Json<Vec<ConnectorView>>, ApiError> {
    let mut out = Vec::new();
    for handle in state.engine.registry.all() {
        out.push(ConnectorView {
            fires_today: state
                .engine
                .store
                .fires_today(&handle.registration.id)
                .await?,
            info: handle.info(),
        });
    }
    Ok(Json(out))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DisableBody {
    #[serde(default)]
    pub reason: String,
}

/// `POST /api/connectors/{id}/disable` with an optional `{"reason": "..."}`
/// (admins).
pub async fn disable(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AdminCaller(who): AdminCaller,
    body: ApiBytes,
) -> Result<Json<ConnectorInfo>, ApiError> {
    let reason = body.json_or_default::<DisableBody>()?.reason;
    state
        .engine
        .registry
        .disable(&id, &who.email, &reason)
        .await?;
    info(&state, &id)
}

/// `POST /api/connectors/{id}/enable` (admins)
pub async fn enable(
    State(state): State<AppState>,
    Path(id): Path<String>,
    AdminCaller(who): AdminCaller,
) -> Result<Json<ConnectorInfo>, ApiError> {
    state.engine.registry.enable(&id, &who.email).await?;
    info(&state, &id)
}

/// `GET /api/connectors/{id}/audit`: status changes, newest first.
pub async fn audit(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<StatusChange>>, ApiError> {
    if state.engine.registry.by_id(&id).is_none() {
        return Err(ApiError::NotFound(format!(
            "no connector {id:?} is registered"
        )));
    }
    Ok(Json(state.engine.store.connector_status_log(&id).await?))
}

fn info(state: &AppState, id: &str) -> Result<Json<ConnectorInfo>, ApiError> {
    state
        .engine
        .registry
        .by_id(id)
        .map(|h| Json(h.info()))
        .ok_or_else(|| ApiError::NotFound(format!("no connector {id:?} is registered")))
}

/// `GET /api/packs`
pub async fn packs(State(state): State<AppState>) -> Json<Vec<PackConfig>> {
    Json(state.engine.catalog().packs().to_vec())
}

/// `GET /api/bundles`
pub async fn bundles(State(state): State<AppState>) -> Json<Vec<BundleConfig>> {
    Json(state.engine.catalog().bundles().to_vec())
}
