//! Brave Search API: `GET /res/v1/web/search` and `/res/v1/news/search` with
//! `X-Subscription-Token`. A 429 waits for the first `X-RateLimit-Reset` window.
//! Code, not a manifest: the endpoint follows the intent, and a 429 waits
//! for the window its rate-limit headers name.

use std::time::Duration;

use async_trait::async_trait;
use model::{
    Amount, BuiltinCapability as B, Capability, ConnectorProfile, Cost, CostTier, RateHints,
};
use serde::Deserialize;

use super::social;
use super::Endpoint;
use crate::connectors::http::{classify_status, parse_json, plain_text};
use crate::connectors::registry::Registration;
use crate::connectors::seam::{Connector, ConnectorResult, FireError, FireOpts, Found};

pub const ID: &str = "brave";
pub const KEY_VAR: &str = "BRAVE_API_KEY";
pub const BASE: &str = "https://api.search.brave.com";

pub fn registration() -> Registration {
    let mut capabilities: Vec<Capability> = vec![B::SearchWeb.into(), B::SearchNews.into()];
    capabilities.extend(social::social_capabilities());
    Registration {
        profile: ConnectorProfile {
            id: ID.to_owned(),
            display_name: "Brave Search".to_owned(),
            short_label: "Brave".to_owned(),
            capabilities,
            cost_tier: CostTier::FreeTier,
            requires_env: vec![KEY_VAR.to_owned()],
            rate_hints: RateHints {
                per_second: Some(1.0),
                daily_cap: None,
            },
            cost: Some(Cost::per_call(Amount::units(1), "Brave requests")),
        },
        suspends_on_errors: true,
    }
}

#[derive(Debug)]
pub struct Brave(pub Endpoint);

#[derive(Deserialize)]
struct WebAnswer {
    #[serde(default)]
    web: Option<Results>,
    #[serde(default)]
    results: Option<Vec<Hit>>,
}

#[derive(Deserialize)]
struct Results {
    #[serde(default)]
    results: Vec<Hit>,
}

#[derive(Deserialize)]
struct Hit {
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    age: Option<String>,
}

#[async_trait]
impl Connector for Brave {
    async fn fire(
        &self,
        intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let key = self.0.key(KEY_VAR, opts)?;
        let base = self.0.base_or(BASE);
        let (q, platform) = social::prepare(intent, query);
        let path = if intent.name() == "search.news" {
            "news"
        } else {
            "web"
        };
        let count = opts.max_results.clamp(1, 20).to_string();
        let request = self
            .0
            .http
            .client()
            .get(format!("{base}/res/v1/{path}/search"))
            .header("X-Subscription-Token", &key)
            .header("Accept", "application/json")
            .query(&[("q", q.as_str()), ("count", count.as_str())]);
        let secrets = [key.as_str()];
        let (status, headers, body) = self.0.http.send("Brave", request, &secrets).await?;
        if status.as_u16() == 422
            && String::from_utf8_lossy(&body).contains("SUBSCRIPTION_TOKEN_INVALID")
        {
            return Err(FireError::AuthFailed {
                reason: "Brave HTTP 422: the subscription token is invalid".to_owned(),
            });
        }
        if let Some(mut e) = classify_status("Brave", status, &headers, &body, &secrets) {
            if let FireError::RateLimited { retry_after, .. } = &mut e {
                // "X-RateLimit-Reset: 1, 1419200": seconds until each window resets.
                let reset = headers
                    .get("x-ratelimit-reset")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.split(',').next())
                    .and_then(|v| v.trim().parse::<u64>().ok());
                if retry_after.is_none() {
                    *retry_after = reset.map(Duration::from_secs);
                }
            }
            return Err(e);
        }
        let answer: WebAnswer = parse_json("Brave", &headers, &body, &secrets)?;
        let hits = answer
            .web
            .map(|w| w.results)
            .or(answer.results)
            .unwrap_or_default();
        let results = hits
            .into_iter()
            .map(|h| ConnectorResult {
                url: h.url,
                title: plain_text(&h.title),
                snippet: plain_text(&h.description),
                raw: serde_json::json!({ "age": h.age }),
            })
            .collect();
        Ok(social::keep(platform, results).into())
    }
}
