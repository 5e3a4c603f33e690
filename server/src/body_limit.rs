//! Every request body is bounded here, once, by path: axum's per-extractor
//! default is switched off in the router, so this limit is the only one, and
//! a declared length over it is refused before a byte is read.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use server_fn::ServerFn;

use engine::import::MAX_IMPORT_BYTES;

use crate::api::ApiError;
use engine::ops::OpError;

/// The body limit of every request without a larger one of its own.
pub const DEFAULT_BODY_BYTES: usize = 2 * 1024 * 1024;

/// The most bytes a request to `path` may send.
pub fn limit_for(method: &Method, path: &str) -> usize {
    if method == Method::POST && path == "/api/record-sets" {
        MAX_IMPORT_BYTES
    } else if path == <app::pages::ImportCsv as ServerFn>::PATH {
        // The page posts the CSV form-encoded: up to three bytes per byte.
        3 * MAX_IMPORT_BYTES + 64 * 1024
    } else {
        DEFAULT_BODY_BYTES
    }
}

/// Refuses a declared length over the limit with 413 naming the limit, and
/// stops reading an undeclared one at the limit.
pub async fn limit_body(req: Request, next: Next) -> Response {
    let limit = limit_for(req.method(), req.uri().path());
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(declared) = declared.filter(|d| *d > limit as u64) {
        return too_large(req.uri().path(), declared, limit);
    }
    let req = req.map(|body| Body::new(http_body_util::Limited::new(body, limit)));
    next.run(req).await
}

fn too_large(path: &str, declared: u64, limit: usize) -> Response {
    let detail = format!("the request body is {declared} bytes; the limit here is {limit} bytes");
    if path.starts_with("/api/") {
        ApiError::from(OpError::TooLarge(detail)).into_response()
    } else {
        (StatusCode::PAYLOAD_TOO_LARGE, detail).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_imports_take_more_than_the_default() {
        assert_eq!(
            limit_for(&Method::POST, "/api/record-sets"),
            MAX_IMPORT_BYTES
        );
        assert!(
            limit_for(&Method::POST, <app::pages::ImportCsv as ServerFn>::PATH)
                > 3 * MAX_IMPORT_BYTES
        );
        for (method, path) in [
            (Method::PUT, "/api/record-sets"),
            (Method::POST, "/api/manifests"),
            (Method::POST, "/auth/sign-in"),
            (Method::POST, "/api/fire_chip"),
        ] {
            assert_eq!(limit_for(&method, path), DEFAULT_BODY_BYTES, "{path}");
        }
    }
}
