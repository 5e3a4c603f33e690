//! SerpApi's Google Maps engines, for the SerpApi connector's maps
//! intents: `engine=google_maps` with `type=search` (maps.search; a query
//! naming one place answers `place_results` instead of `local_results`),
//! `engine=google_maps` with `place_id` (maps.place) and
//! `engine=google_maps_reviews` with `place_id` (maps.reviews, the first
//! page). Google place ids, so places are `google:` ids, readable by the
//! Google Places adapter too.

use model::{Place, Review};
use serde::Deserialize;

use super::places::{
    google_maps_url, near_of, own_id, place_result, review_result, with_near, MapsIntent,
};
use super::Endpoint;
use crate::connectors::http::{classify_status, parse_json, redact};
use crate::connectors::seam::{ConnectorResult, FireError, FireOpts, Found};

const PREFIX: &str = model::maps::GOOGLE_IDS;

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    local_results: Vec<Local>,
    #[serde(default)]
    place_results: Option<Local>,
    #[serde(default)]
    reviews: Vec<SReview>,
}

#[derive(Deserialize)]
struct Local {
    #[serde(default)]
    title: String,
    #[serde(default)]
    place_id: Option<String>,
    #[serde(default)]
    gps_coordinates: Option<Coordinates>,
    #[serde(default)]
    rating: Option<f64>,
    /// How many reviews.
    #[serde(default)]
    reviews: Option<u64>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    types: Vec<String>,
    #[serde(default)]
    address: Option<String>,
    #[serde(default)]
    phone: Option<String>,
    #[serde(default)]
    website: Option<String>,
}

#[derive(Deserialize)]
struct Coordinates {
    latitude: f64,
    longitude: f64,
}

#[derive(Deserialize)]
struct SReview {
    #[serde(default)]
    link: Option<String>,
    #[serde(default)]
    rating: Option<f64>,
    #[serde(default)]
    date: Option<String>,
    #[serde(default)]
    iso_date: Option<String>,
    #[serde(default)]
    snippet: Option<String>,
    #[serde(default)]
    user: Option<User>,
}

#[derive(Deserialize)]
struct User {
    #[serde(default)]
    name: String,
}

impl Local {
    fn place(self) -> Option<Place> {
        let id = self.place_id.filter(|id| !id.is_empty())?;
        let (lat, lon) = self
            .gps_coordinates
            .map(|c| (Some(c.latitude), Some(c.longitude)))
            .unwrap_or_default();
        let mut categories = self.types;
        if let Some(kind) = self.kind.filter(|k| !categories.contains(k)) {
            categories.insert(0, kind);
        }
        Some(Place {
            url: google_maps_url(&id),
            id: format!("{PREFIX}{id}"),
            name: self.title,
            address: self.address.unwrap_or_default(),
            lat: lat.filter(|l| l.is_finite()),
            lon: lon.filter(|l| l.is_finite()),
            phone: self.phone,
            website: self.website,
            rating: self.rating,
            rating_count: self.reviews,
            categories,
            provider: super::serpapi::ID.to_owned(),
        })
    }
}

/// A maps intent's fire through SerpApi.
pub(super) async fn fire(
    endpoint: &Endpoint,
    maps: MapsIntent,
    query: &str,
    opts: &FireOpts,
    key: &str,
) -> Result<Found, FireError> {
    let base = endpoint.base_or(super::serpapi::BASE);
    let near_query;
    let mut params: Vec<(&str, &str)> = vec![("api_key", key)];
    let place_id = match maps {
        MapsIntent::Search => {
            near_query = with_near(query, near_of(opts));
            params.extend([
                ("engine", "google_maps"),
                ("type", "search"),
                ("q", near_query.as_str()),
            ]);
            None
        }
        MapsIntent::Place | MapsIntent::Reviews => {
            let id = own_id(query, PREFIX, "SerpApi")?;
            let engine = if maps == MapsIntent::Place {
                "google_maps"
            } else {
                "google_maps_reviews"
            };
            params.extend([("engine", engine), ("place_id", id)]);
            Some(id)
        }
    };
    let request = endpoint
        .http
        .client()
        .get(format!("{base}/search.json"))
        .query(&params);
    let secrets = [key];
    let (status, headers, body) = endpoint.http.send("SerpApi", request, &secrets).await?;
    if let Some(e) = classify_status("SerpApi", status, &headers, &body, &secrets) {
        return Err(e);
    }
    let answer: Answer = parse_json("SerpApi", &headers, &body, &secrets)?;
    if let Some(error) = answer.error {
        if error.contains("hasn't returned any results") {
            return Ok(Found::default());
        }
        return Err(FireError::Malformed {
            reason: redact(&format!("SerpApi: {error}"), &secrets),
        });
    }
    let max = opts.max_results.max(1);
    let results: Vec<ConnectorResult> = match (maps, place_id) {
        (MapsIntent::Reviews, Some(id)) => answer
            .reviews
            .into_iter()
            .take(max)
            .enumerate()
            .map(|(n, r)| review_result(review(id, n + 1, r)))
            .collect(),
        _ => answer
            .place_results
            .into_iter()
            .chain(answer.local_results)
            .filter_map(Local::place)
            .take(max)
            .map(place_result)
            .collect(),
    };
    Ok(results.into())
}

fn review(place_id: &str, n: usize, r: SReview) -> Review {
    Review {
        place_id: format!("{PREFIX}{place_id}"),
        author: r.user.map(|u| u.name).unwrap_or_default(),
        rating: r.rating,
        text: r.snippet.unwrap_or_default(),
        published: r.iso_date.or(r.date),
        url: r
            .link
            .unwrap_or_else(|| format!("{}#review-{n}", google_maps_url(place_id))),
        provider: super::serpapi::ID.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_place_answers_place_results_and_many_local_results() {
        let one: Answer = serde_json::from_str(
            r#"{"search_metadata":{"status":"Success"},"place_results":{"title":"Café Einstein","place_id":"ChIJ1",
            "gps_coordinates":{"latitude":52.517,"longitude":13.388},"rating":4.4,"reviews":2100,"type":"Cafe",
            "types":["Cafe","Coffee shop"],"address":"Unter den Linden 42, 10117 Berlin","phone":"+49 30 2043632"}}"#,
        )
        .unwrap();
        let place = one.place_results.unwrap().place().unwrap();
        assert_eq!(place.id, "google:ChIJ1");
        assert_eq!(place.categories, ["Cafe", "Coffee shop"]);
        assert_eq!(place.rating_count, Some(2100));
        let review = review(
            "ChIJ1",
            2,
            serde_json::from_str(
                r#"{"rating":5,"date":"a month ago","snippet":"Great.","user":{"name":"Ada"}}"#,
            )
            .unwrap(),
        );
        assert_eq!(review.author, "Ada");
        assert_eq!(review.published.as_deref(), Some("a month ago"));
        assert!(review.url.ends_with("#review-2"), "{}", review.url);
    }
}
