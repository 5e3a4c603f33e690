//! Google's key-based APIs: the Knowledge Graph Search API
//! (`kgsearch.googleapis.com/v1/entities:search`) and the YouTube Data API
//! (`youtube/v3/search?type=channel`). Both answer a bad key with 400
//! "API key not valid" and a spent quota with 403 `quotaExceeded` /
//! `rateLimitExceeded`; both are classified here, once.
//! Code, not a manifest: two APIs sharing one way of saying "bad key" and
//! "quota spent" in a 400/403 body.

use std::time::Duration;

use async_trait::async_trait;
use model::{BuiltinCapability as B, Capability, ConnectorProfile, CostTier, RateHints};
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::Value;

use super::Endpoint;
use crate::connectors::http::{classify_status, parse_json, redact};
use crate::connectors::registry::Registration;
use crate::connectors::seam::{Connector, ConnectorResult, FireError, FireOpts, Found};

pub const KG_ID: &str = "google-kg";
pub const KG_KEY_VAR: &str = "GOOGLE_KG_API_KEY";
pub const KG_BASE: &str = "https://kgsearch.googleapis.com";
pub const YOUTUBE_ID: &str = "youtube";
pub const YOUTUBE_KEY_VAR: &str = "YOUTUBE_API_KEY";
pub const YOUTUBE_BASE: &str = "https://www.googleapis.com";

/// Google's error body: `{"error": {"code", "message", "status", "errors": [{"reason"}]}}`.
pub(super) fn google_error(
    provider: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    key: &str,
) -> Option<FireError> {
    if status.is_success() {
        return None;
    }
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let message = parsed["error"]["message"].as_str().unwrap_or_default();
    let reasons: Vec<&str> = parsed["error"]["errors"]
        .as_array()
        .map(|e| e.iter().filter_map(|x| x["reason"].as_str()).collect())
        .unwrap_or_default();
    let said = redact(
        &format!("{provider} HTTP {}: {message}", status.as_u16()),
        &[key],
    );
    if message.contains("API key not valid") || reasons.contains(&"keyInvalid") {
        return Some(FireError::AuthFailed { reason: said });
    }
    if reasons.iter().any(|r| {
        matches!(
            *r,
            "quotaExceeded" | "rateLimitExceeded" | "dailyLimitExceeded"
        )
    }) {
        // Daily quotas reset at midnight Pacific time; without a hint, wait an hour.
        return Some(FireError::RateLimited {
            retry_after: crate::connectors::http::retry_after(headers)
                .or(Some(Duration::from_secs(3600))),
            reason: said,
        });
    }
    classify_status(provider, status, headers, body, &[key])
}

/// Sends a request to a Google API and reads its JSON answer, classifying
/// Google's own error bodies first.
async fn google_json<T: serde::de::DeserializeOwned>(
    http: &crate::connectors::http::Http,
    provider: &str,
    request: reqwest::RequestBuilder,
    key: &str,
) -> Result<T, FireError> {
    let (status, headers, body) = http.send(provider, request, &[key]).await?;
    if let Some(e) = google_error(provider, status, &headers, &body, key) {
        return Err(e);
    }
    parse_json(provider, &headers, &body, &[key])
}

pub fn kg_registration() -> Registration {
    Registration {
        profile: ConnectorProfile {
            id: KG_ID.to_owned(),
            display_name: "Google Knowledge Graph".to_owned(),
            short_label: "Google KG".to_owned(),
            capabilities: vec![B::FetchKnowledgeGraph.into()],
            cost_tier: CostTier::FreeTier,
            requires_env: vec![KG_KEY_VAR.to_owned()],
            rate_hints: RateHints {
                per_second: Some(5.0),
                daily_cap: Some(100_000),
            },
            cost: None,
        },
        suspends_on_errors: true,
    }
}

#[derive(Debug)]
pub struct KnowledgeGraph(pub Endpoint);

#[derive(Deserialize)]
struct KgAnswer {
    #[serde(default, rename = "itemListElement")]
    items: Vec<KgItem>,
}

#[derive(Deserialize)]
struct KgItem {
    #[serde(default)]
    result: Value,
    #[serde(default, rename = "resultScore")]
    score: Option<f64>,
}

#[async_trait]
impl Connector for KnowledgeGraph {
    async fn fire(
        &self,
        _intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let key = self.0.key(KG_KEY_VAR, opts)?;
        let base = self.0.base_or(KG_BASE);
        let limit = opts.max_results.clamp(1, 20).to_string();
        let request = self
            .0
            .http
            .client()
            .get(format!("{base}/v1/entities:search"))
            .query(&[
                ("query", query),
                ("key", key.as_str()),
                ("limit", limit.as_str()),
            ]);
        let answer: KgAnswer = google_json(&self.0.http, "Google KG", request, &key).await?;
        Ok(answer
            .items
            .into_iter()
            .filter_map(|item| {
                let r = &item.result;
                let name = r["name"].as_str()?.to_owned();
                // The entity's own site, else its described article, else Google's id page.
                let url = r["url"]
                    .as_str()
                    .or_else(|| r["detailedDescription"]["url"].as_str())
                    .map(str::to_owned)
                    .or_else(|| {
                        r["@id"].as_str().and_then(|id| id.strip_prefix("kg:")).map(|mid| {
                            format!("https://www.google.com/search?kgmid={mid}")
                        })
                    })?;
                Some(ConnectorResult {
                    url,
                    title: name,
                    snippet: r["detailedDescription"]["articleBody"]
                        .as_str()
                        .or_else(|| r["description"].as_str())
                        .unwrap_or_default()
                        .to_owned(),
                    raw: serde_json::json!({ "id": r["@id"], "types": r["@type"], "score": item.score }),
                })
            })
            .collect())
    }
}

pub fn youtube_registration() -> Registration {
    Registration {
        profile: ConnectorProfile {
            id: YOUTUBE_ID.to_owned(),
            display_name: "YouTube Data API".to_owned(),
            short_label: "YouTube".to_owned(),
            capabilities: vec![B::SocialYoutube.into()],
            cost_tier: CostTier::FreeTier,
            requires_env: vec![YOUTUBE_KEY_VAR.to_owned()],
            // A search costs 100 of the default 10,000 daily quota units.
            rate_hints: RateHints {
                per_second: Some(2.0),
                daily_cap: Some(100),
            },
            cost: None,
        },
        suspends_on_errors: true,
    }
}

#[derive(Debug)]
pub struct YouTube(pub Endpoint);

#[derive(Deserialize)]
struct YtAnswer {
    #[serde(default)]
    items: Vec<YtItem>,
}

#[derive(Deserialize)]
struct YtItem {
    #[serde(default)]
    id: Value,
    #[serde(default)]
    snippet: Value,
}

#[async_trait]
impl Connector for YouTube {
    async fn fire(
        &self,
        _intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let key = self.0.key(YOUTUBE_KEY_VAR, opts)?;
        let base = self.0.base_or(YOUTUBE_BASE);
        let max = opts.max_results.clamp(1, 25).to_string();
        let request = self
            .0
            .http
            .client()
            .get(format!("{base}/youtube/v3/search"))
            .query(&[
                ("part", "snippet"),
                ("type", "channel"),
                ("q", query),
                ("maxResults", max.as_str()),
                ("key", key.as_str()),
            ]);
        let answer: YtAnswer = google_json(&self.0.http, "YouTube", request, &key).await?;
        Ok(answer
            .items
            .into_iter()
            .filter_map(|item| {
                let channel = item.id["channelId"].as_str()?;
                if !channel.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
                    return None;
                }
                Some(ConnectorResult {
                    url: format!("https://www.youtube.com/channel/{channel}"),
                    title: item.snippet["title"].as_str().unwrap_or(channel).to_owned(),
                    snippet: item.snippet["description"].as_str().unwrap_or_default().to_owned(),
                    raw: serde_json::json!({ "channel_id": channel, "published": item.snippet["publishedAt"] }),
                })
            })
            .collect())
    }
}
