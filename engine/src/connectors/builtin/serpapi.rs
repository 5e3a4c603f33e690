//! SerpApi: `GET /search.json` with the engine chosen by intent, as the spec
//! says (`google` for web and social intents, `google_news`, `google_scholar`,
//! and the Google Maps engines for the maps intents, in `serpapi_maps`),
//! the key in `api_key`. An answer of "no results" is not found, not an error.
//! Code, not a manifest: the engine (and so the answer's shape) is chosen
//! by intent.

use async_trait::async_trait;
use model::{
    Amount, BuiltinCapability as B, Capability, ConnectorProfile, Cost, CostTier, RateHints,
};
use serde::Deserialize;

use super::social;
use super::Endpoint;
use crate::connectors::http::{classify_status, parse_json};
use crate::connectors::registry::Registration;
use crate::connectors::seam::{Connector, ConnectorResult, FireError, FireOpts, Found};

pub const ID: &str = "serpapi";
pub const KEY_VAR: &str = "SERPAPI_API_KEY";
pub const BASE: &str = "https://serpapi.com";

pub fn registration() -> Registration {
    let mut capabilities: Vec<Capability> = vec![
        B::SearchWeb.into(),
        B::SearchNews.into(),
        B::SearchScholar.into(),
        B::MapsSearch.into(),
        B::MapsPlace.into(),
        B::MapsReviews.into(),
    ];
    capabilities.extend(social::social_capabilities());
    Registration {
        profile: ConnectorProfile {
            id: ID.to_owned(),
            display_name: "Google via SerpApi".to_owned(),
            short_label: "SerpApi/G".to_owned(),
            capabilities,
            cost_tier: CostTier::Paid,
            requires_env: vec![KEY_VAR.to_owned()],
            rate_hints: RateHints {
                per_second: Some(1.0),
                daily_cap: Some(500),
            },
            // "Only successful and processing searches are counted towards
            // your searches per month, errored or failed searches are not"
            // (SerpApi's Account API documentation).
            cost: Some(Cost {
                bills_errors: false,
                ..Cost::per_call(Amount::units(1), "SerpApi searches")
            }),
        },
        suspends_on_errors: true,
    }
}

#[derive(Debug)]
pub struct SerpApi(pub Endpoint);

/// The SerpApi engine serving an intent.
pub fn engine_for(intent: &Capability) -> &'static str {
    match intent.name() {
        "search.news" => "google_news",
        "search.scholar" => "google_scholar",
        _ => "google",
    }
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    organic_results: Vec<Hit>,
    #[serde(default)]
    news_results: Vec<Hit>,
}

#[derive(Deserialize)]
struct Hit {
    #[serde(default)]
    link: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    snippet: Option<String>,
    #[serde(default)]
    position: Option<u32>,
    #[serde(default)]
    date: Option<String>,
    #[serde(default)]
    source: Option<serde_json::Value>,
}

#[async_trait]
impl Connector for SerpApi {
    async fn fire(
        &self,
        intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let key = self.0.key(KEY_VAR, opts)?;
        if let Some(maps) = super::places::MapsIntent::of(intent) {
            return super::serpapi_maps::fire(&self.0, maps, query, opts, &key).await;
        }
        let base = self.0.base_or(BASE);
        let (q, platform) = social::prepare(intent, query);
        let engine = engine_for(intent);
        let num = opts.max_results.clamp(1, 20).to_string();
        let mut params = vec![
            ("engine", engine),
            ("q", q.as_str()),
            ("api_key", key.as_str()),
        ];
        if engine == "google" {
            params.push(("num", num.as_str()));
        }
        let request = self
            .0
            .http
            .client()
            .get(format!("{base}/search.json"))
            .query(&params);
        let secrets = [key.as_str()];
        let (status, headers, body) = self.0.http.send("SerpApi", request, &secrets).await?;
        // SerpApi states a spent plan as 429 and a bad key as 401, with {"error"}.
        if let Some(e) = classify_status("SerpApi", status, &headers, &body, &secrets) {
            return Err(e);
        }
        let answer: Answer = parse_json("SerpApi", &headers, &body, &secrets)?;
        if let Some(error) = answer.error {
            if error.contains("hasn't returned any results") {
                return Ok(Found::default());
            }
            return Err(FireError::Malformed {
                reason: crate::connectors::http::redact(&format!("SerpApi: {error}"), &secrets),
            });
        }
        let hits = if answer.news_results.is_empty() {
            answer.organic_results
        } else {
            answer.news_results
        };
        let results = hits
            .into_iter()
            .map(|h| ConnectorResult {
                url: h.link,
                title: h.title,
                snippet: h.snippet.unwrap_or_default(),
                raw: serde_json::json!({ "engine": engine, "position": h.position, "date": h.date, "source": h.source }),
            })
            .collect();
        Ok(social::keep(platform, results).into())
    }
}
