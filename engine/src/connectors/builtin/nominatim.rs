//! OpenStreetMap's Nominatim: `GET /search` (maps.search) and `GET
//! /lookup` (maps.place) with `format=jsonv2`, addresses and extra tags
//! (phone, website). No key. The public instance's usage policy allows at
//! most one request a second from an application that names itself (our
//! User-Agent does; `NOMINATIM_EMAIL` adds a contact address), so its rate
//! hint is one a second; `NOMINATIM_URL` points at a self-hosted instance
//! instead. Places are `osm:` ids: `osm:N240109189` is node 240109189.

use async_trait::async_trait;
use model::{BuiltinCapability as B, Capability, ConnectorProfile, CostTier, Place, RateHints};
use serde::Deserialize;

use super::places::{near_of, own_id, place_result, with_near, MapsIntent};
use super::Endpoint;
use crate::connectors::env;
use crate::connectors::registry::Registration;
use crate::connectors::seam::{Connector, FireError, FireOpts, Found};

pub const ID: &str = "nominatim";
pub const BASE: &str = "https://nominatim.openstreetmap.org";
/// A self-hosted instance's address, instead of the public one.
pub const URL_VAR: &str = "NOMINATIM_URL";
/// A contact address sent with each request, as the usage policy asks
/// of heavier users.
pub const EMAIL_VAR: &str = "NOMINATIM_EMAIL";
const PREFIX: &str = model::maps::OSM_IDS;

pub fn registration() -> Registration {
    Registration {
        profile: ConnectorProfile {
            id: ID.to_owned(),
            display_name: "OpenStreetMap (Nominatim)".to_owned(),
            short_label: "OSM".to_owned(),
            capabilities: vec![B::MapsSearch.into(), B::MapsPlace.into()],
            cost_tier: CostTier::Free,
            requires_env: Vec::new(),
            rate_hints: RateHints {
                per_second: Some(1.0),
                daily_cap: None,
            },
            cost: None,
        },
        suspends_on_errors: true,
    }
}

#[derive(Debug)]
pub struct Nominatim(pub Endpoint);

/// One place of a `jsonv2` answer.
#[derive(Deserialize)]
struct Hit {
    #[serde(default)]
    osm_type: String,
    #[serde(default)]
    osm_id: Option<u64>,
    /// Degrees, as text.
    #[serde(default)]
    lat: Option<String>,
    #[serde(default)]
    lon: Option<String>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    display_name: String,
    #[serde(default)]
    extratags: Option<std::collections::BTreeMap<String, String>>,
}

/// `N`, `W` or `R`: how `/lookup` names an element's type.
fn type_letter(osm_type: &str) -> Option<char> {
    match osm_type {
        "node" => Some('N'),
        "way" => Some('W'),
        "relation" => Some('R'),
        _ => None,
    }
}

impl Hit {
    /// The place, when the answer names an element it can be read again by.
    fn place(self) -> Option<Place> {
        let letter = type_letter(&self.osm_type)?;
        let osm_id = self.osm_id?;
        let tags = self.extratags.unwrap_or_default();
        let tag = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| tags.get(*n))
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let degrees = |text: Option<String>| text.and_then(|t| t.trim().parse::<f64>().ok());
        let name = self
            .name
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| {
                self.display_name
                    .split(',')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_owned()
            });
        Some(Place {
            id: format!("{PREFIX}{letter}{osm_id}"),
            name,
            address: self.display_name,
            lat: degrees(self.lat).filter(|l| l.is_finite()),
            lon: degrees(self.lon).filter(|l| l.is_finite()),
            phone: tag(&["phone", "contact:phone"]),
            website: tag(&["website", "contact:website", "url"]),
            rating: None,
            rating_count: None,
            categories: [self.kind, self.category].into_iter().flatten().collect(),
            url: format!("https://www.openstreetmap.org/{}/{osm_id}", self.osm_type),
            provider: ID.to_owned(),
        })
    }
}

#[async_trait]
impl Connector for Nominatim {
    async fn fire(
        &self,
        intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let base = self
            .0
            .base
            .clone()
            .or_else(|| env::optional(URL_VAR, opts))
            .unwrap_or_else(|| BASE.to_owned());
        let base = base.trim_end_matches('/');
        let limit = opts.max_results.clamp(1, 40).to_string();
        let mut params: Vec<(&str, String)> = vec![
            ("format", "jsonv2".to_owned()),
            ("addressdetails", "1".to_owned()),
            ("extratags", "1".to_owned()),
        ];
        if let Some(email) = env::optional(EMAIL_VAR, opts) {
            params.push(("email", email));
        }
        let path = match MapsIntent::of(intent) {
            Some(MapsIntent::Place) => {
                let id = own_id(query, PREFIX, "Nominatim")?;
                params.push(("osm_ids", id.to_owned()));
                "lookup"
            }
            Some(MapsIntent::Search) => {
                params.push(("q", with_near(query, near_of(opts))));
                params.push(("limit", limit));
                "search"
            }
            _ => {
                return Err(FireError::Request {
                    reason: format!("Nominatim does not serve {intent}"),
                })
            }
        };
        let request = self
            .0
            .http
            .client()
            .get(format!("{base}/{path}"))
            .query(&params);
        let hits: Vec<Hit> = self.0.http.json("Nominatim", request, &[]).await?;
        Ok(hits
            .into_iter()
            .filter_map(Hit::place)
            .map(place_result)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jsonv2_hit_is_a_place_with_numbers_and_an_osm_id() {
        let hits: Vec<Hit> = serde_json::from_str(
            r#"[{"place_id":1,"osm_type":"node","osm_id":240109189,"lat":"52.5170365","lon":"13.3888599",
            "category":"amenity","type":"cafe","name":"Café Einstein","display_name":"Café Einstein, Unter den Linden 42, Berlin, Germany",
            "extratags":{"phone":"+49 30 2043632","website":"https://einstein.example/"}},
            {"osm_type":"","osm_id":null,"display_name":"no element"}]"#,
        )
        .unwrap();
        let places: Vec<Place> = hits.into_iter().filter_map(Hit::place).collect();
        assert_eq!(places.len(), 1);
        let p = &places[0];
        assert_eq!(p.id, "osm:N240109189");
        assert_eq!(p.lat, Some(52.5170365));
        assert_eq!(p.lon, Some(13.3888599));
        assert_eq!(p.phone.as_deref(), Some("+49 30 2043632"));
        assert_eq!(p.categories, ["cafe", "amenity"]);
        assert_eq!(p.url, "https://www.openstreetmap.org/node/240109189");
    }
}
