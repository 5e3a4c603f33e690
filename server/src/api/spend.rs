//! What a workspace spends: its monthly budgets with this month's spend.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use model::{Budget, BudgetStatus};
use serde::Deserialize;

use super::error::ErrorBody;
use super::extract::{AdminCaller, ApiJson, ApiQuery, Caller};
use super::ApiError;
use crate::router::AppState;

/// `GET /api/budgets`: the workspace's budgets, each with this month's spend.
#[utoipa::path(
    get, path = "/api/budgets", tag = "spend",
    responses((status = 200, body = Vec<BudgetStatus>))
)]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<BudgetStatus>>, ApiError> {
    Ok(Json(state.engine.budgets_of(&who).await?))
}

/// `PUT /api/budgets` (admins): sets or changes a monthly budget, for one
/// connector (in the unit it is priced in; `unit` may be left empty) or,
/// without `connector_id`, for every connector priced in `unit`. A fire
/// that would pass it does not go out: the chain walks on, and the chip
/// says which budget is spent.
#[utoipa::path(
    put, path = "/api/budgets", tag = "spend",
    request_body = Budget,
    responses((status = 200, body = BudgetStatus), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "No such connector in the caller's workspace", body = ErrorBody))
)]
pub async fn set(
    State(state): State<AppState>,
    AdminCaller(who): AdminCaller,
    ApiJson(budget): ApiJson<Budget>,
) -> Result<Json<BudgetStatus>, ApiError> {
    Ok(Json(state.engine.set_budget(&who, budget).await?))
}

/// Which budget to remove.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct WhichBudget {
    /// The connector's budget; absent: the one for every connector in `unit`.
    #[serde(default)]
    pub connector_id: Option<String>,
    pub unit: String,
}

/// `DELETE /api/budgets?connector_id=...&unit=...` (admins).
#[utoipa::path(
    delete, path = "/api/budgets", tag = "spend",
    params(WhichBudget),
    responses((status = 204, description = "Removed"), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "No such budget", body = ErrorBody))
)]
pub async fn remove(
    State(state): State<AppState>,
    AdminCaller(who): AdminCaller,
    ApiQuery(which): ApiQuery<WhichBudget>,
) -> Result<StatusCode, ApiError> {
    state
        .engine
        .remove_budget(&who, which.connector_id.as_deref(), &which.unit)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
