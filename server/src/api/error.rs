//! The one error type of the REST door and how it becomes a response.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use engine::dispatch::DispatchError;
use engine::registry::RegistryError;
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
    /// A cap or limit stops the request for now.
    #[error("{0}")]
    TooManyRequests(String),
    /// Something failed inside; the detail is logged, never sent.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

#[derive(Serialize)]
struct Body<'a> {
    error: &'a str,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    current: Option<Box<Item>>,
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
            ApiError::TooManyRequests(_) => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
            ApiError::Internal(source) => {
                tracing::error!(error = %source, "Request failed inside the server.");
                (StatusCode::INTERNAL_SERVER_ERROR, "internal")
            }
        };
        let detail = match &self {
            ApiError::Internal(_) => "the server could not complete the request".to_owned(),
            other => other.to_string(),
        };
        let (current, problems) = match self {
            ApiError::Conflict { current, .. } => (current, Vec::new()),
            ApiError::Invalid { problems, .. } => (None, problems),
            _ => (None, Vec::new()),
        };
        (
            status,
            Json(Body {
                error,
                detail,
                current,
                problems,
            }),
        )
            .into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => ApiError::NotFound(format!("{what} does not exist")),
            other => ApiError::Internal(other.into()),
        }
    }
}

impl From<DispatchError> for ApiError {
    fn from(e: DispatchError) -> Self {
        match e {
            DispatchError::UnknownPack(pack) => {
                ApiError::BadRequest(format!("pack: no pack {pack:?}"))
            }
            DispatchError::Store(e) => e.into(),
            stopped @ DispatchError::Stopped => ApiError::Internal(stopped.into()),
        }
    }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> Self {
        match e {
            RegistryError::Unknown(_) => ApiError::NotFound(e.to_string()),
            other => ApiError::BadRequest(other.to_string()),
        }
    }
}

impl From<TriageError> for ApiError {
    fn from(e: TriageError) -> Self {
        let detail = e.to_string();
        match e {
            TriageError::Conflict { current, .. } => ApiError::Conflict {
                detail,
                current: Some(current),
            },
            TriageError::NothingToUndo(_) => ApiError::Conflict {
                detail,
                current: None,
            },
            TriageError::Store(e) => e.into(),
        }
    }
}

impl From<engine::ops::ImportFailure> for ApiError {
    fn from(e: engine::ops::ImportFailure) -> Self {
        use engine::ops::ImportFailure;
        match e {
            ImportFailure::Invalid(m) => ApiError::BadRequest(m),
            ImportFailure::TooLarge(m) => ApiError::TooLarge(m),
            ImportFailure::Store(e) => e.into(),
        }
    }
}

impl From<engine::workspace_connectors::SwitchError> for ApiError {
    fn from(e: engine::workspace_connectors::SwitchError) -> Self {
        use engine::workspace_connectors::SwitchError;
        match e {
            SwitchError::Registry(e) => e.into(),
            SwitchError::Store(e) => e.into(),
        }
    }
}

impl From<engine::accounts::AccountError> for ApiError {
    fn from(e: engine::accounts::AccountError) -> Self {
        use engine::accounts::AccountError;
        match e {
            AccountError::Invalid(m) => ApiError::BadRequest(m),
            AccountError::Store(e) => e.into(),
        }
    }
}

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

impl From<engine::manifest::SaveError> for ApiError {
    fn from(e: engine::manifest::SaveError) -> Self {
        use engine::manifest::SaveError;
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
        }
    }
}

impl From<engine::secrets::SecretsError> for ApiError {
    fn from(e: engine::secrets::SecretsError) -> Self {
        use engine::secrets::SecretsError;
        match e {
            SecretsError::Invalid(m) => ApiError::BadRequest(format!("value: {m}")),
            SecretsError::NotSet(_) => ApiError::NotFound(e.to_string()),
            SecretsError::NoKey | SecretsError::BadKey => ApiError::Conflict {
                detail: e.to_string(),
                current: None,
            },
            SecretsError::Store(e) => e.into(),
        }
    }
}

impl From<engine::workspace_catalog::CatalogEditError> for ApiError {
    fn from(e: engine::workspace_catalog::CatalogEditError) -> Self {
        use engine::workspace_catalog::CatalogEditError;
        match e {
            CatalogEditError::Invalid(m) => ApiError::BadRequest(m),
            CatalogEditError::NotFound(m) => ApiError::NotFound(m),
            CatalogEditError::Store(e) => e.into(),
        }
    }
}
