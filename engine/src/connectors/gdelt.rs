//! GDELT DOC 2.0 API: `GET /api/v2/doc/doc?query=..&mode=ArtList&format=json`,
//! recent news articles. GDELT explains a refused query in plain text with
//! status 200; that is reported as such, not as broken JSON.

use async_trait::async_trait;
use model::{BuiltinCapability as B, Capability, CostTier, RateHints};
use serde::Deserialize;

use super::http::{classify_status, parse_json};
use super::Endpoint;
use crate::connector::{Connector, ConnectorResult, FireError, FireOpts, Found};
use crate::registry::Registration;

pub const ID: &str = "gdelt";
pub const BASE: &str = "https://api.gdeltproject.org";

pub fn registration() -> Registration {
    Registration {
        cost: None,
        suspends_on_errors: true,
        id: ID.to_owned(),
        display_name: "GDELT news".to_owned(),
        short_label: "GDELT".to_owned(),
        capabilities: vec![B::SearchNews.into()],
        cost_tier: CostTier::Free,
        requires_env: Vec::new(),
        // GDELT asks for no more than one request every five seconds.
        rate_hints: RateHints {
            per_second: Some(0.2),
            daily_cap: None,
        },
    }
}

#[derive(Debug)]
pub struct Gdelt(pub Endpoint);

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    articles: Vec<Article>,
}

#[derive(Deserialize)]
struct Article {
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    seendate: Option<String>,
    #[serde(default)]
    domain: Option<String>,
    #[serde(default)]
    language: Option<String>,
}

#[async_trait]
impl Connector for Gdelt {
    async fn fire(
        &self,
        _intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let base = self.0.base_or(BASE);
        // An exact phrase: the entity's name, not its words anywhere.
        let phrase = format!("\"{}\"", query.replace('"', ""));
        let max = opts.max_results.clamp(1, 75).to_string();
        let request = self
            .0
            .http
            .client()
            .get(format!("{base}/api/v2/doc/doc"))
            .query(&[
                ("query", phrase.as_str()),
                ("mode", "ArtList"),
                ("format", "json"),
                ("maxrecords", max.as_str()),
                ("sort", "DateDesc"),
            ]);
        let (status, headers, body) = self.0.http.send("GDELT", request, &[]).await?;
        if let Some(e) = classify_status("GDELT", status, &headers, &body, &[]) {
            return Err(e);
        }
        let text = String::from_utf8_lossy(&body);
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed == "{}" {
            return Ok(Found::default());
        }
        if !trimmed.starts_with('{') && !trimmed.starts_with('<') {
            let said: String = trimmed.chars().take(160).collect();
            return Err(FireError::Malformed {
                reason: format!("GDELT refused the query: {said}"),
            });
        }
        let answer: Answer = parse_json("GDELT", &headers, &body, &[])?;
        Ok(answer
            .articles
            .into_iter()
            .map(|a| ConnectorResult {
                url: a.url,
                title: a.title,
                snippet: [a.domain.clone(), a.seendate.clone()].into_iter().flatten().collect::<Vec<_>>().join(", "),
                raw: serde_json::json!({ "seen": a.seendate, "domain": a.domain, "language": a.language }),
            })
            .collect())
    }
}
