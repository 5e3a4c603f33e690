//! Fan-out jobs over a record set.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use model::{Envelope, EnvelopeStatus, Job, JobStatus};
use serde::Deserialize;

use super::extract::{ApiBytes, Caller};
use super::ApiError;
use crate::router::AppState;

/// A fan-out this small is awaited in the request and answered `completed`.
const INLINE_TASKS: u64 = 4;
/// How long an inline fan-out may hold the request before answering `pending`.
const INLINE_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FanoutBody {
    /// Packs to run; the set's whole bundle when absent.
    #[serde(default)]
    pub packs: Option<Vec<String>>,
}

fn envelope(job: Job) -> Envelope<()> {
    Envelope {
        status: EnvelopeStatus::of_job(job.status),
        job_id: Some(job.id),
        progress: job.progress,
        results: Vec::new(),
        job: Some(job),
    }
}

/// `POST /api/record-sets/{id}/fanout` `{"packs": [...] optional}`: runs the
/// packs over every record as a job. The envelope is `pending` with the job id
/// (poll `GET /api/jobs/{id}` or watch the events), or `completed` when the
/// work was small enough to finish in the request.
pub async fn fanout(
    State(state): State<AppState>,
    Path(set_id): Path<i64>,
    Caller(who): Caller,
    body: ApiBytes,
) -> Result<(StatusCode, Json<Envelope<()>>), ApiError> {
    let body: FanoutBody = body.json_or_default()?;
    let job = state.engine.start_fanout(&who, set_id, body.packs).await?;
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
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Envelope<()>>, ApiError> {
    Ok(Json(envelope(state.engine.job_of(&who, id).await?)))
}

/// `POST /api/jobs/{id}/cancel`
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Envelope<()>>, ApiError> {
    Ok(Json(envelope(state.engine.cancel_job(&who, id).await?)))
}
