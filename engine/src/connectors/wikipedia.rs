//! Wikipedia: the REST search (`GET /w/rest.php/v1/search/page?q=..&limit=..`)
//! of English Wikipedia; each page becomes `https://en.wikipedia.org/wiki/<key>`.

use async_trait::async_trait;
use model::{BuiltinCapability as B, Capability, CostTier, RateHints};
use serde::Deserialize;

use super::http::plain_text;
use super::Endpoint;
use crate::connector::{Connector, ConnectorResult, FireError, FireOpts, Found};
use crate::registry::Registration;

pub const ID: &str = "wikipedia";
pub const BASE: &str = "https://en.wikipedia.org";

pub fn registration() -> Registration {
    Registration {
        cost: None,
        suspends_on_errors: true,
        id: ID.to_owned(),
        display_name: "Wikipedia (English)".to_owned(),
        short_label: "Wikipedia".to_owned(),
        capabilities: vec![B::FetchWikipedia.into(), B::SearchWeb.into()],
        cost_tier: CostTier::Free,
        requires_env: Vec::new(),
        rate_hints: RateHints {
            per_second: Some(5.0),
            daily_cap: None,
        },
    }
}

#[derive(Debug)]
pub struct Wikipedia(pub Endpoint);

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    pages: Vec<Page>,
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    key: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    excerpt: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

#[async_trait]
impl Connector for Wikipedia {
    async fn fire(
        &self,
        _intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let base = self.0.base_or(BASE);
        let limit = opts.max_results.clamp(1, 20).to_string();
        let request = self
            .0
            .http
            .client()
            .get(format!("{base}/w/rest.php/v1/search/page"))
            .query(&[("q", query), ("limit", limit.as_str())]);
        let answer: Answer = self.0.http.json("Wikipedia", request, &[]).await?;
        Ok(answer
            .pages
            .into_iter()
            .filter(|p| !p.key.is_empty())
            .map(|p| {
                let snippet = match (&p.description, &p.excerpt) {
                    (Some(d), Some(e)) => format!("{d}: {}", plain_text(e)),
                    (Some(d), None) => d.clone(),
                    (None, Some(e)) => plain_text(e),
                    (None, None) => String::new(),
                };
                ConnectorResult {
                    url: format!("https://en.wikipedia.org/wiki/{}", urlencode_path(&p.key)),
                    title: p.title,
                    snippet,
                    raw: serde_json::json!({ "page_id": p.id }),
                }
            })
            .collect())
    }
}

/// Percent-encodes a page key for a URL path (keeps letters, digits and `_-.~()`).
fn urlencode_path(key: &str) -> String {
    key.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"_-.~()',".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
