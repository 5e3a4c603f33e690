//! Fan-out jobs over a record set.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use model::{Envelope, EnvelopeStatus, FireReport, JobEnvelope};
use serde::{Deserialize, Serialize};

use super::error::ErrorBody;
use super::extract::{ApiBytes, Caller};
use super::ApiError;
use crate::router::AppState;

/// A fan-out this small is awaited in the request and answered `completed`.
const INLINE_TASKS: u64 = 4;
/// How long an inline fan-out may hold the request before answering `pending`.
const INLINE_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FanoutBody {
    /// Packs to run; the set's whole bundle when absent.
    #[serde(default)]
    pub packs: Option<Vec<String>>,
    /// At most this many fires of paid connectors per record (a connector
    /// on the paid tier or with a price); past it, a record's chain walks on
    /// to free ones.
    #[serde(default)]
    pub paid_per_record: Option<u32>,
}

/// An envelope as a response: 202 while the work carries on, with
/// `Location` where to read it (`/api/jobs/{id}`), 200 once it ended.
pub(super) fn answered<T: Serialize>(envelope: Envelope<T>) -> Response {
    match (envelope.status, envelope.job_id) {
        (EnvelopeStatus::Pending, Some(id)) => (
            StatusCode::ACCEPTED,
            [(header::LOCATION, format!("/api/jobs/{id}"))],
            Json(envelope),
        )
            .into_response(),
        (EnvelopeStatus::Pending, None) => (StatusCode::ACCEPTED, Json(envelope)).into_response(),
        _ => Json(envelope).into_response(),
    }
}

/// `POST /api/record-sets/{id}/fanout` `{"packs": [...] optional}`: runs the
/// packs over every record as a job. The envelope is `pending` with the job id
/// and `Location` (poll `GET /api/jobs/{id}` or watch the events), or
/// `completed` when the work was small enough to finish in the request.
#[utoipa::path(
    post, path = "/api/record-sets/{id}/fanout", tag = "jobs",
    params(("id" = i64, Path, description = "The record set")),
    request_body(content = Option<FanoutBody>, description = "Packs to run; the bundle when absent"),
    responses((status = 200, description = "Small enough to finish in the request", body = Envelope<FireReport>), (status = 202, description = "Running; poll the job or watch the events", body = Envelope<FireReport>), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody), (status = 429, description = "The workspace has as many fan-outs running as it may; Retry-After says when to ask again", body = ErrorBody))
)]
pub async fn fanout(
    State(state): State<AppState>,
    Path(set_id): Path<i64>,
    Caller(who): Caller,
    body: ApiBytes,
) -> Result<Response, ApiError> {
    let body: FanoutBody = body.json_or_default()?;
    let mut job = state
        .engine
        .start_fanout(&who, set_id, body.packs, body.paid_per_record)
        .await?;
    if job.progress.total <= INLINE_TASKS {
        job = state.engine.job_after(&who, job.id, INLINE_WAIT).await?;
    }
    Ok(answered(Envelope::of_job(job)))
}

/// `GET /api/jobs/{id}`: any pending envelope's `job_id`, a fan-out's or
/// a capability call's (`kind` says which).
#[utoipa::path(
    get, path = "/api/jobs/{id}", tag = "jobs",
    params(("id" = i64, Path, description = "The job: an envelope's job_id")),
    responses((status = 200, body = JobEnvelope), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<JobEnvelope>, ApiError> {
    Ok(Json(state.engine.job_envelope(&who, id).await?))
}

/// `POST /api/jobs/{id}/cancel`: stops a fan-out or a call; what had
/// finished stays.
#[utoipa::path(
    post, path = "/api/jobs/{id}/cancel", tag = "jobs",
    params(("id" = i64, Path, description = "The job: an envelope's job_id")),
    responses((status = 200, body = JobEnvelope), (status = 404, description = "Not in the caller's workspace", body = ErrorBody), (status = 409, description = "A call that has already ended", body = ErrorBody))
)]
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<JobEnvelope>, ApiError> {
    Ok(Json(state.engine.cancel_any_job(&who, id).await?))
}
