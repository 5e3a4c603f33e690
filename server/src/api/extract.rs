//! Request extractors of the REST door: JSON bodies and query strings whose
//! rejections are `{error, detail}` like every other error, and the actor.

use axum::extract::{FromRequest, FromRequestParts};
use axum::http::request::Parts;
use engine::tenancy::Principal;

use super::ApiError;
use engine::ops::OpError;

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
            Err(ApiError::from(OpError::Forbidden(format!(
                "only an admin of workspace {:?} may do this",
                who.workspace_name
            ))))
        }
    }
}

/// A raw body and the media type it was sent as; one over the route's size
/// limit is a 413 `{error, detail}`.
#[derive(Debug)]
pub struct ApiBytes {
    pub bytes: axum::body::Bytes,
    /// `Content-Type` without parameters, lower-cased.
    media_type: Option<String>,
}

impl<S: Send + Sync> FromRequest<S> for ApiBytes {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        let media_type = req
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase());
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|e| {
                if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::from(OpError::TooLarge(format!(
                        "the request body is over the limit: {}",
                        e.body_text()
                    )))
                } else {
                    ApiError::invalid(format!("request body: {}", e.body_text()))
                }
            })?;
        Ok(ApiBytes { bytes, media_type })
    }
}

impl ApiBytes {
    /// Nothing but whitespace was sent.
    pub fn is_blank(&self) -> bool {
        self.bytes.iter().all(u8::is_ascii_whitespace)
    }

    /// The body's media type when it is one of `accepted`; 415 naming them
    /// otherwise (a `text/plain` body is what a cross-site form can send).
    pub fn media_type(&self, accepted: &[&'static str]) -> Result<&'static str, ApiError> {
        let sent = self.media_type.as_deref();
        accepted
            .iter()
            .find(|a| Some(**a) == sent)
            .copied()
            .ok_or_else(|| {
                ApiError::UnsupportedMediaType(format!(
                    "Content-Type: send {} (got {})",
                    accepted.join(" or "),
                    sent.unwrap_or("none")
                ))
            })
    }

    /// Parses the body as JSON (sent as `application/json`), or gives
    /// `T::default()` when it is empty.
    pub fn json_or_default<T: serde::de::DeserializeOwned + Default>(&self) -> Result<T, ApiError> {
        if self.is_blank() {
            return Ok(T::default());
        }
        self.media_type(&["application/json"])?;
        serde_json::from_slice(&self.bytes)
            .map_err(|e| ApiError::invalid(format!("request body: {e}")))
    }
}
