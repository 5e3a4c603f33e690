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
