//! Tavily: `POST /search` (web, news, social intents through
//! `include_domains`), `POST /extract` (crawl.extract) and `POST /crawl`
//! (crawl.site), with `Authorization: Bearer <TAVILY_API_KEY>`.
//! Code, not a manifest: three endpoints by intent, each with its own body
//! and answer shape.

use async_trait::async_trait;
use model::{
    Amount, BuiltinCapability as B, Capability, ConnectorProfile, Cost, CostTier, RateHints,
};
use serde::Deserialize;
use serde_json::json;

use super::page::{at_most, PageText, MAX_TEXT_CHARS};
use super::social;
use super::Endpoint;
use crate::connectors::registry::Registration;
use crate::connectors::seam::{Connector, ConnectorResult, FireError, FireOpts, Found};
use crate::urlnorm::parse_web_url;

pub const ID: &str = "tavily";
pub const KEY_VAR: &str = "TAVILY_API_KEY";
pub const BASE: &str = "https://api.tavily.com";

pub fn registration() -> Registration {
    let mut capabilities: Vec<Capability> = vec![
        B::SearchWeb.into(),
        B::SearchNews.into(),
        B::CrawlExtract.into(),
        B::CrawlSite.into(),
    ];
    capabilities.extend(social::social_capabilities());
    Registration {
        profile: ConnectorProfile {
            id: ID.to_owned(),
            display_name: "Tavily".to_owned(),
            short_label: "Tavily".to_owned(),
            capabilities,
            cost_tier: CostTier::FreeTier,
            requires_env: vec![KEY_VAR.to_owned()],
            rate_hints: RateHints {
                per_second: Some(2.0),
                daily_cap: None,
            },
            cost: Some(Cost {
                // A crawl maps and reads up to ten pages: 1 credit per 10 pages
                // mapped and 1 per 5 pages extracted.
                by_capability: [(B::CrawlSite.name().to_owned(), Amount::units(3))].into(),
                ..Cost::per_call(Amount::units(1), "Tavily credits")
            }),
        },
        suspends_on_errors: true,
    }
}

#[derive(Debug)]
pub struct Tavily(pub Endpoint);

#[derive(Deserialize)]
struct SearchAnswer {
    #[serde(default)]
    results: Vec<SearchHit>,
}

#[derive(Deserialize)]
struct SearchHit {
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    published_date: Option<String>,
}

#[derive(Deserialize)]
struct PagesAnswer {
    #[serde(default)]
    results: Vec<Page>,
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    url: String,
    #[serde(default)]
    raw_content: Option<String>,
}

fn excerpt(text: &str) -> String {
    text.split_whitespace()
        .take(60)
        .collect::<Vec<_>>()
        .join(" ")
}

#[async_trait]
impl Connector for Tavily {
    async fn fire(
        &self,
        intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let key = self.0.key(KEY_VAR, opts)?;
        let base = self.0.base_or(BASE);
        let secrets = [key.as_str()];
        let post = |path: &str, body: serde_json::Value| {
            self.0
                .http
                .client()
                .post(format!("{base}{path}"))
                .bearer_auth(&key)
                .json(&body)
        };
        match intent.name() {
            "crawl.extract" | "crawl.site" => {
                let Some(url) = parse_web_url(query) else {
                    return Err(FireError::Malformed {
                        reason: "Tavily: the record has no website to read (the query is not an http(s) address)".to_owned(),
                    });
                };
                let request = if intent.name() == "crawl.extract" {
                    post("/extract", json!({ "urls": [url.as_str()] }))
                } else {
                    post(
                        "/crawl",
                        json!({ "url": url.as_str(), "max_depth": 1, "limit": opts.max_results.max(1) }),
                    )
                };
                let answer: PagesAnswer = self.0.http.json("Tavily", request, &secrets).await?;
                let extract = intent.name() == "crawl.extract";
                Ok(answer
                    .results
                    .into_iter()
                    .map(|p| {
                        let text = p.raw_content.unwrap_or_default();
                        ConnectorResult {
                            title: p.url.clone(),
                            snippet: excerpt(&text),
                            url: p.url,
                            raw: if extract {
                                serde_json::to_value(PageText {
                                    content: at_most(text, MAX_TEXT_CHARS),
                                    ..PageText::default()
                                })
                                .unwrap_or_default()
                            } else {
                                serde_json::Value::Null
                            },
                        }
                    })
                    .collect())
            }
            _ => {
                let platform = social::platform(intent);
                let mut body = json!({
                    "query": query,
                    "max_results": opts.max_results.clamp(1, 20),
                    "topic": if intent.name() == "search.news" { "news" } else { "general" },
                });
                if let Some(p) = platform {
                    body["include_domains"] = json!(p.domains);
                }
                let answer: SearchAnswer = self
                    .0
                    .http
                    .json("Tavily", post("/search", body), &secrets)
                    .await?;
                let results = answer
                    .results
                    .into_iter()
                    .map(|h| ConnectorResult {
                        url: h.url,
                        title: h.title,
                        snippet: h.content,
                        raw: json!({ "score": h.score, "published": h.published_date }),
                    })
                    .collect();
                Ok(social::keep(platform, results).into())
            }
        }
    }
}
