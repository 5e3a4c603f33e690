//! Cross-site request forgery: a request that changes something and is
//! proved by the browser's own cookie, or that signs in, must come from
//! this site's pages. Browsers say where a request comes from in
//! `Sec-Fetch-Site` and `Origin`, which a page cannot forge; a request with
//! neither is not believed. A bearer token is never sent by a browser on its
//! own, so token requests need neither. `SameSite=Lax` alone let a
//! same-site page (another app on a sibling subdomain) post as the person.
//! Nor may another site show our pages in a frame, to trick a click.

use axum::extract::Request;
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api::ApiError;
use crate::auth::{cookie, SESSION_COOKIE};
use engine::ops::OpError;

/// Refuses a cross-site state change with 403 naming why.
pub async fn same_origin_only(req: Request, next: Next) -> Response {
    if let Err(why) = check(req.method(), req.uri().path(), req.headers()) {
        tracing::warn!(path = req.uri().path(), why, "Cross-site request refused.");
        return ApiError::from(OpError::Forbidden(format!(
            "cross-site request refused: {why}"
        )))
        .into_response();
    }
    next.run(req).await
}

/// Every answer tells browsers never to show it inside another site's
/// frame (`frame-ancestors 'none'`, and `X-Frame-Options` for older ones),
/// and never to guess a type other than the one it is sent as.
pub async fn never_framed(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    let headers = response.headers_mut();
    headers.insert(
        header::X_FRAME_OPTIONS,
        header::HeaderValue::from_static("DENY"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static("frame-ancestors 'none'"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    response
}

/// Whether a request may go on; the error says why not.
pub fn check(method: &Method, path: &str, headers: &HeaderMap) -> Result<(), &'static str> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let signs_in = path.starts_with("/auth/");
    let ambient =
        cookie(headers, SESSION_COOKIE).is_some() && !headers.contains_key(header::AUTHORIZATION);
    if !signs_in && !ambient {
        return Ok(());
    }
    if let Some(site) = headers.get("sec-fetch-site") {
        // `none`: the person typed or bookmarked it; never a page's doing.
        return match site.to_str().unwrap_or_default() {
            "same-origin" | "none" => Ok(()),
            _ => Err("the request came from another site's page"),
        };
    }
    match headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
        Some(origin) if same_origin(origin, headers) => Ok(()),
        Some(_) => Err("the request came from another site's page"),
        None => Err("the browser did not say where the request came from (no Origin)"),
    }
}

/// `Origin` names the host the request was sent to (scheme aside: a proxy
/// in front may end TLS).
fn same_origin(origin: &str, headers: &HeaderMap) -> bool {
    let Some((_, authority)) = origin.split_once("://") else {
        return false; // `null` and the like
    };
    let host = headers
        .get("x-forwarded-host")
        .or_else(|| headers.get(header::HOST))
        .and_then(|h| h.to_str().ok());
    host.is_some_and(|h| h.eq_ignore_ascii_case(authority))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, value.parse().unwrap());
        }
        h
    }

    const COOKIE: (&str, &str) = ("cookie", "theme=dark; switchyard.sid=abc");

    #[test]
    fn a_cookie_post_from_this_site_goes_on_and_from_another_does_not() {
        let post =
            |h: &[(&'static str, &str)]| check(&Method::POST, "/api/triage_item1", &headers(h));
        assert!(post(&[COOKIE, ("sec-fetch-site", "same-origin")]).is_ok());
        assert!(post(&[
            COOKIE,
            ("host", "app.example:3000"),
            ("origin", "http://app.example:3000")
        ])
        .is_ok());
        for bad in [
            vec![COOKIE, ("sec-fetch-site", "cross-site")],
            vec![COOKIE, ("sec-fetch-site", "same-site")],
            vec![
                COOKIE,
                ("host", "app.example"),
                ("origin", "https://evil.example"),
            ],
            vec![COOKIE, ("host", "app.example"), ("origin", "null")],
            vec![COOKIE, ("host", "app.example")],
            // Sec-Fetch-Site, when sent, is what counts.
            vec![
                COOKIE,
                ("sec-fetch-site", "cross-site"),
                ("host", "a.example"),
                ("origin", "http://a.example"),
            ],
        ] {
            assert!(post(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sign_in_is_checked_without_a_cookie_and_tokens_and_reads_are_not() {
        let h = headers(&[("host", "app.example"), ("origin", "https://evil.example")]);
        assert!(check(&Method::POST, "/auth/sign-in", &h).is_err());
        assert!(check(&Method::POST, "/auth/sign-in", &headers(&[])).is_err());
        // No cookie: nothing ambient to forge with.
        assert!(check(&Method::POST, "/api/record-sets", &h).is_ok());
        let token = headers(&[
            COOKIE,
            ("authorization", "Bearer sy_x"),
            ("origin", "https://evil.example"),
        ]);
        assert!(check(&Method::POST, "/api/record-sets", &token).is_ok());
        let cookie_only = headers(&[COOKIE, ("origin", "https://evil.example")]);
        assert!(check(&Method::GET, "/api/record-sets", &cookie_only).is_ok());
        assert!(check(&Method::DELETE, "/api/record-sets/1", &cookie_only).is_err());
        // A cookie merely named like ours is not ours.
        let other = headers(&[
            ("cookie", "xswitchyard.sid=1"),
            ("origin", "https://evil.example"),
        ]);
        assert!(check(&Method::POST, "/api/x", &other).is_ok());
    }
}
