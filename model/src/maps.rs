//! The maps verbs' inputs and outputs: `maps.search` finds places,
//! `maps.place` reads one, `maps.reviews` reads what people wrote about
//! one. A place's id names the id system it belongs to (`osm:N240109189`
//! from OpenStreetMap, `google:ChIJ...` from Google), so any connector
//! reading that system can read it again.

use serde::{Deserialize, Serialize};

/// `POST /api/capabilities/maps.search/call`: places matching a query.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct MapsSearchRequest {
    /// What to look for: a name, a kind of place, an address.
    pub query: String,
    /// Where: a town, an area or an address the places should be near.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near: Option<String>,
    /// At most this many places (1 to 50; 10 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u32>,
    /// Search with exactly this connector instead of walking the chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// Answer at once with `pending` and the job's id instead of waiting.
    #[serde(default, rename = "async")]
    pub run_async: bool,
}

/// `POST /api/capabilities/maps.place/call`: one place, read again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PlaceRequest {
    /// A place's `id` as a maps result gave it, e.g. `osm:N240109189`.
    pub place_id: String,
    /// Read it with exactly this connector instead of walking the chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// Answer at once with `pending` and the job's id instead of waiting.
    #[serde(default, rename = "async")]
    pub run_async: bool,
}

/// `POST /api/capabilities/maps.reviews/call`: what people wrote about a
/// place.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReviewsRequest {
    /// A place's `id` as a maps result gave it, e.g. `google:ChIJ...`.
    pub place_id: String,
    /// At most this many reviews (1 to 50; 10 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u32>,
    /// Read them with exactly this connector instead of walking the chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// Answer at once with `pending` and the job's id instead of waiting.
    #[serde(default, rename = "async")]
    pub run_async: bool,
}

/// A place as a maps provider describes it. Provider text: show it as
/// text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Place {
    /// The place's id in its id system (`osm:...`, `google:...`): what
    /// `maps.place` and `maps.reviews` take.
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub address: String,
    /// Latitude in degrees (WGS 84).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat: Option<f64>,
    /// Longitude in degrees (WGS 84).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lon: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
    /// The provider's average rating (1 to 5), when it keeps one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<f64>,
    /// How many ratings the average is of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_count: Option<u64>,
    /// What kind of place it is, in the provider's words (`cafe`,
    /// `amenity`, `Pizza restaurant`).
    #[serde(default)]
    pub categories: Vec<String>,
    /// Where to see it on the provider's map.
    #[serde(default)]
    pub url: String,
    /// The connector that found it.
    pub provider: String,
}

/// What one person wrote about a place. Provider text: show it as text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Review {
    /// The place reviewed (its `id`).
    pub place_id: String,
    /// The name the author shows.
    #[serde(default)]
    pub author: String,
    /// The author's rating (1 to 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<f64>,
    pub text: String,
    /// When it was written, as the provider says it (RFC 3339 when it
    /// gives a date, else its words such as "a month ago").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<String>,
    /// Where to read it on the provider's site.
    #[serde(default)]
    pub url: String,
    /// The connector that read it.
    pub provider: String,
}

/// The id systems a place's id may name, by prefix.
pub const OSM_IDS: &str = "osm:";
pub const GOOGLE_IDS: &str = "google:";
