//! Bluesky: the public AppView's `app.bsky.actor.searchActors`, no key needed.

use async_trait::async_trait;
use model::{BuiltinCapability as B, Capability, CostTier, RateHints};
use serde::Deserialize;

use super::Endpoint;
use crate::connector::{Connector, ConnectorResult, FireError, FireOpts, Found};
use crate::registry::Registration;

pub const ID: &str = "bluesky";
pub const BASE: &str = "https://public.api.bsky.app";

pub fn registration() -> Registration {
    Registration {
        cost: None,
        suspends_on_errors: true,
        id: ID.to_owned(),
        display_name: "Bluesky public AppView".to_owned(),
        short_label: "Bluesky".to_owned(),
        capabilities: vec![B::SocialBluesky.into()],
        cost_tier: CostTier::Free,
        requires_env: Vec::new(),
        rate_hints: RateHints {
            per_second: Some(5.0),
            daily_cap: None,
        },
    }
}

#[derive(Debug)]
pub struct Bluesky(pub Endpoint);

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    actors: Vec<Actor>,
}

#[derive(Deserialize)]
struct Actor {
    #[serde(default)]
    did: String,
    #[serde(default)]
    handle: String,
    #[serde(default, rename = "displayName")]
    display_name: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

#[async_trait]
impl Connector for Bluesky {
    async fn fire(
        &self,
        _intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let base = self.0.base_or(BASE);
        let limit = opts.max_results.clamp(1, 25).to_string();
        let request = self
            .0
            .http
            .client()
            .get(format!("{base}/xrpc/app.bsky.actor.searchActors"))
            .query(&[("q", query), ("limit", limit.as_str())]);
        let answer: Answer = self.0.http.json("Bluesky", request, &[]).await?;
        Ok(answer
            .actors
            .into_iter()
            .filter(|a| !a.handle.is_empty() && !a.handle.contains(['/', '?', '#']))
            .map(|a| ConnectorResult {
                url: format!("https://bsky.app/profile/{}", a.handle),
                title: match &a.display_name {
                    Some(name) if !name.trim().is_empty() => format!("{name} (@{})", a.handle),
                    _ => format!("@{}", a.handle),
                },
                snippet: a.description.unwrap_or_default(),
                raw: serde_json::json!({ "did": a.did, "handle": a.handle }),
            })
            .collect())
    }
}
