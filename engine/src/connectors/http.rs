//! Shared plumbing of every HTTP adapter: one client for the process, a size
//! cap on answers, typed JSON parsing, and the classification of failures by
//! HTTP status (429 rate-limited with Retry-After, 401/403 refused
//! credentials, 5xx and transport errors upstream, the rest unreadable). No
//! message it builds carries a secret or a request URL.

use std::time::Duration;

use reqwest::header::{HeaderMap, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{RequestBuilder, StatusCode};
use serde::de::DeserializeOwned;

use super::guard::{refusal_in, refused, AllowList, Outbound};
use super::receipts::Sending;
use crate::connectors::seam::{FireError, MAX_RETRY_AFTER};

/// The User-Agent every request carries.
pub const USER_AGENT: &str = concat!(
    "Switchyard/",
    env!("CARGO_PKG_VERSION"),
    " (entity enrichment)"
);
/// The largest answer read from a provider.
pub const MAX_BODY: usize = 4 * 1024 * 1024;

/// The process's HTTP clients. Cheap to clone (the pools are shared).
#[derive(Clone, Debug)]
pub struct Http {
    /// For the providers' own addresses, written in code.
    client: reqwest::Client,
    /// For addresses someone else chose (see [`Outbound`]).
    outbound: Outbound,
    max_body: usize,
}

impl Http {
    /// A client with pooling, rustls, compression and sane timeouts, and an
    /// outbound client that reaches no internal address.
    pub fn new() -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(15))
            .redirect(reqwest::redirect::Policy::limited(5))
            .build()?;
        Ok(Self {
            client,
            outbound: Outbound::new(AllowList::default()),
            max_body: MAX_BODY,
        })
    }

    /// The same clients, with `outbound` for addresses someone else chose
    /// (the deployment's one, with its allow list).
    pub fn with_outbound(mut self, outbound: Outbound) -> Self {
        self.outbound = outbound;
        self
    }

    pub fn outbound(&self) -> &Outbound {
        &self.outbound
    }

    /// The same client with another answer size cap (tests).
    pub fn with_max_body(mut self, max_body: usize) -> Self {
        self.max_body = max_body;
        self
    }

    /// A client whose requests give up after `timeout` (tests).
    pub fn with_timeout(timeout: Duration) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .timeout(timeout)
            .build()?;
        Ok(Self {
            client,
            outbound: Outbound::new(AllowList::default()),
            max_body: MAX_BODY,
        })
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Sends a request and returns the status, headers and body (capped).
    /// `secrets` are scrubbed from every message.
    pub async fn send(
        &self,
        provider: &str,
        request: RequestBuilder,
        secrets: &[&str],
    ) -> Result<(StatusCode, HeaderMap, Vec<u8>), FireError> {
        send_capped(provider, request, self.max_body, secrets).await
    }

    /// Sends a request expecting JSON: classifies the status, refuses HTML and
    /// oversized answers, and parses the body into `T`.
    pub async fn json<T: DeserializeOwned>(
        &self,
        provider: &str,
        request: RequestBuilder,
        secrets: &[&str],
    ) -> Result<T, FireError> {
        let (status, headers, body) = self.send(provider, request, secrets).await?;
        if let Some(e) = classify_status(provider, status, &headers, &body, secrets) {
            return Err(e);
        }
        parse_json(provider, &headers, &body, secrets)
    }
}

/// Sends a request and returns the status, headers and body, refusing a body
/// over `max_body` bytes. `secrets` are scrubbed from every message.
pub async fn send_capped(
    provider: &str,
    request: RequestBuilder,
    max_body: usize,
    secrets: &[&str],
) -> Result<(StatusCode, HeaderMap, Vec<u8>), FireError> {
    let (client, request) = request.build_split();
    let request = request.map_err(|e| transport_error(provider, e, secrets))?;
    let sending = Sending::start(&request, secrets);
    let mut read = 0;
    let exchanged = async {
        let mut response = client
            .execute(request)
            .await
            .map_err(|e| transport_error(provider, e, secrets))?;
        let status = response.status();
        sending.answered(status);
        let headers = response.headers().clone();
        if response
            .content_length()
            .is_some_and(|n| n > max_body as u64)
        {
            return Err(too_big(provider, max_body));
        }
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    read += chunk.len();
                    if body.len() + chunk.len() > max_body {
                        return Err(too_big(provider, max_body));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return Err(transport_error(provider, e, secrets)),
            }
        }
        sending.payload(&body);
        Ok((status, headers, body))
    }
    .await;
    sending.finish(read);
    exchanged
}

fn too_big(provider: &str, max: usize) -> FireError {
    FireError::Malformed {
        reason: format!("{provider} answered with more than {} KiB", max / 1024),
    }
}

/// Scrubs secret values from a message, however short, as they are and as
/// a provider may echo them back from a URL or a form (percent-encoded in
/// either case, `+` for a space).
pub fn redact(message: &str, secrets: &[&str]) -> String {
    let mut forms: Vec<String> = secrets
        .iter()
        .filter(|s| !s.is_empty())
        .flat_map(|s| echoes(s))
        .collect();
    // Longest first: a secret inside another must not leave half of it.
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    forms.dedup();
    let mut out = message.to_owned();
    for form in forms {
        out = out.replace(&form, "***");
    }
    out
}

/// The ways a secret may come back in a message.
fn echoes(secret: &str) -> [String; 4] {
    let percent = |upper: bool| {
        let mut out = String::with_capacity(secret.len() * 3);
        for b in secret.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                out.push(char::from(b));
            } else if upper {
                out.push_str(&format!("%{b:02X}"));
            } else {
                out.push_str(&format!("%{b:02x}"));
            }
        }
        out
    };
    [
        secret.to_owned(),
        url::form_urlencoded::byte_serialize(secret.as_bytes()).collect(),
        percent(true),
        percent(false),
    ]
}

pub(crate) fn transport_error(provider: &str, e: reqwest::Error, secrets: &[&str]) -> FireError {
    // The URL may carry a key in its query string: never show it.
    let e = e.without_url();
    if let Some(refusal) = refusal_in(&e) {
        return refused(provider, &refusal);
    }
    if e.is_timeout() {
        return FireError::Timeout {
            after: Duration::from_secs(15),
        };
    }
    // A timeout can also surface as the source of a body or decode error.
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        if c.to_string().contains("timed out") {
            return FireError::Timeout {
                after: Duration::from_secs(15),
            };
        }
        cause = c.source();
    }
    let what = if e.is_connect() {
        "cannot connect"
    } else if e.is_body() || e.is_decode() {
        "the answer was cut off"
    } else {
        "request failed"
    };
    let mut detail = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        detail = format!("{detail}: {s}");
        source = s.source();
    }
    FireError::Upstream {
        reason: redact(&format!("{provider}: {what} ({detail})"), secrets),
    }
}

/// The first words of a provider's error body, for a reason line.
fn excerpt(body: &[u8], secrets: &[&str]) -> String {
    let text = String::from_utf8_lossy(body);
    // A JSON error message is the most useful part, when there is one.
    let message = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| {
            ["error", "message", "detail", "error_message"]
                .iter()
                .find_map(|k| match &v[*k] {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Object(o) => {
                        o.get("message").and_then(|m| m.as_str()).map(str::to_owned)
                    }
                    _ => None,
                })
        })
        .unwrap_or_else(|| text.split_whitespace().collect::<Vec<_>>().join(" "));
    let mut message: String = message.chars().take(160).collect();
    if looks_like_html(body) {
        message = "an HTML page".to_owned();
    }
    redact(&message, secrets)
}

fn looks_like_html(body: &[u8]) -> bool {
    let start: String = String::from_utf8_lossy(&body[..body.len().min(512)])
        .trim_start()
        .chars()
        .take(15)
        .collect::<String>()
        .to_ascii_lowercase();
    start.starts_with("<!doctype html") || start.starts_with("<html") || start.starts_with("<head")
}

/// A `Retry-After` header in seconds or as an HTTP date, believed up to
/// [`MAX_RETRY_AFTER`] in either form.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let wait = match value.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => httpdate::parse_http_date(value)
            .ok()?
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

/// What a non-success status means, by the usual HTTP contract.
pub fn classify_status(
    provider: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    secrets: &[&str],
) -> Option<FireError> {
    if status.is_success() {
        return None;
    }
    let said = excerpt(body, secrets);
    let reason = format!("{provider} HTTP {}: {said}", status.as_u16());
    Some(match status.as_u16() {
        429 => FireError::RateLimited {
            retry_after: retry_after(headers),
            reason,
        },
        401 | 403 => FireError::AuthFailed { reason },
        // About this query's input: the request's own.
        400 | 404 | 409 | 410 | 413 | 414 | 422 => FireError::Request {
            reason: format!(
                "{provider} refused this query (HTTP {}: {said})",
                status.as_u16()
            ),
        },
        // Anything else (402, 405, 5xx...) is the provider's or the key's.
        _ => FireError::Upstream { reason },
    })
}

/// Parses a JSON answer, refusing an HTML page with a clear reason.
pub fn parse_json<T: DeserializeOwned>(
    provider: &str,
    headers: &HeaderMap,
    body: &[u8],
    secrets: &[&str],
) -> Result<T, FireError> {
    let html = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.contains("text/html"))
        || looks_like_html(body);
    if html {
        return Err(FireError::Upstream {
            reason: format!("{provider} answered with an HTML page instead of JSON"),
        });
    }
    serde_json::from_slice(body).map_err(|e| {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        // Words instead of JSON (GDELT explains a refused query so): say them.
        let reason = if !text.is_empty() && !text.starts_with(['{', '[']) {
            let said: String = text.chars().take(160).collect();
            format!("{provider} answered in words instead of JSON: {said}")
        } else {
            format!("{provider} answered with unreadable JSON: {e}")
        };
        FireError::Malformed {
            reason: redact(&reason, secrets),
        }
    })
}

/// Provider text with HTML markup (`<strong>`, `<span class=searchmatch>`)
/// as plain text: tags dropped, the common entities decoded. The result is
/// still rendered escaped; this only keeps markup out of what people read.
pub fn plain_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match (c, in_tag) {
            ('<', _) => in_tag = true,
            ('>', true) => in_tag = false,
            (_, false) => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&nbsp;", " ")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn a_secret_is_scrubbed_however_short_and_however_it_is_echoed() {
        assert_eq!(redact("key abc refused", &["abc"]), "key *** refused");
        assert_eq!(redact("nothing to hide", &[""]), "nothing to hide");
        let key = "k+y/v4l=e s";
        for echoed in [
            "k+y/v4l=e s",
            "k%2By%2Fv4l%3De+s",
            "k%2By%2Fv4l%3De%20s",
            "k%2by%2fv4l%3de%20s",
        ] {
            let said = redact(&format!("invalid api_key={echoed}&q=acme"), &[key]);
            assert_eq!(said, "invalid api_key=***&q=acme", "{echoed}");
        }
        // A secret inside another is not left half-scrubbed.
        assert_eq!(
            redact("token sk-abc-123", &["abc", "sk-abc-123"]),
            "token ***"
        );
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn statuses_are_classified_by_contract() {
        let none = HeaderMap::new();
        let c = |code: u16, h: &HeaderMap, body: &str| {
            classify_status(
                "P",
                StatusCode::from_u16(code).unwrap(),
                h,
                body.as_bytes(),
                &["sekret-key"],
            )
        };
        assert!(c(200, &none, "").is_none());
        assert!(matches!(
            c(429, &headers(&[("retry-after", "30")]), ""),
            Some(FireError::RateLimited { retry_after: Some(d), .. }) if d == Duration::from_secs(30)
        ));
        assert!(matches!(
            c(429, &none, ""),
            Some(FireError::RateLimited {
                retry_after: None,
                ..
            })
        ));
        assert!(
            matches!(c(401, &none, r#"{"error":"Invalid API key sekret-key"}"#),
            Some(FireError::AuthFailed { reason }) if reason == "P HTTP 401: Invalid API key ***")
        );
        assert!(matches!(
            c(403, &none, ""),
            Some(FireError::AuthFailed { .. })
        ));
        assert!(matches!(c(503, &none, "<html><body>down</body></html>"),
            Some(FireError::Upstream { reason }) if reason.ends_with("an HTML page")));
        // A query the provider refused is the request's own.
        for code in [400, 404, 422] {
            let e = c(code, &none, r#"{"message":"bad q"}"#).unwrap();
            assert!(e.is_the_requests_own(), "{code}: {e:?}");
            assert_eq!(
                e.to_string(),
                format!("P refused this query (HTTP {code}: bad q)")
            );
        }
        // A status about the provider or the account is not.
        for code in [402, 405, 500] {
            let e = c(code, &none, "").unwrap();
            assert!(matches!(e, FireError::Upstream { .. }), "{code}: {e:?}");
        }
    }

    #[test]
    fn words_instead_of_json_are_quoted_and_broken_json_is_named() {
        let said = parse_json::<serde_json::Value>(
            "GDELT",
            &HeaderMap::new(),
            b"Your search contained a phrase that is too short.",
            &[],
        )
        .unwrap_err();
        assert_eq!(
            said.to_string(),
            "unreadable answer: GDELT answered in words instead of JSON: Your search contained a phrase that is too short."
        );
        let broken = parse_json::<serde_json::Value>("P", &HeaderMap::new(), br#"{"a": "#, &[])
            .unwrap_err()
            .to_string();
        assert!(
            broken.contains("P answered with unreadable JSON"),
            "{broken}"
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "120")])),
            Some(Duration::from_secs(120))
        );
        let later = std::time::SystemTime::now() + Duration::from_secs(90);
        let date = httpdate::fmt_http_date(later);
        let got = retry_after(&headers(&[("retry-after", &date)])).unwrap();
        assert!(
            got <= Duration::from_secs(90) && got >= Duration::from_secs(85),
            "{got:?}"
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        // Years away, in either form, is an hour.
        assert_eq!(
            retry_after(&headers(&[("retry-after", "999999999")])),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Fri, 31 Dec 9999 23:59:59 GMT"
            )])),
            Some(MAX_RETRY_AFTER)
        );
    }

    #[test]
    fn markup_becomes_plain_text() {
        assert_eq!(
            plain_text("<strong>Acme</strong> &amp; Co\n <span class=\"x\">Ltd</span>"),
            "Acme & Co Ltd"
        );
        assert_eq!(plain_text("a &lt;b&gt; c"), "a <b> c");
    }

    #[test]
    fn html_is_never_parsed_as_json() {
        let err =
            parse_json::<serde_json::Value>("P", &HeaderMap::new(), b"<!DOCTYPE html><p>hi", &[])
                .unwrap_err();
        assert!(err.to_string().contains("HTML page"), "{err}");
        let err =
            parse_json::<serde_json::Value>("P", &HeaderMap::new(), b"{nope", &[]).unwrap_err();
        assert!(matches!(err, FireError::Malformed { .. }));
    }
}
