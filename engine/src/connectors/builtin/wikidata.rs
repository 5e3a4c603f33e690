//! Wikidata: `wbsearchentities` finds the entity, `wbgetentities` reads its
//! claims. For `fetch.knowledge_graph` the entities themselves are the
//! results (with the official website); for social intents the handle
//! properties become profile URLs.
//! Code, not a manifest: two requests, the second built from the first's
//! answer, and claims turned into profile URLs per platform.

use async_trait::async_trait;
use model::{BuiltinCapability as B, Capability, ConnectorProfile, CostTier, RateHints};
use serde::Deserialize;
use serde_json::Value;

use super::Endpoint;
use crate::connectors::registry::Registration;
use crate::connectors::seam::{Connector, ConnectorResult, FireError, FireOpts, Found};

pub const ID: &str = "wikidata";
pub const BASE: &str = "https://www.wikidata.org";

/// Handle properties: (platform, property, how a handle becomes a URL).
const HANDLES: &[(&str, &str, &str)] = &[
    ("x", "P2002", "https://x.com/{}"),
    ("facebook", "P2013", "https://www.facebook.com/{}"),
    ("instagram", "P2003", "https://www.instagram.com/{}"),
    ("linkedin", "P4264", "https://www.linkedin.com/company/{}"),
    ("youtube", "P2397", "https://www.youtube.com/channel/{}"),
    ("tiktok", "P7085", "https://www.tiktok.com/@{}"),
    ("bluesky", "P12361", "https://bsky.app/profile/{}"),
    ("threads", "P11892", "https://www.threads.net/@{}"),
];
const OFFICIAL_WEBSITE: &str = "P856";
const ENTITIES: usize = 3;

pub fn registration() -> Registration {
    let mut capabilities: Vec<Capability> = vec![B::FetchKnowledgeGraph.into()];
    capabilities.extend(
        HANDLES
            .iter()
            .filter_map(|(p, _, _)| format!("search.social.{p}").parse().ok()),
    );
    Registration {
        profile: ConnectorProfile {
            id: ID.to_owned(),
            display_name: "Wikidata".to_owned(),
            short_label: "Wikidata".to_owned(),
            capabilities,
            cost_tier: CostTier::Free,
            requires_env: Vec::new(),
            rate_hints: RateHints {
                per_second: Some(5.0),
                daily_cap: None,
            },
            cost: None,
        },
        suspends_on_errors: true,
    }
}

#[derive(Debug)]
pub struct Wikidata(pub Endpoint);

#[derive(Deserialize)]
struct Search {
    #[serde(default)]
    search: Vec<Hit>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Hit {
    id: String,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// The string values of a property's claims.
fn claim_strings(entity: &Value, property: &str) -> Vec<String> {
    entity["claims"][property]
        .as_array()
        .map(|claims| {
            claims
                .iter()
                .filter_map(|c| {
                    c["mainsnak"]["datavalue"]["value"]
                        .as_str()
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default()
}

#[async_trait]
impl Connector for Wikidata {
    async fn fire(
        &self,
        intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let base = self.0.base_or(BASE);
        let api = format!("{base}/w/api.php");
        let limit = ENTITIES.to_string();
        let search: Search = self
            .0
            .http
            .json(
                "Wikidata",
                self.0.http.client().get(&api).query(&[
                    ("action", "wbsearchentities"),
                    ("search", query),
                    ("language", "en"),
                    ("type", "item"),
                    ("format", "json"),
                    ("limit", limit.as_str()),
                ]),
                &[],
            )
            .await?;
        if let Some(error) = search.error {
            return Err(FireError::Malformed {
                reason: format!("Wikidata: {}", error["info"].as_str().unwrap_or("error")),
            });
        }
        if search.search.is_empty() {
            return Ok(Found::default());
        }
        let ids: Vec<&str> = search.search.iter().map(|f| f.id.as_str()).collect();
        let entities: Value = self
            .0
            .http
            .json(
                "Wikidata",
                self.0.http.client().get(&api).query(&[
                    ("action", "wbgetentities"),
                    ("ids", ids.join("|").as_str()),
                    ("props", "claims"),
                    ("format", "json"),
                ]),
                &[],
            )
            .await?;
        let mut results = Vec::new();
        for found in &search.search {
            let entity = &entities["entities"][found.id.as_str()];
            let label = found.label.clone().unwrap_or_else(|| found.id.clone());
            match intent.social_platform() {
                None => {
                    let websites = claim_strings(entity, OFFICIAL_WEBSITE);
                    results.push(ConnectorResult {
                        url: format!("https://www.wikidata.org/wiki/{}", found.id),
                        title: label,
                        snippet: found.description.clone().unwrap_or_default(),
                        raw: serde_json::json!({ "id": found.id, "official_website": websites }),
                    });
                }
                Some(platform) => {
                    if let Some((_, property, pattern)) =
                        HANDLES.iter().find(|(p, _, _)| *p == platform)
                    {
                        for handle in claim_strings(entity, property) {
                            let handle = handle.trim().trim_start_matches('@');
                            if handle.is_empty() || handle.contains(['/', '?', '#', ' ']) {
                                continue;
                            }
                            results.push(ConnectorResult {
                                url: pattern.replace("{}", handle),
                                title: format!("{label} on {}", intent.label()),
                                snippet: format!(
                                    "From Wikidata {} ({}).",
                                    found.id,
                                    found.description.clone().unwrap_or_default()
                                ),
                                raw: serde_json::json!({ "id": found.id, "property": property, "handle": handle }),
                            });
                        }
                    }
                }
            }
        }
        results.truncate(opts.max_results.max(1));
        Ok(results.into())
    }
}
