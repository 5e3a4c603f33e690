//! What a call keeps of a connector's result, by its verb's kind: a search
//! result (each web address once), a place (each id once) or a review.
//! Maps connectors write the typed [`Place`] or [`Review`] into a result's
//! `raw`; a connector that does not (a manifest, the demo) still gives a
//! place or review made from its title, address and snippet.

use model::{CallOutput, CallResult, Place, Review};

use crate::connectors::seam::ConnectorResult;
use crate::urlnorm::{parse_web_url, url_key};

/// The kind of result a call keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    Search,
    Place,
    /// Reviews of the place with this id.
    Review,
}

impl Shape {
    /// The result as this call keeps it, with the key that makes it the
    /// same as another; `None` when it is not one (a search result without
    /// a web address).
    pub(crate) fn keep(
        self,
        found: ConnectorResult,
        connector_id: &str,
        asked: &str,
    ) -> Option<(String, CallOutput)> {
        match self {
            Shape::Search => {
                let key = url_key(&parse_web_url(&found.url)?);
                Some((
                    key,
                    CallOutput::Found(CallResult {
                        url: found.url,
                        title: found.title,
                        snippet: found.snippet,
                        connector_id: connector_id.to_owned(),
                    }),
                ))
            }
            Shape::Place => {
                let place = match serde_json::from_value::<Place>(found.raw) {
                    Ok(place) => Place {
                        provider: connector_id.to_owned(),
                        ..place
                    },
                    Err(_) => Place {
                        id: found.url.clone(),
                        name: found.title,
                        address: found.snippet,
                        url: found.url,
                        provider: connector_id.to_owned(),
                        ..Place::default()
                    },
                };
                Some((place.id.clone(), CallOutput::Place(place)))
            }
            Shape::Review => {
                let review = match serde_json::from_value::<Review>(found.raw) {
                    Ok(review) => Review {
                        provider: connector_id.to_owned(),
                        ..review
                    },
                    Err(_) => Review {
                        place_id: asked.to_owned(),
                        text: if found.snippet.is_empty() {
                            found.title
                        } else {
                            found.snippet
                        },
                        url: found.url,
                        provider: connector_id.to_owned(),
                        ..Review::default()
                    },
                };
                let key = format!("{}\n{}\n{}", review.url, review.author, review.text);
                Some((key, CallOutput::Review(review)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(url: &str, raw: serde_json::Value) -> ConnectorResult {
        ConnectorResult {
            url: url.into(),
            title: "Café Einstein".into(),
            snippet: "Kurfürstenstraße 58, Berlin".into(),
            raw,
        }
    }

    #[test]
    fn a_typed_place_is_kept_as_its_connector_wrote_it_with_the_connector_named() {
        let place = Place {
            id: "osm:N1".into(),
            name: "Café Einstein".into(),
            lat: Some(52.5),
            lon: Some(13.35),
            provider: "someone else".into(),
            ..Place::default()
        };
        let raw = serde_json::to_value(&place).unwrap();
        let (key, kept) = Shape::Place
            .keep(
                result("https://osm.example/node/1", raw),
                "nominatim",
                "cafe",
            )
            .unwrap();
        assert_eq!(key, "osm:N1");
        let CallOutput::Place(kept) = kept else {
            panic!("a place")
        };
        assert_eq!(kept.provider, "nominatim");
        assert_eq!(kept.lat, Some(52.5));
    }

    #[test]
    fn an_untyped_result_still_gives_a_place_or_a_review() {
        let (_, place) = Shape::Place
            .keep(
                result("https://demo.example/1", serde_json::Value::Null),
                "demo",
                "cafe",
            )
            .unwrap();
        let CallOutput::Place(place) = place else {
            panic!("a place")
        };
        assert_eq!(
            (
                place.name.as_str(),
                place.address.as_str(),
                place.id.as_str()
            ),
            (
                "Café Einstein",
                "Kurfürstenstraße 58, Berlin",
                "https://demo.example/1"
            )
        );
        let (_, review) = Shape::Review
            .keep(
                result("https://demo.example/1", serde_json::Value::Null),
                "demo",
                "osm:N1",
            )
            .unwrap();
        let CallOutput::Review(review) = review else {
            panic!("a review")
        };
        assert_eq!(review.place_id, "osm:N1");
        assert_eq!(review.text, "Kurfürstenstraße 58, Berlin");
    }

    #[test]
    fn a_search_result_needs_a_web_address() {
        assert!(Shape::Search
            .keep(
                result("javascript:alert(1)", serde_json::Value::Null),
                "x",
                "q"
            )
            .is_none());
    }
}
