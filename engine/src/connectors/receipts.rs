//! The requests an attempt sends, kept for its receipt. The dispatcher runs
//! each attempt inside [`recording`]; every request sent through this
//! module's [`Sending`] (the shared HTTP plumbing and the site crawler) is
//! noted there, so no adapter can forget to leave one. Outside a recording
//! (a manifest's test fire), nothing is kept. A receipt holds no secret: the
//! path is scrubbed of the call's secrets and parameters keep their names
//! only; its request hash is taken after the secrets are replaced, so the
//! same question asked with two keys hashes the same.

use std::cell::RefCell;
use std::future::Future;
use std::time::Instant;

use model::RequestReceipt;
use sha2::{Digest, Sha256};

use super::http::redact;
use crate::tenancy::credentials::hex;

tokio::task_local! {
    static SENT: RefCell<Vec<Noted>>;
}

/// One request as noted so far.
struct Noted {
    receipt: RequestReceipt,
    started: Instant,
    finished: bool,
}

/// Runs `work`, keeping a receipt of every request it sends; a request
/// still unanswered when `work` ends (it timed out) is kept without a status.
pub async fn recording<F: Future>(work: F) -> (F::Output, Vec<RequestReceipt>) {
    SENT.scope(RefCell::new(Vec::new()), async move {
        let output = work.await;
        let sent = SENT.with(RefCell::take);
        let receipts = sent
            .into_iter()
            .map(|mut noted| {
                if !noted.finished {
                    noted.receipt.latency_ms = elapsed_ms(noted.started);
                }
                noted.receipt
            })
            .collect();
        (output, receipts)
    })
    .await
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A request on its way, noted in the recording this task runs in (if any).
pub(crate) struct Sending(Option<usize>);

impl Sending {
    /// Notes `request` as sent now.
    pub(crate) fn start(request: &reqwest::Request, secrets: &[&str]) -> Self {
        let url = request.url();
        let host = match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            (None, _) => String::new(),
        };
        let receipt = RequestReceipt {
            method: request.method().as_str().to_owned(),
            host: redact(&host, secrets),
            path: redact(url.path(), secrets),
            params: url
                .query_pairs()
                .map(|(name, _)| name.into_owned())
                .collect(),
            status: None,
            bytes: 0,
            latency_ms: 0,
            request_hash: Some(request_hash(request, secrets)),
            payload_hash: None,
        };
        let noted = Noted {
            receipt,
            started: Instant::now(),
            finished: false,
        };
        Self(
            SENT.try_with(|sent| {
                let mut sent = sent.borrow_mut();
                sent.push(noted);
                sent.len() - 1
            })
            .ok(),
        )
    }

    fn update(&self, change: impl FnOnce(&mut Noted)) {
        if let Some(at) = self.0 {
            let _ = SENT.try_with(|sent| {
                if let Some(noted) = sent.borrow_mut().get_mut(at) {
                    change(noted);
                }
            });
        }
    }

    /// The provider answered with `status`.
    pub(crate) fn answered(&self, status: reqwest::StatusCode) {
        self.update(|noted| noted.receipt.status = Some(status.as_u16()));
    }

    /// The answer's body was read whole: its hash joins the receipt.
    pub(crate) fn payload(&self, body: &[u8]) {
        let hash = hex(&Sha256::digest(body));
        self.update(|noted| noted.receipt.payload_hash = Some(hash));
    }

    /// The exchange is over, `bytes` of body read (or none: it failed).
    pub(crate) fn finish(&self, bytes: usize) {
        self.update(|noted| {
            noted.receipt.bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
            noted.receipt.latency_ms = elapsed_ms(noted.started);
            noted.finished = true;
        });
    }
}

/// SHA-256 of a request with `secrets` replaced: method, host, path, each
/// query parameter as `name=value`, and the body, a line each (the body
/// last), so no two different requests read the same.
fn request_hash(request: &reqwest::Request, secrets: &[&str]) -> String {
    let url = request.url();
    let mut text = format!(
        "{}\n{}\n{}\n",
        request.method(),
        url.host_str().unwrap_or_default(),
        url.path()
    );
    if let Some(port) = url.port() {
        text.push_str(&format!("port={port}\n"));
    }
    for (name, value) in url.query_pairs() {
        text.push_str(&format!("{name}={value}\n"));
    }
    text.push('\n');
    if let Some(body) = request.body().and_then(reqwest::Body::as_bytes) {
        text.push_str(&String::from_utf8_lossy(body));
    }
    hex(&Sha256::digest(redact(&text, secrets).as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_recording_keeps_names_not_values_and_scrubs_secrets_from_the_path() {
        let client = reqwest::Client::new();
        let request = client
            .get("http://127.0.0.1:9/v1/sk-SECRET/search?q=Acme&api_key=sk-SECRET")
            .build()
            .unwrap();
        let ((), receipts) = recording(async {
            let sending = Sending::start(&request, &["sk-SECRET"]);
            sending.answered(reqwest::StatusCode::OK);
            sending.finish(1234);
            // Sent and never answered: kept without a status.
            Sending::start(&request, &["sk-SECRET"]);
        })
        .await;
        assert_eq!(receipts.len(), 2);
        let first = &receipts[0];
        assert_eq!(first.method, "GET");
        assert_eq!(first.host, "127.0.0.1:9");
        assert_eq!(first.path, "/v1/***/search");
        assert_eq!(first.params, ["q", "api_key"]);
        assert_eq!((first.status, first.bytes), (Some(200), 1234));
        assert_eq!(receipts[1].status, None);
        assert!(!format!("{receipts:?}").contains("SECRET"));
        assert!(!format!("{receipts:?}").contains("Acme"));
    }

    /// The receipt of one request, answered with `body`.
    async fn receipt_of(request: reqwest::Request, secret: &str, body: &[u8]) -> RequestReceipt {
        let ((), mut receipts) = recording(async {
            let sending = Sending::start(&request, &[secret]);
            sending.answered(reqwest::StatusCode::OK);
            sending.payload(body);
            sending.finish(body.len());
        })
        .await;
        receipts.remove(0)
    }

    #[tokio::test]
    async fn the_hashes_tell_questions_and_answers_apart_and_never_a_key() {
        let client = reqwest::Client::new();
        let get = |q: &str, key: &str| {
            client
                .get(format!(
                    "https://api.example.com/v1/search?q={q}&api_key={key}"
                ))
                .build()
                .unwrap()
        };
        let post = |q: &str, key: &str| {
            client
                .post("https://api.example.com/search")
                .body(format!(r#"{{"query": "{q}", "api_key": "{key}"}}"#))
                .build()
                .unwrap()
        };
        let acme_a = receipt_of(get("Acme", "sk-AAAA"), "sk-AAAA", b"[1]").await;
        let acme_b = receipt_of(get("Acme", "sk-BBBB"), "sk-BBBB", b"[1]").await;
        let bolt = receipt_of(get("Bolt", "sk-AAAA"), "sk-AAAA", b"[2]").await;
        // Asked with two keys, one question; asked of another name, another.
        assert_eq!(acme_a.request_hash, acme_b.request_hash);
        assert_ne!(acme_a.request_hash, bolt.request_hash);
        assert_eq!(acme_a.payload_hash, acme_b.payload_hash);
        assert_ne!(acme_a.payload_hash, bolt.payload_hash);
        // A body is part of the question, with its key removed too.
        let body_a = receipt_of(post("Acme", "sk-AAAA"), "sk-AAAA", b"").await;
        let body_b = receipt_of(post("Acme", "sk-BBBB"), "sk-BBBB", b"").await;
        let body_bolt = receipt_of(post("Bolt", "sk-AAAA"), "sk-AAAA", b"").await;
        assert_eq!(body_a.request_hash, body_b.request_hash);
        assert_ne!(body_a.request_hash, body_bolt.request_hash);
        // The hash of the question with its key in is not the one kept.
        let unredacted = hex(&Sha256::digest(
            b"GET\napi.example.com\n/v1/search\nq=Acme\napi_key=sk-AAAA\n\n",
        ));
        let redacted = hex(&Sha256::digest(
            b"GET\napi.example.com\n/v1/search\nq=Acme\napi_key=***\n\n",
        ));
        assert_eq!(acme_a.request_hash.as_deref(), Some(redacted.as_str()));
        assert_ne!(acme_a.request_hash.as_deref(), Some(unredacted.as_str()));
        assert_eq!(
            acme_a.payload_hash.as_deref(),
            Some(hex(&Sha256::digest(b"[1]")).as_str())
        );
    }

    #[tokio::test]
    async fn outside_a_recording_nothing_is_kept_and_nothing_fails() {
        let request = reqwest::Client::new()
            .get("http://127.0.0.1:9/")
            .build()
            .unwrap();
        let sending = Sending::start(&request, &[]);
        sending.answered(reqwest::StatusCode::OK);
        sending.finish(1);
    }
}
