//! What the maps adapters share: where a search should look (the call's
//! `near`, or a record's own place columns), a place's id in its id
//! system, and results carrying the typed [`Place`] or [`Review`] in their
//! `raw` for the maps verbs to keep.

use model::{Capability, Place, Review};

use crate::connectors::seam::{ConnectorResult, FireError, FireOpts};

/// Record fields read as where to look, in order (`near` is the maps
/// verbs' own).
const NEAR_FIELDS: &[&str] = &["near", "city", "address", "location", "town"];

/// Which maps intent a fire is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapsIntent {
    Search,
    Place,
    Reviews,
}

impl MapsIntent {
    pub fn of(intent: &Capability) -> Option<Self> {
        match intent.name() {
            "maps.search" => Some(MapsIntent::Search),
            "maps.place" => Some(MapsIntent::Place),
            "maps.reviews" => Some(MapsIntent::Reviews),
            _ => None,
        }
    }
}

/// Where a search should look: the call's `near`, else the record's
/// first place column.
pub fn near_of(opts: &FireOpts) -> Option<&str> {
    NEAR_FIELDS.iter().find_map(|name| {
        opts.record_fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    })
}

/// A query with where to look, as a free-text search takes it ("pizza,
/// Berlin"), unless the query already names it.
pub fn with_near(query: &str, near: Option<&str>) -> String {
    match near {
        Some(near) if !query.to_lowercase().contains(&near.to_lowercase()) => {
            format!("{query}, {near}")
        }
        _ => query.to_owned(),
    }
}

/// The provider's own id within `prefix`'s id system, or the request's
/// refusal: this connector does not read that system's ids.
pub fn own_id<'q>(query: &'q str, prefix: &str, provider: &str) -> Result<&'q str, FireError> {
    query
        .trim()
        .strip_prefix(prefix)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| FireError::Request {
            reason: format!("{provider} reads only place ids starting {prefix}"),
        })
}

/// A place as a result: its map link, name and address, the typed place
/// in `raw`.
pub fn place_result(place: Place) -> ConnectorResult {
    ConnectorResult {
        url: place.url.clone(),
        title: place.name.clone(),
        snippet: place.address.clone(),
        raw: serde_json::to_value(&place).unwrap_or_default(),
    }
}

/// A review as a result: its link, its author and text, the typed review
/// in `raw`.
pub fn review_result(review: Review) -> ConnectorResult {
    ConnectorResult {
        url: review.url.clone(),
        title: if review.author.is_empty() {
            "Review".to_owned()
        } else {
            format!("Review by {}", review.author)
        },
        snippet: review.text.clone(),
        raw: serde_json::to_value(&review).unwrap_or_default(),
    }
}

/// A Google place's page on Google Maps.
pub fn google_maps_url(place_id: &str) -> String {
    format!("https://www.google.com/maps/place/?q=place_id:{place_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_comes_from_the_call_or_a_records_place_column() {
        let mut opts = FireOpts::default();
        assert_eq!(near_of(&opts), None);
        opts.record_fields.insert("City".into(), " Berlin ".into());
        assert_eq!(near_of(&opts), Some("Berlin"));
        opts.record_fields.insert("near".into(), "Kreuzberg".into());
        assert_eq!(near_of(&opts), Some("Kreuzberg"));
        assert_eq!(with_near("pizza", Some("Berlin")), "pizza, Berlin");
        assert_eq!(
            with_near("pizza in berlin", Some("Berlin")),
            "pizza in berlin"
        );
    }

    #[test]
    fn ids_are_read_only_in_their_own_system() {
        assert_eq!(own_id("osm:N1", "osm:", "Nominatim").unwrap(), "N1");
        let err = own_id("google:ChIJ", "osm:", "Nominatim").unwrap_err();
        assert!(err.to_string().contains("osm:"), "{err}");
        assert!(err.is_the_requests_own());
    }
}
