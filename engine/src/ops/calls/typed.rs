//! The typed verbs that walk one chain with one query: `web.discover`
//! (through `search.web`'s connectors) and the maps verbs (through
//! `maps.search`, `maps.place` and `maps.reviews`'s). Each checks its own
//! input, naming its own fields, and keeps its results in its own shape.

use std::collections::BTreeMap;

use model::{
    CallOutput, CallRequest, DiscoverRequest, Envelope, MapsSearchRequest, PlaceRequest,
    ReviewsRequest, Verb,
};

use super::shape::Shape;
use super::{Walk, MAX_QUERY_CHARS, MAX_RESULTS};
use crate::ops::OpError;
use crate::tenancy::Principal;
use crate::Engine;

/// The record field a maps connector reads as where to look (a record's
/// own `near`, `city` or `address` column works the same in a chip).
pub const NEAR_FIELD: &str = "near";

/// The longest place id, in bytes.
const MAX_PLACE_ID_BYTES: usize = 500;

fn walk(verb: Verb, shape: Shape, fields: BTreeMap<String, String>) -> Walk {
    Walk {
        name: verb.name.to_owned(),
        intent: verb.runs_through.into(),
        shape,
        fields,
    }
}

/// A limit of results in bounds, named as the verb names it.
fn check_limit(field: &str, limit: Option<u32>) -> Result<(), OpError> {
    match limit {
        Some(n) if !(1..=MAX_RESULTS).contains(&n) => Err(OpError::Invalid(format!(
            "{field}: ask for 1 to {MAX_RESULTS} results"
        ))),
        _ => Ok(()),
    }
}

/// A place id as a maps result gave it: `osm:...` or `google:...`.
fn check_place_id(place_id: &str) -> Result<String, OpError> {
    let id = place_id.trim();
    let known = [model::maps::OSM_IDS, model::maps::GOOGLE_IDS]
        .iter()
        .any(|prefix| id.strip_prefix(prefix).is_some_and(|rest| !rest.is_empty()));
    if !known || id.len() > MAX_PLACE_ID_BYTES || id.chars().any(char::is_whitespace) {
        return Err(OpError::Invalid(format!(
            "place_id: give a place's id as a maps result gave it (osm:... or google:..., at most {MAX_PLACE_ID_BYTES} bytes)"
        )));
    }
    Ok(id.to_owned())
}

impl Engine {
    /// `web.discover`: pages about a query from the web search connectors,
    /// each result naming the connector (provider) that found it.
    pub async fn discover(
        &self,
        who: &Principal,
        req: DiscoverRequest,
    ) -> Result<Envelope<CallOutput>, OpError> {
        check_limit("top_k", req.top_k)?;
        let request = CallRequest {
            query: req.query,
            max_results: req.top_k,
            connector: req.connector,
            run_async: req.run_async,
        };
        let verb = model::verbs::DISCOVER;
        self.search(who, walk(verb, Shape::Search, BTreeMap::new()), request)
            .await
    }

    /// `maps.search`: places matching a query, near somewhere when asked.
    pub async fn maps_search(
        &self,
        who: &Principal,
        req: MapsSearchRequest,
    ) -> Result<Envelope<CallOutput>, OpError> {
        check_limit("max_results", req.max_results)?;
        let mut fields = BTreeMap::new();
        if let Some(near) = req.near.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
            if near.chars().count() > MAX_QUERY_CHARS {
                return Err(OpError::Invalid(format!(
                    "near: at most {MAX_QUERY_CHARS} characters"
                )));
            }
            fields.insert(NEAR_FIELD.to_owned(), near.to_owned());
        }
        let request = CallRequest {
            query: req.query,
            max_results: req.max_results,
            connector: req.connector,
            run_async: req.run_async,
        };
        let verb = model::verbs::MAPS_SEARCH;
        self.search(who, walk(verb, Shape::Place, fields), request)
            .await
    }

    /// `maps.place`: one place read again by its id.
    pub async fn maps_place(
        &self,
        who: &Principal,
        req: PlaceRequest,
    ) -> Result<Envelope<CallOutput>, OpError> {
        let request = CallRequest {
            query: check_place_id(&req.place_id)?,
            max_results: Some(1),
            connector: req.connector,
            run_async: req.run_async,
        };
        let verb = model::verbs::MAPS_PLACE;
        self.search(who, walk(verb, Shape::Place, BTreeMap::new()), request)
            .await
    }

    /// `maps.reviews`: what people wrote about a place.
    pub async fn maps_reviews(
        &self,
        who: &Principal,
        req: ReviewsRequest,
    ) -> Result<Envelope<CallOutput>, OpError> {
        check_limit("max_results", req.max_results)?;
        let request = CallRequest {
            query: check_place_id(&req.place_id)?,
            max_results: req.max_results,
            connector: req.connector,
            run_async: req.run_async,
        };
        let verb = model::verbs::MAPS_REVIEWS;
        self.search(who, walk(verb, Shape::Review, BTreeMap::new()), request)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn place_ids_name_their_id_system() {
        assert_eq!(
            check_place_id(" osm:N240109189 ").unwrap(),
            "osm:N240109189"
        );
        assert!(check_place_id("google:ChIJN1t_tDeuEmsRUsoyG83frY4").is_ok());
        for bad in [
            "",
            "osm:",
            "ChIJN1t",
            "google:a b",
            &format!("osm:{}", "1".repeat(600)),
        ] {
            let err = check_place_id(bad).unwrap_err().to_string();
            assert!(err.contains("place_id"), "{bad}: {err}");
        }
    }
}
