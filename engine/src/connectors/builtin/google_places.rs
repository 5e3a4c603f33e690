//! Google's Places API (New): `POST /v1/places:searchText` (maps.search)
//! and `GET /v1/places/{id}` (maps.place, and maps.reviews with the
//! `reviews` field, at most five a place), the key in `X-Goog-Api-Key` and
//! the fields asked for in `X-Goog-FieldMask` (the API refuses a request
//! without one, and bills by the fields asked). Places are `google:` ids.
//! Google's errors (a bad key, a spent quota) are read as the other Google
//! adapters read them.

use async_trait::async_trait;
use model::{
    Amount, BuiltinCapability as B, Capability, ConnectorProfile, Cost, CostTier, Place, RateHints,
    Review,
};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::json;

use super::google::google_error;
use super::places::{
    google_maps_url, near_of, own_id, place_result, review_result, with_near, MapsIntent,
};
use super::Endpoint;
use crate::connectors::http::parse_json;
use crate::connectors::registry::Registration;
use crate::connectors::seam::{Connector, FireError, FireOpts, Found};

pub const ID: &str = "google-places";
pub const KEY_VAR: &str = "GOOGLE_PLACES_API_KEY";
pub const BASE: &str = "https://places.googleapis.com";
const PREFIX: &str = model::maps::GOOGLE_IDS;
/// The fields of a place this adapter reads.
const PLACE_FIELDS: &str = "id,displayName,formattedAddress,location,rating,userRatingCount,types,nationalPhoneNumber,internationalPhoneNumber,websiteUri,googleMapsUri";

pub fn registration() -> Registration {
    Registration {
        profile: ConnectorProfile {
            id: ID.to_owned(),
            display_name: "Google Places".to_owned(),
            short_label: "Places".to_owned(),
            capabilities: vec![
                B::MapsSearch.into(),
                B::MapsPlace.into(),
                B::MapsReviews.into(),
            ],
            cost_tier: CostTier::Paid,
            requires_env: vec![KEY_VAR.to_owned()],
            rate_hints: RateHints {
                per_second: Some(5.0),
                daily_cap: None,
            },
            cost: Some(Cost::per_call(Amount::units(1), "Places API requests")),
        },
        suspends_on_errors: true,
    }
}

#[derive(Debug)]
pub struct GooglePlaces(pub Endpoint);

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct GPlace {
    #[serde(default)]
    id: String,
    #[serde(default)]
    display_name: Option<Localized>,
    #[serde(default)]
    formatted_address: String,
    #[serde(default)]
    location: Option<LatLng>,
    #[serde(default)]
    rating: Option<f64>,
    #[serde(default)]
    user_rating_count: Option<u64>,
    #[serde(default)]
    types: Vec<String>,
    #[serde(default)]
    national_phone_number: Option<String>,
    #[serde(default)]
    international_phone_number: Option<String>,
    #[serde(default)]
    website_uri: Option<String>,
    #[serde(default)]
    google_maps_uri: Option<String>,
    #[serde(default)]
    reviews: Vec<GReview>,
}

#[derive(Deserialize, Default)]
struct Localized {
    #[serde(default)]
    text: String,
}

#[derive(Deserialize)]
struct LatLng {
    latitude: f64,
    longitude: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GReview {
    #[serde(default)]
    rating: Option<f64>,
    #[serde(default)]
    text: Option<Localized>,
    #[serde(default)]
    original_text: Option<Localized>,
    #[serde(default)]
    author_attribution: Option<Author>,
    #[serde(default)]
    publish_time: Option<String>,
    #[serde(default)]
    relative_publish_time_description: Option<String>,
    #[serde(default)]
    google_maps_uri: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Author {
    #[serde(default)]
    display_name: String,
}

#[derive(Deserialize)]
struct SearchAnswer {
    #[serde(default)]
    places: Vec<GPlace>,
}

impl GPlace {
    fn place(self) -> Option<Place> {
        if self.id.is_empty() {
            return None;
        }
        let (lat, lon) = self
            .location
            .map(|l| (Some(l.latitude), Some(l.longitude)))
            .unwrap_or_default();
        Some(Place {
            url: self
                .google_maps_uri
                .unwrap_or_else(|| google_maps_url(&self.id)),
            id: format!("{PREFIX}{}", self.id),
            name: self.display_name.map(|n| n.text).unwrap_or_default(),
            address: self.formatted_address,
            lat: lat.filter(|l| l.is_finite()),
            lon: lon.filter(|l| l.is_finite()),
            phone: self
                .international_phone_number
                .or(self.national_phone_number),
            website: self.website_uri,
            rating: self.rating,
            rating_count: self.user_rating_count,
            categories: self.types,
            provider: ID.to_owned(),
        })
    }
}

/// The `n`th review of a place; one without its own link gets the place's
/// page with its place in the list, so each stays apart.
fn review(place_id: &str, n: usize, r: GReview) -> Review {
    let text = r
        .text
        .or(r.original_text)
        .map(|t| t.text)
        .unwrap_or_default();
    Review {
        place_id: format!("{PREFIX}{place_id}"),
        author: r
            .author_attribution
            .map(|a| a.display_name)
            .unwrap_or_default(),
        rating: r.rating,
        text,
        published: r.publish_time.or(r.relative_publish_time_description),
        url: r
            .google_maps_uri
            .unwrap_or_else(|| format!("{}#review-{n}", google_maps_url(place_id))),
        provider: ID.to_owned(),
    }
}

#[async_trait]
impl Connector for GooglePlaces {
    async fn fire(
        &self,
        intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let Some(maps) = MapsIntent::of(intent) else {
            return Err(FireError::Request {
                reason: format!("Google Places does not serve {intent}"),
            });
        };
        let key = self.0.key(KEY_VAR, opts)?;
        let base = self.0.base_or(BASE);
        let client = self.0.http.client();
        let request = match maps {
            MapsIntent::Search => client
                .post(format!("{base}/v1/places:searchText"))
                .header("X-Goog-FieldMask", places_mask())
                .json(&json!({
                    "textQuery": with_near(query, near_of(opts)),
                    "pageSize": opts.max_results.clamp(1, 20),
                })),
            MapsIntent::Place | MapsIntent::Reviews => {
                let id = own_id(query, PREFIX, "Google Places")?;
                let mask = if maps == MapsIntent::Reviews {
                    "id,reviews"
                } else {
                    PLACE_FIELDS
                };
                client
                    .get(format!("{base}/v1/places/{}", urlencoding(id)))
                    .header("X-Goog-FieldMask", mask)
            }
        }
        .header("X-Goog-Api-Key", &key);
        let (status, headers, body) = self.0.http.send("Google Places", request, &[&key]).await?;
        // A place id Google no longer knows: nothing found, not an error.
        if status == StatusCode::NOT_FOUND && maps != MapsIntent::Search {
            return Ok(Found::default());
        }
        if let Some(e) = google_error("Google Places", status, &headers, &body, &key) {
            return Err(e);
        }
        let secrets = [key.as_str()];
        Ok(match maps {
            MapsIntent::Search => {
                let answer: SearchAnswer = parse_json("Google Places", &headers, &body, &secrets)?;
                answer
                    .places
                    .into_iter()
                    .filter_map(GPlace::place)
                    .map(place_result)
                    .collect()
            }
            MapsIntent::Place => {
                let place: GPlace = parse_json("Google Places", &headers, &body, &secrets)?;
                place.place().map(place_result).into_iter().collect()
            }
            MapsIntent::Reviews => {
                let place: GPlace = parse_json("Google Places", &headers, &body, &secrets)?;
                let id = place.id.clone();
                place
                    .reviews
                    .into_iter()
                    .take(opts.max_results.max(1))
                    .enumerate()
                    .map(|(n, r)| review_result(review(&id, n + 1, r)))
                    .collect()
            }
        })
    }
}

/// The search's field mask: each place field under `places.`.
fn places_mask() -> String {
    PLACE_FIELDS
        .split(',')
        .map(|f| format!("places.{f}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A place id as one path segment.
fn urlencoding(id: &str) -> String {
    id.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_search_answer_gives_typed_places() {
        let answer: SearchAnswer = serde_json::from_str(
            r#"{"places":[{"id":"ChIJN1t_tDeuEmsRUsoyG83frY4","displayName":{"text":"Google Sydney","languageCode":"en"},
            "formattedAddress":"48 Pirrama Rd, Pyrmont NSW 2009, Australia","location":{"latitude":-33.866489,"longitude":151.1958561},
            "rating":4.5,"userRatingCount":1000,"types":["corporate_office","point_of_interest"],
            "internationalPhoneNumber":"+61 2 9374 4000","websiteUri":"https://about.google/"}]}"#,
        )
        .unwrap();
        let place = answer.places.into_iter().next().unwrap().place().unwrap();
        assert_eq!(place.id, "google:ChIJN1t_tDeuEmsRUsoyG83frY4");
        assert_eq!(place.lat, Some(-33.866489));
        assert_eq!(place.rating_count, Some(1000));
        assert_eq!(
            place.url,
            "https://www.google.com/maps/place/?q=place_id:ChIJN1t_tDeuEmsRUsoyG83frY4"
        );
        assert_eq!(places_mask().split(',').next(), Some("places.id"));
        assert_eq!(urlencoding("ChIJ/x y"), "ChIJ%2Fx%20y");
    }
}
