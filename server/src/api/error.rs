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

/// An error answered as `{"error": kind, "detail": sentence}`.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Bad input; the detail names the field.
    #[error("{0}")]
    BadRequest(String),
    /// Nobody signed in and no valid token.
    #[error("{0}")]
    Unauthorized(String),
    /// Signed in, but the role does not allow it.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    /// Someone acted first; `current` is the item as it is now.
    #[error("{detail}")]
    Conflict {
        detail: String,
        current: Option<Box<Item>>,
    },
    #[error("{0}")]
    TooLarge(String),
    /// A body in a media type the route does not take.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Well-formed but wrong (a manifest that does not check): every
    /// mistake, each naming its field.
    #[error("{detail}")]
    Invalid {
        detail: String,
        problems: Vec<model::Problem>,
    },
    /// A cap or limit stops the request for now; ask again after
    /// `retry_after` (sent as `Retry-After`).
    #[error("{detail}")]
    TooManyRequests {
        detail: String,
        retry_after: std::time::Duration,
    },
    /// Something failed inside; the detail is logged, never sent.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

/// Every error of the REST door.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// The kind: bad_request, unauthorized, forbidden, not_found, conflict,
    /// too_large, unsupported_media_type, invalid, rate_limited or internal.
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
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, error) = match &self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Conflict { .. } => (StatusCode::CONFLICT, "conflict"),
            ApiError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            ApiError::UnsupportedMediaType(_) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
            }
            ApiError::Invalid { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
            ApiError::TooManyRequests { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
            ApiError::Internal(source) => {
                tracing::error!(error = %source, "Request failed inside the server.");
                (StatusCode::INTERNAL_SERVER_ERROR, "internal")
            }
        };
        let detail = match &self {
            ApiError::Internal(_) => "the server could not complete the request".to_owned(),
            other => other.to_string(),
        };
        let retry_after = match &self {
            ApiError::TooManyRequests { retry_after, .. } => Some(retry_after.as_secs().max(1)),
            _ => None,
        };
        let (current, problems) = match self {
            ApiError::Conflict { current, .. } => (current, Vec::new()),
            ApiError::Invalid { problems, .. } => (None, problems),
            _ => (None, Vec::new()),
        };
        let mut response = (
            status,
            Json(ErrorBody {
                error,
                detail,
                current,
                problems,
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

impl From<OpError> for ApiError {
    fn from(e: OpError) -> Self {
        match e {
            OpError::Invalid(m) => ApiError::BadRequest(m),
            OpError::Forbidden(m) => ApiError::Forbidden(m),
            OpError::NotFound(m) => ApiError::NotFound(m),
            OpError::Conflict { detail, current } => ApiError::Conflict { detail, current },
            OpError::TooLarge(m) => ApiError::TooLarge(m),
            OpError::Limited {
                detail,
                retry_after,
            } => ApiError::TooManyRequests {
                detail,
                retry_after,
            },
            OpError::Internal(source) => ApiError::Internal(source),
        }
    }
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

through_op_error!(
    StoreError,
    DispatchError,
    RegistryError,
    TriageError,
    engine::connectors::workspace::SwitchError,
    engine::tenancy::accounts::AccountError,
    engine::tenancy::secrets::SecretsError,
    engine::packs::workspace::CatalogEditError,
);

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        match e {
            JsonRejection::BytesRejection(_) => ApiError::TooLarge(e.body_text()),
            _ => ApiError::BadRequest(format!("request body: {}", e.body_text())),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> Self {
        ApiError::BadRequest(format!("query string: {}", e.body_text()))
    }
}

impl From<engine::connectors::manifest::SaveError> for ApiError {
    fn from(e: engine::connectors::manifest::SaveError) -> Self {
        use engine::connectors::manifest::SaveError;
        match e {
            SaveError::Invalid(invalid) => ApiError::Invalid {
                detail: format!("the manifest does not check: {invalid}"),
                problems: invalid.0,
            },
            SaveError::Taken { .. } => ApiError::Conflict {
                detail: e.to_string(),
                current: None,
            },
            SaveError::NotFound(_) => ApiError::NotFound(e.to_string()),
            SaveError::Registry(e) => e.into(),
            SaveError::Store(e) => e.into(),
            SaveError::NotAdmin(e) => OpError::from(e).into(),
        }
    }
}
