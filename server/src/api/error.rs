//! The one error type of the REST door and how it becomes a response.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

/// An error answered as `{"error": kind, "detail": sentence}`.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    /// Something failed inside; the detail is logged, never sent.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

#[derive(Serialize)]
struct Body<'a> {
    error: &'a str,
    detail: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, error) = match &self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Internal(source) => {
                tracing::error!(error = %source, "Request failed inside the server.");
                (StatusCode::INTERNAL_SERVER_ERROR, "internal")
            }
        };
        let detail = match &self {
            ApiError::Internal(_) => "the server could not complete the request".to_owned(),
            other => other.to_string(),
        };
        (status, Json(Body { error, detail })).into_response()
    }
}

impl From<engine::store::StoreError> for ApiError {
    fn from(e: engine::store::StoreError) -> Self {
        ApiError::Internal(e.into())
    }
}
