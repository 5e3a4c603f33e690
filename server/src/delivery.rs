//! How answers travel: the site's files under `/pkg` from their precompressed
//! copies (brotli, else gzip, as the browser accepts; `scripts/build-site.sh`
//! makes them), pages and data compressed as they are sent (event streams
//! and the wasm excepted), and what may be cached: the site's files with a
//! content hash in their name are kept for good, other site files are
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

/// The name the build gave the site's script, module and stylesheet
/// (`switchyard.<hash>`, in `<site root>/pkg/name.txt`), or the plain
/// name when there is no such file (a site built without hashing, or none).
pub fn output_name(site_root: &str) -> String {
    let file = format!("{site_root}{PKG_PATH}/name.txt");
    match std::fs::read_to_string(&file) {
        Ok(text) if is_hashed_name(text.trim()) => text.trim().to_owned(),
        Ok(text) => {
            tracing::warn!(
                file,
                name = text.trim(),
                "The site's name file does not hold a hashed name; using the plain one."
            );
            crate::config::OUTPUT_NAME.to_owned()
        }
        Err(_) => crate::config::OUTPUT_NAME.to_owned(),
    }
}

/// Whether a site file's name carries its content hash:
/// `switchyard.<16 hex>` then `.js`, `.css` or `_bg.wasm` (and `.br`/`.gz`).
pub fn is_hashed_name(file: &str) -> bool {
    let Some(rest) = file.strip_prefix(crate::config::OUTPUT_NAME) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix('.') else {
        return false;
    };
    let hash = rest.get(..16).unwrap_or_default();
    hash.len() == 16
        && hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && (rest.len() == 16 || rest[16..].starts_with(['.', '_']))
}

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

/// Sets `Cache-Control` where the handler did not: a site file whose name
/// carries its content hash is kept for a year and never checked again
/// (`immutable`: a new build is a new name), other site files are kept but
/// checked again each time (`no-cache`), everything else is never stored.
/// Every copy of a site file says it varies with `Accept-Encoding` (the
/// file server says so only of some), so no cache hands a brotli copy to a
/// browser that asked for gzip.
pub async fn cache_rules(req: Request, next: Next) -> Response {
    let site_file = req
        .uri()
        .path()
        .strip_prefix(PKG_PATH)
        .and_then(|rest| rest.strip_prefix('/'))
        .map(is_hashed_name);
    let mut response = next.run(req).await;
    let varies = response.headers().get_all(header::VARY).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.to_ascii_lowercase().contains("accept-encoding"))
    });
    if site_file.is_some() && !varies {
        response
            .headers_mut()
            .append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    let found = response.status().is_success();
    if !response.headers().contains_key(header::CACHE_CONTROL) {
        let rule = match site_file {
            Some(true) if found => "public, max-age=31536000, immutable",
            Some(_) => "no-cache",
            None => "no-store",
        };
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static(rule));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::is_hashed_name;

    #[test]
    fn only_names_with_a_content_hash_are_hashed() {
        for name in [
            "switchyard.0123456789abcdef.js",
            "switchyard.0123456789abcdef.css.br",
            "switchyard.0123456789abcdef_bg.wasm",
            "switchyard.0123456789abcdef_bg.wasm.gz",
            "switchyard.0123456789abcdef",
        ] {
            assert!(is_hashed_name(name), "{name}");
        }
        for name in [
            "switchyard.js",
            "switchyard_bg.wasm",
            "switchyard.css",
            "name.txt",
            "switchyard.0123456789ABCDEF.js",
            "switchyard.0123456789abcde.js",
            "switchyard.0123456789abcdefg.js",
            "other.0123456789abcdef.js",
            "",
        ] {
            assert!(!is_hashed_name(name), "{name}");
        }
    }
}
