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

/// Where under `/pkg` the build put the site's files and what it called
/// them: `switchyard-<hash>/switchyard` (the folder named in
/// `<site root>/pkg/name.txt`, holding `switchyard.js`, `switchyard_bg.wasm`,
/// `switchyard.css` and the lazily loaded chunks), or the plain
/// `switchyard` when there is no such file (a site built without it, or
/// none). Leptos's HydrationScripts adds `.js` and `_bg.wasm`, the shell
/// `.css`.
pub fn output_name(site_root: &str) -> String {
    let file = format!("{site_root}{PKG_PATH}/name.txt");
    match std::fs::read_to_string(&file) {
        Ok(text) if is_build_folder(text.trim()) => {
            format!("{}/{}", text.trim(), crate::config::OUTPUT_NAME)
        }
        Ok(text) => {
            tracing::warn!(
                file,
                name = text.trim(),
                "The site's name file does not name a build folder; using the plain name."
            );
            crate::config::OUTPUT_NAME.to_owned()
        }
        Err(_) => crate::config::OUTPUT_NAME.to_owned(),
    }
}

/// Whether a folder under `/pkg` is a build's, named for its content:
/// `switchyard-<16 hex>`. Everything in it is never changed in place.
pub fn is_build_folder(name: &str) -> bool {
    name.strip_prefix(crate::config::OUTPUT_NAME)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|hash| {
            hash.len() == 16
                && hash
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// Whether a path under `/pkg/` is a file inside a build's folder.
fn in_build_folder(path: &str) -> bool {
    path.split_once('/')
        .is_some_and(|(folder, file)| is_build_folder(folder) && !file.is_empty())
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

/// Sets `Cache-Control` where the handler did not: a file in a build's
/// folder (named for its content) is kept for a year and never checked again
/// (`immutable`: a new build is a new folder), other site files are kept but
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
        .map(in_build_folder);
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
    use super::{in_build_folder, is_build_folder};

    #[test]
    fn only_files_in_a_folder_named_for_its_content_are_kept_for_good() {
        assert!(is_build_folder("switchyard-0123456789abcdef"));
        for name in [
            "switchyard",
            "switchyard-0123456789ABCDEF",
            "switchyard-0123456789abcde",
            "switchyard-0123456789abcdefg",
            "switchyard.0123456789abcdef",
            "other-0123456789abcdef",
            "",
        ] {
            assert!(!is_build_folder(name), "{name}");
        }
        for path in [
            "switchyard-0123456789abcdef/switchyard.js",
            "switchyard-0123456789abcdef/switchyard_bg.wasm.br",
            "switchyard-0123456789abcdef/chunk_6.wasm",
            "switchyard-0123456789abcdef/__wasm_split.js",
        ] {
            assert!(in_build_folder(path), "{path}");
        }
        for path in [
            "switchyard-0123456789abcdef/",
            "switchyard-0123456789abcdef",
            "name.txt",
            "switchyard.js",
            "chunk_6.wasm",
        ] {
            assert!(!in_build_folder(path), "{path}");
        }
    }
}
