//! The one error type of the REST door and how it becomes a response.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use engine::connectors::registry::RegistryError;
use engine::execution::dispatch::DispatchError;
use engine::ops::OpError;
use engine::store::{StoreError, TriageError};
use model::Item;
use serde::Serialize;

/// Why a REST request failed: what the operations layer answered, or
/// what only HTTP has (credentials, media types).
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The operation's own answer, with the status of its kind.
    #[error(transparent)]
    Op(#[from] OpError),
    /// No credentials, or ones that are no longer good.
    #[error("{0}")]
    Unauthorized(String),
    /// A body in a media type the route does not take.
    #[error("{0}")]
    UnsupportedMediaType(String),
}

/// Every error of the REST door.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// The kind: bad_request, unauthorized, forbidden, not_found, conflict,
    /// too_large, unsupported_media_type, invalid, rate_limited, spend_more
    /// (a record's daily cap: fire again with `spend_more` to pass it), unavailable
    /// (the database does not answer: ask again after `Retry-After`) or
    /// internal.
    #[schema(example = "not_found")]
    error: &'static str,
    /// What went wrong, naming the field or the thing.
    #[schema(example = "record 12 does not exist")]
    detail: String,
    /// On a triage conflict: the item as it is now.
    #[serde(skip_serializing_if = "Option::is_none")]
    current: Option<Box<Item>>,
    /// On a manifest that does not check: every mistake, each naming its
    /// field.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    problems: Vec<model::Problem>,
    /// On `spend_more`: what the record has cost today, the cap and the
    /// price of the call it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    spend_more: Option<Box<model::SpendQuestion>>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let op = match self {
            ApiError::Op(op) => op,
            ApiError::Unauthorized(detail) => {
                return body(StatusCode::UNAUTHORIZED, "unauthorized", detail);
            }
            ApiError::UnsupportedMediaType(detail) => {
                return body(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "unsupported_media_type",
                    detail,
                );
            }
        };
        let status = StatusCode::from_u16(op.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let kind = op.kind();
        let detail = match &op {
            OpError::Internal(source) => {
                tracing::error!(error = %source, "Request failed inside the server.");
                "the server could not complete the request".to_owned()
            }
            other => other.to_string(),
        };
        let spend_more = match &op {
            OpError::SpendMore(question) => Some(question.clone()),
            _ => None,
        };
        let (current, problems, retry_after) = match op {
            OpError::Conflict { current, .. } => (current, Vec::new(), None),
            OpError::Unchecked { problems, .. } => (None, problems, None),
            OpError::Limited { retry_after, .. } => {
                (None, Vec::new(), Some(retry_after.as_secs().max(1)))
            }
            OpError::Unavailable(cause) => {
                tracing::warn!(cause, "The database does not answer.");
                (None, Vec::new(), Some(UNAVAILABLE_RETRY_AFTER))
            }
            _ => (None, Vec::new(), None),
        };
        let mut response = (
            status,
            Json(ErrorBody {
                error: kind,
                detail,
                current,
                problems,
                spend_more,
            }),
        )
            .into_response();
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

/// When to ask again while the database is away, in seconds.
pub const UNAVAILABLE_RETRY_AFTER: u64 = 5;

impl ApiError {
    /// Bad input; the detail names the field (as the operations say it).
    pub fn invalid(detail: impl Into<String>) -> Self {
        OpError::Invalid(detail.into()).into()
    }
}

/// An error answer with nothing but its kind and detail.
fn body(status: StatusCode, error: &'static str, detail: String) -> Response {
    (
        status,
        Json(ErrorBody {
            error,
            detail,
            current: None,
            problems: Vec::new(),
            spend_more: None,
        }),
    )
        .into_response()
}

/// The engine's errors reach the REST door through the operations layer's
/// one mapping ([`OpError`]), so a kind of failure answers one status
/// whichever door it came through.
macro_rules! through_op_error {
    ($($error:ty),* $(,)?) => {$(
        impl From<$error> for ApiError {
            fn from(e: $error) -> Self {
                OpError::from(e).into()
            }
        }
    )*};
}

through_op_error!(StoreError, DispatchError, RegistryError, TriageError,);

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        match e {
            JsonRejection::BytesRejection(_) => OpError::TooLarge(e.body_text()).into(),
            _ => OpError::Invalid(format!("request body: {}", e.body_text())).into(),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> Self {
        OpError::Invalid(format!("query string: {}", e.body_text())).into()
    }
}
