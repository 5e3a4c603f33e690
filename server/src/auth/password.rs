//! A person's own password: chosen through a one-time link (an invitation,
//! or a reset the operator printed), or changed on the Settings page with
//! the current one. Either ends the person's other sessions. Errors go back
//! to the form as a code in the query, never as free text.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use engine::ops::OpError;
use engine::tenancy::credentials::{check_new_password, secret_hash};
use engine::tenancy::Principal;
use serde::Deserialize;
use tower_sessions::Session;

use super::{encode, mark_browser, start_session};
use crate::api::ApiError;
use crate::router::AppState;

/// The page a set-password link opens (its secret follows `#`).
pub const SET_PASSWORD_PAGE: &str = engine::tenancy::credentials::SET_PASSWORD_PATH;

#[derive(Debug, Deserialize)]
pub struct SetPasswordForm {
    pub token: String,
    pub password: String,
    pub again: String,
}

/// Back to the set-password form with an error code, keeping the link's
/// secret where it was: after `#`.
fn back_to_link(error: &str, token: &str) -> Response {
    Redirect::to(&format!(
        "{SET_PASSWORD_PAGE}?error={error}#{}",
        encode(token)
    ))
    .into_response()
}

/// `POST /auth/set-password`: uses the link, ends every session of the
/// person, and signs this browser in.
pub async fn set_password(
    State(state): State<AppState>,
    session: Session,
    Form(form): Form<SetPasswordForm>,
) -> Response {
    if form.password != form.again {
        return back_to_link("mismatch", &form.token);
    }
    if check_new_password(&form.password).is_err() {
        return back_to_link("short", &form.token);
    }
    let user_id = match state
        .engine
        .set_password_with_link(&form.token, form.password)
        .await
    {
        Ok(id) => id,
        Err(engine::ops::OpError::Invalid(_)) => return back_to_link("link", ""),
        Err(e) => return internal(&e),
    };
    tracing::info!(user = user_id, "Password chosen through a link.");
    let principal = match state.engine.default_principal(user_id).await {
        Ok(Some(p)) => p,
        Ok(None) => return Redirect::to("/sign-in?error=no-workspace").into_response(),
        Err(e) => return internal(&e),
    };
    if let Err(e) = start_session(&session, &principal).await {
        return internal(&e);
    }
    let mut response = Redirect::to("/").into_response();
    mark_browser(&state, user_id, &mut response).await;
    response
}

#[derive(Debug, Deserialize)]
pub struct ChangePasswordForm {
    pub current: String,
    pub password: String,
    pub again: String,
}

/// `POST /auth/password`: a signed-in person changes their own password;
/// their other sessions end, this one goes on under a new id. Wrong
/// current passwords are slowed like sign-in's (the same limits, counted
/// together): a stolen session cannot guess its way to the password, nor
/// fill the hashing queue everyone's sign-in waits in.
pub async fn change_password(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    session: Session,
    Extension(who): Extension<Principal>,
    Form(form): Form<ChangePasswordForm>,
) -> Response {
    let back = |outcome: &str| Redirect::to(&format!("/settings?password={outcome}"));
    if form.password != form.again {
        return back("mismatch").into_response();
    }
    if check_new_password(&form.password).is_err() {
        return back("short").into_response();
    }
    let address = state.trusted_proxies.client_address(peer.ip(), &headers);
    // Signed in as the account: the owner's own browser, by proof.
    match state
        .engine
        .admit_sign_in(&who.email, address, || async { true })
        .await
    {
        Ok(()) => {}
        Err(OpError::Limited { retry_after, .. }) => {
            tracing::warn!(%address, user = who.user_id, "Password change attempts over the limit.");
            return back(&format!("limited&wait={}", retry_after.as_secs().max(1))).into_response();
        }
        Err(e) => return ApiError::from(e).into_response(),
    }
    let keep = session.id().map(|id| secret_hash(&id.to_string()));
    match state
        .engine
        .change_password(who.user_id, &form.current, form.password, keep.as_deref())
        .await
    {
        Ok(()) => {
            if let Err(e) = state.engine.sign_in_succeeded(&who.email, address).await {
                tracing::warn!(error = %e, "Cannot clear the sign-in failures of a right password.");
            }
        }
        Err(OpError::Invalid(_)) => {
            if let Err(e) = state.engine.sign_in_failed(&who.email, address).await {
                return ApiError::from(e).into_response();
            }
            return back("wrong").into_response();
        }
        Err(e) => return internal(&e),
    }
    tracing::info!(user = who.user_id, "Password changed.");
    // A new id for the session that stays, as after any sign-in.
    if let Err(e) = session.cycle_id().await {
        return internal(&e);
    }
    let mut response = back("changed").into_response();
    mark_browser(&state, who.user_id, &mut response).await;
    response
}

fn internal(e: &dyn std::fmt::Display) -> Response {
    tracing::error!(error = %e, "A password change failed inside the server.");
    StatusCode::INTERNAL_SERVER_ERROR.into_response()
}
