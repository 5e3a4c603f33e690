//! The requests an attempt sends, kept for its receipt. The dispatcher runs
//! each attempt inside [`recording`]; every request sent through this
//! module's [`Sending`] (the shared HTTP plumbing and the site crawler) is
//! noted there, so no adapter can forget to leave one. Outside a recording
//! (a manifest's test fire), nothing is kept. A receipt holds no secret: the
//! path is scrubbed of the call's secrets and parameters keep their names only.

use std::cell::RefCell;
use std::future::Future;
use std::time::Instant;

use model::RequestReceipt;

use super::http::redact;

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

    /// The exchange is over, `bytes` of body read (or none: it failed).
    pub(crate) fn finish(&self, bytes: usize) {
        self.update(|noted| {
            noted.receipt.bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
            noted.receipt.latency_ms = elapsed_ms(noted.started);
            noted.finished = true;
        });
    }
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
