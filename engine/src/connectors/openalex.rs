//! OpenAlex: `GET /works?search=..` for scholarly works; a polite `mailto`
//! from `OPENALEX_MAILTO` when set (OpenAlex's "polite pool").

use async_trait::async_trait;
use model::{BuiltinCapability as B, Capability, CostTier, RateHints};
use serde::Deserialize;

use super::env;
use super::Endpoint;
use crate::connector::{Connector, ConnectorResult, FireError, FireOpts, Found};
use crate::registry::Registration;

pub const ID: &str = "openalex";
pub const BASE: &str = "https://api.openalex.org";
pub const MAILTO_VAR: &str = "OPENALEX_MAILTO";

pub fn registration() -> Registration {
    Registration {
        cost: None,
        suspends_on_errors: true,
        id: ID.to_owned(),
        display_name: "OpenAlex".to_owned(),
        short_label: "OpenAlex".to_owned(),
        capabilities: vec![B::SearchScholar.into()],
        cost_tier: CostTier::Free,
        requires_env: Vec::new(),
        rate_hints: RateHints {
            per_second: Some(5.0),
            daily_cap: None,
        },
    }
}

#[derive(Debug)]
pub struct OpenAlex(pub Endpoint);

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    results: Vec<Work>,
}

#[derive(Deserialize)]
struct Work {
    #[serde(default)]
    id: String,
    #[serde(default)]
    doi: Option<String>,
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    publication_year: Option<i32>,
    #[serde(default)]
    cited_by_count: Option<u64>,
    #[serde(default)]
    primary_location: Option<serde_json::Value>,
}

#[async_trait]
impl Connector for OpenAlex {
    async fn fire(
        &self,
        _intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let base = self.0.base_or(BASE);
        let per_page = opts.max_results.clamp(1, 25).to_string();
        let mut params = vec![("search", query.to_owned()), ("per-page", per_page)];
        if let Some(mailto) = env::optional(MAILTO_VAR, opts) {
            params.push(("mailto", mailto));
        }
        let request = self
            .0
            .http
            .client()
            .get(format!("{base}/works"))
            .query(&params);
        let answer: Answer = self.0.http.json("OpenAlex", request, &[]).await?;
        Ok(answer
            .results
            .into_iter()
            .map(|w| {
                let venue = w
                    .primary_location
                    .as_ref()
                    .and_then(|l| l["source"]["display_name"].as_str())
                    .map(str::to_owned);
                let snippet = [w.publication_year.map(|y| y.to_string()), venue.clone()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(", ");
                ConnectorResult {
                    url: w.doi.clone().filter(|d| d.starts_with("https://")).unwrap_or_else(|| w.id.clone()),
                    title: w.display_name.unwrap_or_else(|| w.id.clone()),
                    snippet,
                    raw: serde_json::json!({ "openalex": w.id, "year": w.publication_year, "cited_by": w.cited_by_count, "venue": venue }),
                }
            })
            .collect())
    }
}
