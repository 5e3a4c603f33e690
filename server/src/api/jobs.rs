//! Fan-out jobs over a record set.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use model::{Envelope, EnvelopeStatus, FireReport, Job, JobStatus};
use serde::Deserialize;

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

/// A job's envelope. Its results stay empty: each fire's report is on its
/// record (history, items) and in the events.
fn envelope(job: Job) -> Envelope<FireReport> {
    Envelope {
        status: EnvelopeStatus::of_job(job.status),
        job_id: Some(job.id),
        progress: job.progress,
        results: Vec::new(),
        error: None,
        job: Some(job),
    }
}

/// `POST /api/record-sets/{id}/fanout` `{"packs": [...] optional}`: runs the
/// packs over every record as a job. The envelope is `pending` with the job id
/// (poll `GET /api/jobs/{id}` or watch the events), or `completed` when the
/// work was small enough to finish in the request.
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
) -> Result<(StatusCode, Json<Envelope<FireReport>>), ApiError> {
    let body: FanoutBody = body.json_or_default()?;
    let job = state
        .engine
        .start_fanout(&who, set_id, body.packs, body.paid_per_record)
        .await?;
    if job.progress.total > INLINE_TASKS {
        return Ok((StatusCode::ACCEPTED, Json(envelope(job))));
    }
    let job = state.engine.job_after(&who, job.id, INLINE_WAIT).await?;
    let status = if job.status == JobStatus::Running {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(envelope(job))))
}

/// `GET /api/jobs/{id}`
#[utoipa::path(
    get, path = "/api/jobs/{id}", tag = "jobs",
    params(("id" = i64, Path, description = "The job")),
    responses((status = 200, body = Envelope<FireReport>), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Envelope<FireReport>>, ApiError> {
    Ok(Json(envelope(state.engine.job_of(&who, id).await?)))
}

/// `POST /api/jobs/{id}/cancel`
#[utoipa::path(
    post, path = "/api/jobs/{id}/cancel", tag = "jobs",
    params(("id" = i64, Path, description = "The job")),
    responses((status = 200, body = Envelope<FireReport>), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Envelope<FireReport>>, ApiError> {
    Ok(Json(envelope(state.engine.cancel_job(&who, id).await?)))
}
