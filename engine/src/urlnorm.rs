//! URL identity: two URLs that name the same page get the same key, so a
//! re-fire adds evidence to an item instead of a duplicate.

use url::Url;

/// Query parameters that track a click and never change the page.
const TRACKING: &[&str] = &[
    "fbclid",
    "gclid",
    "dclid",
    "gbraid",
    "wbraid",
    "msclkid",
    "yclid",
    "mc_cid",
    "mc_eid",
    "igshid",
    "igsh",
    "ref",
    "ref_src",
    "ref_url",
    "_hsenc",
    "_hsmi",
    "mkt_tok",
    "si",
    "spm",
    "trk",
    "trackingid",
    "originalsubdomain",
];

/// Parses a result URL, accepting only `http` and `https`: anything else
/// (`javascript:`, `data:`, relative) is refused, so provider content can never
/// turn into a script link.
pub fn parse_web_url(raw: &str) -> Option<Url> {
    let url = Url::parse(raw.trim()).ok()?;
    matches!(url.scheme(), "http" | "https").then_some(())?;
    url.host_str().filter(|h| !h.is_empty())?;
    Some(url)
}

/// The identity key of a URL: scheme, `www.`, default port, fragment, tracking
/// parameters and a trailing slash do not count; parameter order does not
/// count. Host case never counts (URL parsing lowers it).
pub fn url_key(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    let host = host.strip_prefix("www.").unwrap_or(host);
    let mut key = host.to_owned();
    if let Some(port) = url.port() {
        key.push_str(&format!(":{port}"));
    }
    key.push_str(url.path().trim_end_matches('/'));
    let mut params: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            !k.starts_with("utm_") && !TRACKING.contains(&k.as_str())
        })
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    params.sort();
    if !params.is_empty() {
        let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        key.push('?');
        key.push_str(&query.join("&"));
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(raw: &str) -> String {
        url_key(&parse_web_url(raw).unwrap())
    }

    #[test]
    fn the_same_page_has_one_key() {
        let same = [
            "https://www.linkedin.com/company/acme/",
            "http://linkedin.com/company/acme",
            "https://LinkedIn.com/company/acme?utm_source=x&utm_medium=y",
            "https://www.linkedin.com/company/acme#about",
            "https://linkedin.com:443/company/acme/?trk=public",
        ];
        for raw in same {
            assert_eq!(key(raw), "linkedin.com/company/acme", "{raw}");
        }
    }

    #[test]
    fn different_pages_keep_different_keys() {
        assert_ne!(key("https://a.example/x"), key("https://a.example/y"));
        assert_ne!(
            key("https://a.example/x?id=1"),
            key("https://a.example/x?id=2")
        );
        assert_ne!(key("https://a.example/Path"), key("https://a.example/path"));
        assert_eq!(
            key("https://a.example/x?b=2&a=1"),
            key("https://a.example/x?a=1&b=2")
        );
        assert_ne!(key("https://a.example:8080/"), key("https://a.example/"));
    }

    #[test]
    fn only_web_urls_are_accepted() {
        for bad in [
            "javascript:alert(1)",
            "data:text/html,hi",
            "/relative",
            "ftp://a.example/",
            "",
            "https://",
        ] {
            assert!(parse_web_url(bad).is_none(), "{bad}");
        }
        assert!(parse_web_url(" https://a.example/ ").is_some());
    }

    proptest! {
        #[test]
        fn keys_ignore_tracking_and_slashes(path in "[a-z0-9]{1,8}(/[a-z0-9]{1,8}){0,3}", id in 0u32..1000) {
            let plain = key(&format!("https://a.example/{path}?id={id}"));
            let noisy = key(&format!("http://www.a.example/{path}/?utm_campaign=z&id={id}&fbclid=q#top"));
            prop_assert_eq!(plain, noisy);
        }

        #[test]
        fn parsing_never_panics(raw in ".{0,64}") {
            if let Some(url) = parse_web_url(&raw) {
                let _ = url_key(&url);
            }
        }
    }
}
