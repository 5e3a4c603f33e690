//! Request extractors of the REST door: JSON bodies and query strings whose
//! rejections are `{error, detail}` like every other error, and the actor.

use axum::extract::{FromRequest, FromRequestParts};
use axum::http::request::Parts;

use super::ApiError;

/// A JSON body; a bad one is a 400 naming what is wrong.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

/// A query string; a bad one is a 400 naming the parameter.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

/// Who is acting, for history and audit rows. Accounts come with sign-in;
/// until then every request acts as `anonymous`.
#[derive(Clone, Debug)]
pub struct Actor(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Actor {
    type Rejection = ApiError;

    async fn from_request_parts(_parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Actor("anonymous".to_owned()))
    }
}

/// A raw body; one over the route's size limit is a 413 `{error, detail}`.
#[derive(Debug)]
pub struct ApiBytes(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for ApiBytes {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        axum::body::Bytes::from_request(req, state)
            .await
            .map(ApiBytes)
            .map_err(|e| {
                if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::TooLarge(format!(
                        "the request body is over the limit: {}",
                        e.body_text()
                    ))
                } else {
                    ApiError::BadRequest(format!("request body: {}", e.body_text()))
                }
            })
    }
}

impl ApiBytes {
    /// Parses the body as JSON, or gives `T::default()` when it is empty.
    pub fn json_or_default<T: serde::de::DeserializeOwned + Default>(&self) -> Result<T, ApiError> {
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Ok(T::default());
        }
        serde_json::from_slice(&self.0)
            .map_err(|e| ApiError::BadRequest(format!("request body: {e}")))
    }
}
