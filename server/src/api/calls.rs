//! Capability calls: a query through a capability's chain with no record,
//! answered in the envelope; a slow or asynchronous one is read again by
//! its id.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::Json;
use model::{CallAttempt, CallRequest, CallResult, Envelope};

use super::error::ErrorBody;
use super::extract::{ApiJson, Caller};
use super::jobs::answered;
use super::ApiError;
use crate::router::AppState;

/// `POST /api/capabilities/{capability}/call` `{"query": "...", "max_results"?,
/// "connector"?, "async"?}`: walks the capability's chain (cheapest first,
/// or exactly `connector`) for the query. `completed` with the results when
/// the walk ends within the inline wait; `pending` with the call's id
/// (`job_id`, and `Location`) when asked for `async` or slower: read it at
/// `GET /api/jobs/{id}` (or `GET /api/calls/{id}`). `failed` when nothing answered, `error` naming
/// each connector's reason.
#[utoipa::path(
    post, path = "/api/capabilities/{capability}/call", tag = "calls",
    params(("capability" = String, Path, description = "A capability's dotted name, e.g. search.news")),
    request_body = CallRequest,
    responses(
        (status = 200, description = "The call ended: completed, failed or cancelled", body = Envelope<CallResult>),
        (status = 202, description = "Still walking: read it again by its job_id", body = Envelope<CallResult>),
        (status = 400, description = "Bad input; the detail names the field", body = ErrorBody),
        (status = 404, description = "No such capability, or no connector serves it here", body = ErrorBody),
        (status = 429, description = "The workspace has too many calls walking; Retry-After says when to ask again", body = ErrorBody),
    )
)]
pub async fn call(
    State(state): State<AppState>,
    Path(capability): Path<String>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<CallRequest>,
) -> Result<Response, ApiError> {
    Ok(answered(
        state
            .engine
            .call_capability(&who, &capability, body)
            .await?,
    ))
}

/// `GET /api/calls/{id}`: a call as it stands, with its results once it
/// has ended (kept for a day).
#[utoipa::path(
    get, path = "/api/calls/{id}", tag = "calls",
    params(("id" = i64, Path, description = "The call (an envelope's job_id)")),
    responses(
        (status = 200, description = "The call ended", body = Envelope<CallResult>),
        (status = 202, description = "Still walking", body = Envelope<CallResult>),
        (status = 404, description = "Not in the caller's workspace", body = ErrorBody),
    )
)]
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Response, ApiError> {
    Ok(answered(state.engine.call_envelope(&who, id).await?))
}

/// `GET /api/calls/{id}/attempts`: the receipt of every attempt the call
/// made, in order.
#[utoipa::path(
    get, path = "/api/calls/{id}/attempts", tag = "calls",
    params(("id" = i64, Path, description = "The call")),
    responses(
        (status = 200, body = Vec<CallAttempt>),
        (status = 404, description = "Not in the caller's workspace", body = ErrorBody),
    )
)]
pub async fn attempts(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<Vec<CallAttempt>>, ApiError> {
    Ok(Json(state.engine.call_receipts(&who, id).await?))
}

/// `POST /api/calls/{id}/cancel`: stops a call walking; the answer is the
/// call as it stands once it has stopped.
#[utoipa::path(
    post, path = "/api/calls/{id}/cancel", tag = "calls",
    params(("id" = i64, Path, description = "The call")),
    responses(
        (status = 200, description = "The call as it stands", body = Envelope<CallResult>),
        (status = 202, description = "Still stopping", body = Envelope<CallResult>),
        (status = 404, description = "Not in the caller's workspace", body = ErrorBody),
        (status = 409, description = "The call has ended, or walks in another process", body = ErrorBody),
    )
)]
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Response, ApiError> {
    Ok(answered(state.engine.cancel_call(&who, id).await?))
}
