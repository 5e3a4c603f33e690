//! How answers travel: the site's files under `/pkg` from their precompressed
//! copies (brotli, else gzip, as the browser accepts; `scripts/build-site.sh`
//! makes them), pages and data compressed as they are sent (event streams
//! and the wasm excepted), and what may be cached: the site's files are
//! revalidated, pages and data are never stored (they hold a person's data).

use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::compression::{CompressionLayer, CompressionLevel};
use tower_http::services::ServeDir;

/// Where the site's built files are served from.
pub const PKG_PATH: &str = "/pkg";

/// The site's files, sending the precompressed copy the browser accepts.
pub fn site_files(site_root: &str) -> ServeDir {
    ServeDir::new(format!("{site_root}{PKG_PATH}"))
        .precompressed_br()
        .precompressed_gzip()
}

/// Compresses dynamic answers: quickly (level 4: pages and JSON are made per
/// request), never under 1 KiB (nothing to gain, and an early error answer
/// such as a 413 keeps its length, so a client still sending its body reads
/// it whole), never an event stream (it must flush each event) nor the wasm
/// (sent precompressed; compressing 2 MB per request would cost seconds).
pub fn compression() -> CompressionLayer<impl Predicate> {
    let worth_it = SizeAbove::new(1024)
        .and(NotForContentType::GRPC)
        .and(NotForContentType::IMAGES)
        .and(NotForContentType::SSE)
        .and(NotForContentType::const_new("application/wasm"));
    CompressionLayer::new()
        .quality(CompressionLevel::Precise(4))
        .compress_when(worth_it)
}

/// Sets `Cache-Control` where the handler did not: the site's files are
/// kept but checked again each time (`no-cache`; their names carry no hash
/// yet), everything else is never stored. Every copy of a site file says it
/// varies with `Accept-Encoding` (the file server says so only of some), so
/// no cache hands a brotli copy to a browser that asked for gzip.
pub async fn cache_rules(req: Request, next: Next) -> Response {
    let site_file = req
        .uri()
        .path()
        .strip_prefix(PKG_PATH)
        .is_some_and(|rest| rest.starts_with('/'));
    let mut response = next.run(req).await;
    let varies = response.headers().get_all(header::VARY).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.to_ascii_lowercase().contains("accept-encoding"))
    });
    if site_file && !varies {
        response
            .headers_mut()
            .append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if !response.headers().contains_key(header::CACHE_CONTROL) {
        let rule = if site_file { "no-cache" } else { "no-store" };
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static(rule));
    }
    response
}
