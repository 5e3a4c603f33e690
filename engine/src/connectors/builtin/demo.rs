//! The offline demo connector: plainly fake, deterministic results derived
//! from the query, under the reserved `demo.example` domain, with realistic
//! latency and a stable share of not-found answers and errors, so every chip
//! state shows without a network or a key. Registered only with `--demo`.

use std::time::Duration;

use async_trait::async_trait;
use model::{Capability, ConnectorProfile, CostTier, RateHints};

use crate::connectors::registry::Registration;
use crate::connectors::seam::{Connector, ConnectorResult, FireError, FireOpts, Found};

pub const ID: &str = "demo";

/// Serves every built-in capability.
pub fn registration() -> Registration {
    Registration {
        profile: ConnectorProfile {
            id: ID.to_owned(),
            display_name: "Demo data (offline)".to_owned(),
            short_label: "Demo".to_owned(),
            // Not the maps intents: a made-up place would pass for a real one.
            capabilities: Capability::builtins()
                .filter(|c| !c.name().starts_with("maps."))
                .collect(),
            cost_tier: CostTier::Free,
            requires_env: Vec::new(),
            rate_hints: RateHints::default(),
            cost: None,
        },
        // Its errors are made-up examples for single records, not an outage.
        suspends_on_errors: false,
    }
}

/// The demo connector; `latency` scales its simulated wait (zero in tests).
#[derive(Debug)]
pub struct Demo {
    pub latency: Duration,
}

impl Default for Demo {
    fn default() -> Self {
        Self {
            latency: Duration::from_millis(900),
        }
    }
}

/// FNV-1a: stable across runs and platforms.
fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn slug(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    s.split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

#[async_trait]
impl Connector for Demo {
    async fn fire(
        &self,
        intent: &Capability,
        query: &str,
        _opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let h = hash(&format!("{intent}|{query}"));
        // Between a third and the whole of `latency`.
        let wait = self.latency.mul_f64(0.33 + (h % 67) as f64 / 100.0);
        tokio::time::sleep(wait).await;
        match h % 10 {
            0 => Err(FireError::Upstream {
                reason: "demo: a simulated provider error (demo data)".to_owned(),
            }),
            1 | 2 => Ok(Found::default()),
            n => {
                let kind = intent.social_platform().unwrap_or_else(|| intent.name());
                let count = 1 + (n as usize % 3);
                Ok((0..count)
                    .map(|i| ConnectorResult {
                        url: format!(
                            "https://demo.example/{}/{}/{}",
                            slug(kind),
                            slug(query),
                            i + 1
                        ),
                        title: format!("{query}: {} result {} (demo data)", intent.label(), i + 1),
                        snippet:
                            "Made-up demo data, generated offline. Not a real page or profile."
                                .to_owned(),
                        raw: serde_json::json!({ "demo": true }),
                    })
                    .collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_are_stable_plainly_fake_and_varied() {
        let demo = Demo {
            latency: Duration::ZERO,
        };
        let cap: Capability = "search.social.linkedin".parse().unwrap();
        let (mut found, mut empty, mut failed) = (0, 0, 0);
        for i in 0..200 {
            let q = format!("Company {i}");
            let first = demo.fire(&cap, &q, &FireOpts::default()).await;
            let again = demo.fire(&cap, &q, &FireOpts::default()).await;
            assert_eq!(first, again, "deterministic");
            match first {
                Ok(r) if r.results.is_empty() => empty += 1,
                Ok(r) => {
                    found += 1;
                    for item in r.results {
                        assert!(
                            item.url
                                .starts_with("https://demo.example/linkedin/company-"),
                            "{}",
                            item.url
                        );
                        assert!(item.title.contains("(demo data)"));
                    }
                }
                Err(_) => failed += 1,
            }
        }
        assert!(
            found > 100 && empty > 20 && failed > 5,
            "{found} {empty} {failed}"
        );
        assert_eq!(registration().profile.capabilities.len(), 15);
    }
}
