//! A typed client of the REST door for tests: `server.as_(&client)` (or
//! `server.me()` for the test user) acts as one person, and each call
//! answers the wire type the door documents, or fails the test with the
//! status and body it got. Tests then read as what a person does:
//! `let set = me.import("Set", "test", csv).await;
//! me.fire_through(record, "news", Some("lister"))`.

use model::{Envelope, FireReport, ImportReport, Item, RecordsPage, TriageVerb};
use reqwest::{Method, RequestBuilder};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::TestServer;

/// What the door answered when it refused: its status and the error body
/// every refusal carries (`error`, a kind; `detail`, in words).
#[derive(Debug, serde::Deserialize)]
pub struct Refusal {
    #[serde(skip)]
    pub status: u16,
    pub error: String,
    pub detail: String,
}

/// One person at the REST door of a test server.
pub struct As<'a> {
    server: &'a TestServer,
    client: &'a reqwest::Client,
}

impl TestServer {
    /// The REST door as the person `client` acts for.
    pub fn as_<'a>(&'a self, client: &'a reqwest::Client) -> As<'a> {
        As {
            server: self,
            client,
        }
    }

    /// The REST door as the test user (an admin of the test workspace).
    pub fn me(&self) -> As<'_> {
        self.as_(&self.client)
    }
}

impl As<'_> {
    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.server.at(path))
    }

    /// Sends `request` and reads its answer as `T`, failing the test unless
    /// the status is `expect`.
    async fn answer<T: DeserializeOwned>(&self, request: RequestBuilder, expect: u16) -> T {
        let res = request.send().await.expect("the server answers");
        let status = res.status().as_u16();
        let url = res.url().path().to_owned();
        let text = res.text().await.expect("an answer body");
        assert_eq!(status, expect, "{url} answered {status}: {text}");
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{url} answered what its type does not read ({e}): {text}"))
    }

    /// Sends `request`, which the door must refuse, and reads its refusal.
    async fn refusal(&self, request: RequestBuilder) -> Refusal {
        let res = request.send().await.expect("the server answers");
        let status = res.status().as_u16();
        let url = res.url().path().to_owned();
        let text = res.text().await.expect("an answer body");
        assert!(
            status >= 400,
            "{url} answered {status}, not a refusal: {text}"
        );
        let mut refusal: Refusal = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{url}'s refusal is not an error body ({e}): {text}"));
        refusal.status = status;
        refusal
    }

    fn import_request(&self, name: &str, bundle: &str, csv: &str) -> RequestBuilder {
        self.request(Method::POST, "/api/record-sets")
            .query(&[("name", name), ("bundle", bundle)])
            .header("content-type", "text/csv")
            .body(csv.to_owned())
    }

    /// Imports a CSV as a record set shown under `bundle`.
    pub async fn import(&self, name: &str, bundle: &str, csv: &str) -> ImportReport {
        self.answer(self.import_request(name, bundle, csv), 201)
            .await
    }

    /// An import the door refuses, and why.
    pub async fn import_refused(&self, name: &str, bundle: &str, csv: &str) -> Refusal {
        self.refusal(self.import_request(name, bundle, csv)).await
    }

    /// The first page (up to 500) of a set's records, with their chips.
    pub async fn records(&self, set_id: i64) -> RecordsPage {
        let path = format!("/api/record-sets/{set_id}/records?limit=500");
        self.answer(self.request(Method::GET, &path), 200).await
    }

    /// The ids of a set's records, in file order.
    pub async fn record_ids(&self, set_id: i64) -> Vec<i64> {
        self.records(set_id)
            .await
            .records
            .iter()
            .map(|r| r.id)
            .collect()
    }

    /// Fires `pack` on a record through one connector (the menu's choice).
    pub async fn fire_through(
        &self,
        record_id: i64,
        pack: &str,
        connector: Option<&str>,
    ) -> Envelope<FireReport> {
        let request = self
            .request(Method::POST, &format!("/api/records/{record_id}/fire"))
            .json(&json!({ "pack": pack, "connector": connector }));
        self.answer(request, 200).await
    }

    /// Fires `pack` on a record (optionally through one connector) and
    /// answers what the fire did; the fire must end, `failed` exactly when
    /// connectors were tried and none answered.
    pub async fn fire(&self, record_id: i64, pack: &str, connector: Option<&str>) -> FireReport {
        let mut envelope = self.fire_through(record_id, pack, connector).await;
        let report = &envelope.results[0];
        let answered = report.attempts.iter().any(|a| {
            matches!(
                a.end.outcome,
                Some(model::FireOutcome::Found | model::FireOutcome::NotFound)
            )
        });
        let expected = if report.attempts.is_empty() || answered {
            model::EnvelopeStatus::Completed
        } else {
            model::EnvelopeStatus::Failed
        };
        assert_eq!(envelope.status, expected, "{envelope:?}");
        assert_eq!(envelope.results.len(), 1, "{envelope:?}");
        envelope.results.remove(0)
    }

    /// A chip's connector menu: every connector serving `pack`'s intent,
    /// as this person sees it.
    pub async fn menu(&self, record_id: i64, pack: &str) -> model::ConnectorMenu {
        let path = format!("/api/records/{record_id}/menu/{pack}");
        self.answer(self.request(Method::GET, &path), 200).await
    }

    /// A record's items, as the curated layer holds them.
    pub async fn items(&self, record_id: i64) -> Vec<Item> {
        let path = format!("/api/records/{record_id}/items");
        self.answer(self.request(Method::GET, &path), 200).await
    }

    /// Triages an item at the version the caller saw.
    pub async fn triage(&self, item_id: i64, verb: TriageVerb, version: i64) -> Item {
        let request = self
            .request(Method::POST, &format!("/api/items/{item_id}/triage"))
            .json(&json!({ "verb": verb, "version": version }));
        self.answer(request, 200).await
    }
}
