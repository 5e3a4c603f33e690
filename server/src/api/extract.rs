//! Request extractors of the REST door: JSON bodies and query strings whose
//! rejections are `{error, detail}` like every other error, and the actor.

use axum::extract::{FromRequest, FromRequestParts};
use axum::http::request::Parts;
use engine::store::Principal;

use super::ApiError;

/// A JSON body; a bad one is a 400 naming what is wrong.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

/// A query string; a bad one is a 400 naming the parameter.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

/// Who is asking: the signed-in user or the token's user, in one workspace.
/// [`crate::auth::gate`] resolves it; a route taking it cannot be reached
/// without it.
#[derive(Clone, Debug)]
pub struct Caller(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Principal>()
            .cloned()
            .map(Caller)
            .ok_or_else(|| ApiError::Unauthorized("sign in or send a bearer token".to_owned()))
    }
}

/// A caller who is an admin of their workspace; members get 403.
#[derive(Clone, Debug)]
pub struct AdminCaller(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for AdminCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Caller(who) = Caller::from_request_parts(parts, state).await?;
        if who.is_admin() {
            Ok(AdminCaller(who))
        } else {
            Err(ApiError::Forbidden(format!(
                "only an admin of workspace {:?} may do this",
                who.workspace_name
            )))
        }
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
