//! Fan-out jobs over a record set.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use model::{Envelope, EnvelopeStatus, Job, JobStatus};
use serde::Deserialize;

use engine::store::Owned;

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
    state
        .engine
        .authorize(&who, Owned::RecordSet(set_id))
        .await?;
    let body: FanoutBody = body.json_or_default()?;
    let set = state.engine.store.record_set(set_id).await?;
    let packs: Vec<String> = match body.packs {
        Some(packs) => {
            if packs.is_empty() {
                return Err(ApiError::BadRequest(
                    "packs: name at least one pack, or leave it out".into(),
                ));
            }
            let catalog = state.engine.catalog_in(set.workspace_id).await?;
            if let Some(bad) = packs.iter().find(|p| catalog.pack(p).is_none()) {
                return Err(ApiError::BadRequest(format!("packs: no pack {bad:?}")));
            }
            let mut unique = Vec::new();
            for p in packs {
                if !unique.contains(&p) {
                    unique.push(p);
                }
            }
            unique
        }
        None => state.engine.bundle_pack_ids(&set).await?,
    };
    if packs.is_empty() {
        return Err(ApiError::BadRequest(format!(
            "the bundle {:?} has no packs",
            set.bundle_id
        )));
    }
    let job = state.engine.jobs.start(set_id, &packs, &who.email).await?;
    if job.progress.total <= INLINE_TASKS {
        let _ = tokio::time::timeout(INLINE_WAIT, state.engine.jobs.wait(job.id)).await;
        let job = state.engine.store.job(job.id).await?;
        let status = if job.status == JobStatus::Running {
            StatusCode::ACCEPTED
        } else {
            StatusCode::OK
        };
        return Ok((status, Json(envelope(job))));
    }
    Ok((StatusCode::ACCEPTED, Json(envelope(job))))
}

/// `GET /api/jobs/{id}`
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Envelope<()>>, ApiError> {
    state.engine.authorize(&who, Owned::Job(id)).await?;
    Ok(Json(envelope(state.engine.store.job(id).await?)))
}

/// `POST /api/jobs/{id}/cancel`
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Envelope<()>>, ApiError> {
    state.engine.authorize(&who, Owned::Job(id)).await?;
    Ok(Json(envelope(state.engine.jobs.cancel(id).await?)))
}
