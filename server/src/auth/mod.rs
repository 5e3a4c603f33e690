//! Who is asking: browser sessions (cookie, kept in the database) and API
//! tokens (`Authorization: Bearer`), resolved once per request into an
//! [`engine::tenancy::Principal`] by [`gate`], which also turns away every
//! request outside [`is_public`] that carries neither. Sign-in, sign-out,
//! the workspace switch and passwords are plain HTML form posts handled here.

mod access_watch;
mod password;
mod proxies;
mod session_store;
mod token_rate;

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use engine::tenancy::credentials::{Held, Proof};
use engine::tenancy::Principal;
use serde::Deserialize;
use tower_sessions::cookie::{Cookie, SameSite};
use tower_sessions::{Expiry, Session, SessionManagerLayer};

pub use access_watch::{AccessWatch, Watching, STREAM_ACCESS_CHECK};
pub use password::{change_password, set_password, SET_PASSWORD_PAGE};
pub use proxies::TrustedProxies;
pub use session_store::DbSessionStore;
pub use token_rate::{TokenRate, DEFAULT_TOKEN_REQUESTS_PER_SECOND};

use crate::api::ApiError;
use crate::router::AppState;
use engine::ops::OpError;

/// Where people sign in.
pub const SIGN_IN_PAGE: &str = "/sign-in";
/// The session cookie's name.
pub const SESSION_COOKIE: &str = "switchyard.sid";
/// A session ends after this long without a request.
pub const SESSION_IDLE_DAYS: i64 = 7;
const USER_ID: &str = "user_id";
const WORKSPACE_ID: &str = "workspace_id";

/// Paths anyone may reach: the health and readiness checks, the API's description, the
/// sign-in page and its form,
/// and the static files the sign-in page needs. Everything else needs a
/// session or a token.
pub fn is_public(method: &axum::http::Method, path: &str) -> bool {
    match path {
        "/api/health" | "/api/ready" => true,
        // What the REST door is, for anyone writing a client.
        "/api/openapi.json" => *method == axum::http::Method::GET,
        SIGN_IN_PAGE | SET_PASSWORD_PAGE => *method == axum::http::Method::GET,
        "/auth/sign-in" | "/auth/set-password" => *method == axum::http::Method::POST,
        _ => is_static(path),
    }
}

/// The site's static files, public and the same for everyone.
fn is_static(path: &str) -> bool {
    path.starts_with("/pkg/") || path == "/favicon.svg"
}

/// The session cookie: HttpOnly, SameSite=Lax, Secure when the public address
/// is https, ending after [`SESSION_IDLE_DAYS`] idle.
pub fn session_layer(state: &AppState, secure: bool) -> SessionManagerLayer<DbSessionStore> {
    SessionManagerLayer::new(DbSessionStore::new(state.engine.sessions()))
        .with_name(SESSION_COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(secure)
        .with_path("/")
        .with_expiry(Expiry::OnInactivity(time::Duration::days(
            SESSION_IDLE_DAYS,
        )))
}

/// Resolves who is asking and stops requests that need someone and have
/// nobody: 401 under `/api`, a redirect to the sign-in page elsewhere.
pub async fn gate(
    State(state): State<AppState>,
    session: Session,
    mut req: Request,
    next: Next,
) -> Response {
    // The wasm, JavaScript, CSS and icon are the same for everyone: no
    // session read, no database query.
    // Nor do the probes: the process answers whoever asks and however the
    // database is doing.
    if is_static(req.uri().path()) || matches!(req.uri().path(), "/api/health" | "/api/ready") {
        return next.run(req).await;
    }
    let principal = match principal_of(&state, &session, req.headers()).await {
        Ok(p) => p,
        Err(response) => return *response,
    };
    let path = req.uri().path().to_owned();
    match principal {
        Some((p, credential)) => {
            req.extensions_mut().insert(p);
            req.extensions_mut().insert(credential);
        }
        None if is_public(req.method(), &path) => {}
        // Doors for programs answer 401; pages send people to sign in.
        None if path.starts_with("/api/")
            || path == "/api"
            || path == crate::router::METRICS_PATH
            || path == crate::mcp::MCP_PATH
            || path.starts_with("/mcp/") =>
        {
            return unauthorized();
        }
        None => {
            let back = req
                .uri()
                .path_and_query()
                .map_or("/", |pq| pq.as_str())
                .to_owned();
            return Redirect::to(&format!("{SIGN_IN_PAGE}?next={}", encode(&back))).into_response();
        }
    }
    next.run(req).await
}

fn unauthorized() -> Response {
    let mut response = ApiError::Unauthorized(
        "sign in, or send Authorization: Bearer <token> (switchyard token create)".to_owned(),
    )
    .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Bearer"),
    );
    response
}

/// The principal of a bearer token or of the session, with how it was
/// proved. A bearer header that does not resolve is refused outright, never
/// treated as anonymous.
async fn principal_of(
    state: &AppState,
    session: &Session,
    headers: &HeaderMap,
) -> Result<Option<(Principal, Held)>, Box<Response>> {
    // The operations' one mapping: 503 while the database is away, else 500.
    let failed =
        |e: engine::store::StoreError| Box::new(ApiError::from(OpError::from(e)).into_response());
    // A session the store could not read: its store is the database.
    let unread = |e: tower_sessions::session::Error| {
        Box::new(
            ApiError::from(OpError::Unavailable(format!("reading a session: {e}"))).into_response(),
        )
    };
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        return match token {
            Some(token) => {
                if let Err((detail, retry_after)) = state.token_rate.check(token) {
                    let limited = ApiError::from(OpError::Limited {
                        detail,
                        retry_after,
                    });
                    return Err(Box::new(limited.into_response()));
                }
                match state.engine.principal_by_token(token).await {
                    Ok(Some(p)) => {
                        let held = Held {
                            proof: Proof::Token(token.to_owned()),
                            user_id: p.user_id,
                            workspace_id: p.workspace_id,
                        };
                        Ok(Some((p, held)))
                    }
                    Ok(None) => Err(Box::new(unauthorized())),
                    Err(e) => Err(failed(e)),
                }
            }
            None => Err(Box::new(unauthorized())),
        };
    }
    let ids = async {
        let user = session.get::<i64>(USER_ID).await?;
        let workspace = session.get::<i64>(WORKSPACE_ID).await?;
        Ok::<_, tower_sessions::session::Error>(user.zip(workspace))
    };
    let Some((user_id, workspace_id)) = ids.await.map_err(unread)? else {
        return Ok(None);
    };
    // Checked on every request: a member removed from a workspace is out at once.
    let principal = state
        .engine
        .principal(user_id, workspace_id)
        .await
        .map_err(failed)?;
    // A session with data was loaded from the store, so it has an id.
    let Some(id) = session.id() else {
        return Ok(None);
    };
    Ok(principal.map(|p| {
        (
            p,
            Held {
                proof: Proof::Session(engine::tenancy::credentials::secret_hash(&id.to_string())),
                user_id,
                workspace_id,
            },
        )
    }))
}

/// Percent-encodes a path for a `next=` parameter.
fn encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Only a path on this site is a place to go back to after signing in.
/// Browsers drop tabs and line breaks from a URL and read a backslash as a
/// slash, so `/\t/evil.example` would leave the site: a path must start with
/// one slash and hold only visible ASCII, no backslash (anything else in a
/// path of ours is percent-encoded anyway).
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && n.bytes().all(|b| b.is_ascii_graphic() && b != b'\\') =>
        {
            n.to_owned()
        }
        _ => "/".to_owned(),
    }
}

#[derive(Debug, Deserialize)]
pub struct SignInForm {
    pub email: String,
    pub password: String,
    #[serde(default)]
    pub next: Option<String>,
}

fn back_to_sign_in(error: &str, next: &str) -> Response {
    Redirect::to(&format!(
        "{SIGN_IN_PAGE}?error={error}&next={}",
        encode(next)
    ))
    .into_response()
}

/// The cookie a browser keeps after signing in, proving it did (see
/// `engine::tenancy::sign_in_limits`): the account's limit for strangers
/// does not hold it back.
pub const BROWSER_COOKIE: &str = "switchyard.browser";

/// `POST /auth/sign-in`: checks the password, starts a fresh session in the
/// user's first workspace, and goes back where they were headed. Guessing
/// is slowed by the deployment's sign-in limits, never turned into a
/// lockout.
pub async fn sign_in(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    session: Session,
    Form(form): Form<SignInForm>,
) -> Response {
    let next = safe_next(form.next.as_deref());
    let address = state.trusted_proxies.client_address(peer.ip(), &headers);
    let mark = cookie(&headers, BROWSER_COOKIE);
    let known_browser = || async {
        match mark {
            Some(mark) => state
                .engine
                .is_known_browser(&form.email, &mark)
                .await
                .unwrap_or(false),
            None => false,
        }
    };
    match state
        .engine
        .admit_sign_in(&form.email, address, known_browser)
        .await
    {
        Ok(()) => {}
        Err(OpError::Limited { retry_after, .. }) => {
            tracing::warn!(%address, "Sign-in attempts over the limit.");
            let seconds = retry_after.as_secs().max(1);
            return Redirect::to(&format!(
                "{SIGN_IN_PAGE}?error=limited&wait={seconds}&next={}",
                encode(&next)
            ))
            .into_response();
        }
        Err(e) => return ApiError::from(e).into_response(),
    }
    let user_id = match state
        .engine
        .check_password(&form.email, &form.password)
        .await
    {
        Ok(Some(id)) => id,
        Ok(None) => {
            if let Err(e) = state.engine.sign_in_failed(&form.email, address).await {
                return ApiError::from(e).into_response();
            }
            return back_to_sign_in("invalid", &next);
        }
        Err(e) => {
            tracing::error!(error = %e, "Sign-in failed inside the server.");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    if let Err(e) = state.engine.sign_in_succeeded(&form.email, address).await {
        tracing::warn!(error = %e, "Cannot clear the sign-in failures of a right password.");
    }
    let principal = match state.engine.default_principal(user_id).await {
        Ok(Some(p)) => p,
        Ok(None) => return back_to_sign_in("no-workspace", &next),
        Err(e) => {
            tracing::error!(error = %e, "Sign-in failed inside the server.");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    if let Err(e) = start_session(&session, &principal).await {
        tracing::error!(error = %e, "Cannot start a session.");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    tracing::info!(
        user = principal.user_id,
        workspace = principal.workspace_id,
        "Signed in."
    );
    let mut response = Redirect::to(&next).into_response();
    mark_browser(&state, user_id, &mut response).await;
    response
}

/// Gives the browser the mark of the user's current password (see
/// [`BROWSER_COOKIE`]).
async fn mark_browser(state: &AppState, user_id: i64, response: &mut Response) {
    match state.engine.browser_mark(user_id).await {
        Ok(Some(mark)) => {
            let cookie = Cookie::build((BROWSER_COOKIE, mark))
                .path("/auth/")
                .http_only(true)
                .secure(state.secure_cookies)
                .same_site(SameSite::Strict)
                .max_age(time::Duration::days(365))
                .build();
            if let Ok(value) = cookie.to_string().parse() {
                response.headers_mut().append(header::SET_COOKIE, value);
            }
        }
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "Cannot mark the browser as known."),
    }
}

/// The value of the cookie `name` the request sent, if any.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .map(|c| c.value().to_owned())
}

/// A new session id for a new sign-in, so an id known before it is worthless.
async fn start_session(
    session: &Session,
    p: &Principal,
) -> Result<(), tower_sessions::session::Error> {
    session.cycle_id().await?;
    session.insert(USER_ID, p.user_id).await?;
    session.insert(WORKSPACE_ID, p.workspace_id).await?;
    Ok(())
}

/// `POST /auth/sign-out`: ends the session everywhere it is stored.
pub async fn sign_out(session: Session) -> Response {
    if let Err(e) = session.flush().await {
        tracing::error!(error = %e, "Cannot end a session.");
    }
    Redirect::to(&format!("{SIGN_IN_PAGE}?error=signed-out")).into_response()
}

#[derive(Debug, Deserialize)]
pub struct SwitchForm {
    pub workspace: i64,
}

/// `POST /auth/workspace`: acts in another of the user's workspaces from now on.
pub async fn switch_workspace(
    State(state): State<AppState>,
    session: Session,
    axum::Extension(who): axum::Extension<Principal>,
    Form(form): Form<SwitchForm>,
) -> Result<Response, ApiError> {
    let target = state
        .engine
        .principal(who.user_id, form.workspace)
        .await?
        .ok_or_else(|| {
            ApiError::from(OpError::NotFound(format!(
                "workspace {} does not exist",
                form.workspace
            )))
        })?;
    session
        .insert(WORKSPACE_ID, target.workspace_id)
        .await
        .map_err(|e| ApiError::from(OpError::Internal(e.into())))?;
    Ok(Redirect::to("/record-sets").into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Method;

    #[test]
    fn only_the_sign_in_door_and_its_assets_are_public() {
        assert!(is_public(&Method::GET, "/api/health"));
        assert!(is_public(&Method::GET, "/api/ready"));
        assert!(is_public(&Method::GET, "/api/openapi.json"));
        assert!(is_public(&Method::GET, "/sign-in"));
        assert!(is_public(&Method::POST, "/auth/sign-in"));
        assert!(is_public(&Method::GET, "/pkg/switchyard.wasm"));
        for (method, path) in [
            (Method::POST, "/sign-in"),
            (Method::GET, "/"),
            (Method::GET, "/api/record-sets"),
            (Method::POST, "/auth/sign-out"),
            (Method::GET, "/api/healthz"),
            (Method::GET, "/pkgx"),
        ] {
            assert!(!is_public(&method, path), "{method} {path}");
        }
    }

    #[test]
    fn next_only_goes_to_this_site() {
        assert_eq!(safe_next(Some("/record-sets/3?x=1")), "/record-sets/3?x=1");
        for bad in [
            "https://evil.example/",
            "//evil.example/",
            "/\\evil.example",
            "x",
            // A browser drops tabs and line breaks: //evil.example.
            "/\t/evil.example",
            "/\n/evil.example",
            "/\r/evil.example",
            // Nor spaces or other controls, which no path of ours holds.
            "/ /evil.example",
            "/\u{0}/evil.example",
        ] {
            assert_eq!(safe_next(Some(bad)), "/", "{bad}");
        }
        assert_eq!(safe_next(None), "/");
        assert_eq!(encode("/a b?c=d&e"), "/a%20b%3Fc%3Dd%26e");
    }
}
