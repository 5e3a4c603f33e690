//! What a workspace spends: its monthly budgets with this month's spend,
//! its caps on what one record may cost a day, a month's spend broken
//! down, and every billed attempt as CSV.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use engine::store::ChargeRow;
use model::{Budget, BudgetStatus, RecordCap, RecordCapStatus, SpendReport};
use serde::Deserialize;

use super::error::ErrorBody;
use super::extract::{AdminCaller, ApiJson, ApiQuery, Caller};
use super::ApiError;
use crate::router::AppState;
use engine::ops::OpError;

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
#[into_params(parameter_in = Query)]
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

/// `GET /api/spend/unanswered`: the workspace's calls that went out and
/// got no answer (outcome `unknown`: timed out, or the process making them
/// stopped), newest first. The provider may have done them and billed
/// them; none is fired again by itself.
#[utoipa::path(
    get, path = "/api/spend/unanswered", tag = "spend",
    responses((status = 200, body = Vec<model::Unanswered>))
)]
pub async fn unanswered(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<model::Unanswered>>, ApiError> {
    Ok(Json(state.engine.unanswered_calls(&who).await?))
}

/// `GET /api/record-caps`: what one record may cost a UTC day, per unit.
#[utoipa::path(
    get, path = "/api/record-caps", tag = "spend",
    responses((status = 200, body = Vec<RecordCapStatus>))
)]
pub async fn record_caps(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<RecordCapStatus>>, ApiError> {
    Ok(Json(state.engine.record_caps_of(&who).await?))
}

/// `PUT /api/record-caps` (admins) `{"unit": "USD", "daily_limit": 0.5}`:
/// sets what one record may cost a UTC day in a unit. A fire of a record
/// that would pass it does not spend: it answers 402 `spend_more` with the
/// question when nothing else fired, and firing again with
/// `"spend_more": true` lets it past.
#[utoipa::path(
    put, path = "/api/record-caps", tag = "spend",
    request_body = RecordCap,
    responses((status = 200, body = RecordCapStatus), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody))
)]
pub async fn set_record_cap(
    State(state): State<AppState>,
    AdminCaller(who): AdminCaller,
    ApiJson(cap): ApiJson<RecordCap>,
) -> Result<Json<RecordCapStatus>, ApiError> {
    Ok(Json(state.engine.set_record_cap(&who, cap).await?))
}

/// Which record cap to remove.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WhichUnit {
    pub unit: String,
}

/// `DELETE /api/record-caps?unit=...` (admins).
#[utoipa::path(
    delete, path = "/api/record-caps", tag = "spend",
    params(WhichUnit),
    responses((status = 204, description = "Removed"), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "No cap in that unit", body = ErrorBody))
)]
pub async fn remove_record_cap(
    State(state): State<AppState>,
    AdminCaller(who): AdminCaller,
    ApiQuery(which): ApiQuery<WhichUnit>,
) -> Result<StatusCode, ApiError> {
    state.engine.remove_record_cap(&who, &which.unit).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Which month.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct MonthParams {
    /// `YYYY-MM` (UTC); this month when absent.
    #[serde(default)]
    pub month: Option<String>,
}

/// `GET /api/spend?month=YYYY-MM`: what the workspace spent that month, per
/// unit, by whose key, day, connector, person and record set.
#[utoipa::path(
    get, path = "/api/spend", tag = "spend",
    params(MonthParams),
    responses((status = 200, body = SpendReport), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody))
)]
pub async fn report(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiQuery(params): ApiQuery<MonthParams>,
) -> Result<Json<SpendReport>, ApiError> {
    Ok(Json(
        state
            .engine
            .spend_report(&who, params.month.as_deref())
            .await?,
    ))
}

/// `GET /api/spend/export?month=YYYY-MM`: every billed attempt of that
/// month as CSV, oldest first: when, what it was for, which connector, how
/// it ended, what it cost, whose key paid and who fired it.
#[utoipa::path(
    get, path = "/api/spend/export", tag = "spend",
    params(MonthParams),
    responses((status = 200, description = "One row per billed attempt", content_type = "text/csv", body = String), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody))
)]
pub async fn export(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiQuery(params): ApiQuery<MonthParams>,
) -> Result<Response, ApiError> {
    let (month, rows) = state
        .engine
        .charges_of(&who, params.month.as_deref())
        .await?;
    let csv = to_csv(&rows).map_err(|e| ApiError::from(OpError::Internal(e.into())))?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"spend-{month}.csv\""),
            ),
        ],
        csv,
    )
        .into_response())
}

/// The CSV of billed attempts; every cell that came from a person or a
/// provider is made safe to open in a spreadsheet.
fn to_csv(rows: &[ChargeRow]) -> Result<String, csv::Error> {
    use super::record_sets::csv_safe;
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record([
        "when",
        "record_set",
        "record",
        "pack",
        "capability",
        "call",
        "connector",
        "outcome",
        "cost",
        "unit",
        "paid_by",
        "person",
        "job",
    ])?;
    for r in rows {
        let id = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
        out.write_record([
            engine::time::utc_timestamp(r.at),
            csv_safe(r.record_set.as_ref().map_or("", |(_, name)| name)),
            csv_safe(r.record.as_ref().map_or("", |(_, name)| name)),
            csv_safe(r.pack_id.as_deref().unwrap_or_default()),
            csv_safe(&r.capability),
            id(r.call_id),
            csv_safe(&r.connector_id),
            csv_safe(&r.outcome),
            r.amount.to_string(),
            csv_safe(&r.unit),
            r.paid_by.name().to_owned(),
            csv_safe(&r.person),
            id(r.job_id),
        ])?;
    }
    let bytes = out.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
