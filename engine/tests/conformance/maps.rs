//! The maps adapters' answers, as their providers document them:
//! Nominatim's `jsonv2` search and lookup, the Places API (New)'s text
//! search and place details (with reviews), and SerpApi's Google Maps
//! engines. Place details are fired with a place's id, as `maps.place`
//! and `maps.reviews` are.

use std::collections::HashMap;

use crate::fixtures::{Fixture, KeyIn};

const NOMINATIM_HIT: &str = r#"[{"place_id":12345,"licence":"Data © OpenStreetMap contributors, ODbL 1.0. http://osm.org/copyright",
    "osm_type":"node","osm_id":240109189,"lat":"52.5170365","lon":"13.3888599","category":"amenity","type":"cafe",
    "place_rank":30,"importance":0.3,"addresstype":"amenity","name":"Acme Rockets",
    "display_name":"Acme Rockets, 42, Unter den Linden, Mitte, Berlin, 10117, Deutschland",
    "address":{"amenity":"Acme Rockets","house_number":"42","road":"Unter den Linden","city":"Berlin","postcode":"10117","country":"Deutschland","country_code":"de"},
    "extratags":{"phone":"+49 30 1234567","website":"https://acme.example/"},
    "boundingbox":["52.5169865","52.5170865","13.3888099","13.3889099"]}]"#;

const GOOGLE_PLACE: &str = r#"{"id":"ChIJ1","displayName":{"text":"Acme Rockets","languageCode":"en"},
    "formattedAddress":"Unter den Linden 42, 10117 Berlin, Germany","location":{"latitude":52.5170365,"longitude":13.3888599},
    "rating":4.6,"userRatingCount":120,"types":["store","point_of_interest","establishment"],
    "internationalPhoneNumber":"+49 30 1234567","websiteUri":"https://acme.example/",
    "googleMapsUri":"https://maps.google.com/?cid=1234567890"}"#;

/// The first fixtures of the maps-only adapters.
pub(crate) fn fixtures(f: &mut HashMap<&'static str, Fixture>) {
    f.insert(
        "nominatim",
        Fixture {
            intent: "maps.search",
            query: "Acme",
            branch: Some("/search"),
            content_type: "application/json",
            success: vec![("", NOMINATIM_HIT)],
            first_url: "https://www.openstreetmap.org/node/240109189",
            empty: vec![("", "[]")],
            // The public instance blocks an application breaking its policy.
            refused: (403, "<html><body><h1>Access blocked</h1></body></html>"),
            key_in: None,
            asks: Some("limit=10"),
            retitle: ("\"name\":\"Acme Rockets\"", "\"name\":\"Acme Rocketry\""),
        },
    );
    f.insert("google-places", Fixture {
        intent: "maps.search",
        query: "Acme",
        branch: Some("places:searchText"),
        content_type: "application/json",
        success: vec![("", text_search_answer())],
        first_url: "https://maps.google.com/?cid=1234567890",
        // Text Search answers an empty object when nothing matches.
        empty: vec![("", "{}")],
        refused: (400, r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}"#),
        key_in: Some(KeyIn::Header("x-goog-api-key")),
        asks: Some("\"pageSize\":10"),
        retitle: ("\"text\":\"Acme Rockets\"", "\"text\":\"Acme Rocketry\""),
    });
}

/// Text Search's answer: the place in `places`.
fn text_search_answer() -> &'static str {
    r#"{"places":[{"id":"ChIJ1","displayName":{"text":"Acme Rockets","languageCode":"en"},
    "formattedAddress":"Unter den Linden 42, 10117 Berlin, Germany","location":{"latitude":52.5170365,"longitude":13.3888599},
    "rating":4.6,"userRatingCount":120,"types":["store","point_of_interest","establishment"],
    "internationalPhoneNumber":"+49 30 1234567","websiteUri":"https://acme.example/",
    "googleMapsUri":"https://maps.google.com/?cid=1234567890"}]}"#
}

/// The other maps intents of the maps adapters and of SerpApi.
pub(crate) fn branches(first: &dyn Fn(&str) -> Fixture) -> Vec<(&'static str, Fixture)> {
    let nominatim = first("nominatim");
    let google = first("google-places");
    let serpapi = first("serpapi");
    vec![
        (
            "nominatim",
            Fixture {
                intent: "maps.place",
                query: "osm:N240109189",
                branch: Some("osm_ids=N240109189"),
                asks: None,
                ..nominatim
            },
        ),
        (
            "google-places",
            Fixture {
                intent: "maps.place",
                query: "google:ChIJ1",
                branch: Some("/v1/places/ChIJ1"),
                success: vec![("", GOOGLE_PLACE)],
                // Details of a place that is not there: no place in the answer.
                empty: vec![("", "{}")],
                asks: None,
                ..google.clone()
            },
        ),
        (
            "google-places",
            Fixture {
                intent: "maps.reviews",
                query: "google:ChIJ1",
                branch: Some("/v1/places/ChIJ1"),
                success: vec![(
                    "",
                    r#"{"id":"ChIJ1","reviews":[{"name":"places/ChIJ1/reviews/r1","relativePublishTimeDescription":"a month ago",
                    "rating":5,"text":{"text":"Friendly staff, fast rockets.","languageCode":"en"},
                    "originalText":{"text":"Friendly staff, fast rockets.","languageCode":"en"},
                    "authorAttribution":{"displayName":"Ada L.","uri":"https://www.google.com/maps/contrib/1","photoUri":"https://lh3.example/a.png"},
                    "publishTime":"2026-11-01T10:00:00Z","googleMapsUri":"https://www.google.com/maps/reviews/data=r1"}]}"#,
                )],
                first_url: "https://www.google.com/maps/reviews/data=r1",
                empty: vec![("", r#"{"id":"ChIJ1"}"#)],
                asks: None,
                retitle: (
                    "Friendly staff, fast rockets.",
                    "Friendly staff, very fast rockets.",
                ),
                ..google
            },
        ),
        (
            "serpapi",
            Fixture {
                intent: "maps.search",
                branch: Some("engine=google_maps"),
                success: vec![(
                    "",
                    r#"{"search_metadata":{"status":"Success"},"local_results":[
                    {"position":1,"title":"Acme Rockets","place_id":"ChIJ1","data_id":"0x47a851c655f20989:0x26bbfb4e84674c63",
                    "gps_coordinates":{"latitude":52.5170365,"longitude":13.3888599},"rating":4.6,"reviews":120,
                    "type":"Store","types":["Store"],"address":"Unter den Linden 42, 10117 Berlin","phone":"+49 30 1234567","website":"https://acme.example/"}]}"#,
                )],
                first_url: "https://www.google.com/maps/place/?q=place_id:ChIJ1",
                asks: None,
                retitle: ("\"title\":\"Acme Rockets\"", "\"title\":\"Acme Rocketry\""),
                ..serpapi.clone()
            },
        ),
        (
            "serpapi",
            Fixture {
                intent: "maps.place",
                query: "google:ChIJ1",
                branch: Some("place_id=ChIJ1"),
                success: vec![(
                    "",
                    r#"{"search_metadata":{"status":"Success"},"place_results":{"title":"Acme Rockets","place_id":"ChIJ1",
                    "gps_coordinates":{"latitude":52.5170365,"longitude":13.3888599},"rating":4.6,"reviews":120,"type":"Store",
                    "address":"Unter den Linden 42, 10117 Berlin","phone":"+49 30 1234567","website":"https://acme.example/"}}"#,
                )],
                first_url: "https://www.google.com/maps/place/?q=place_id:ChIJ1",
                asks: None,
                retitle: ("\"title\":\"Acme Rockets\"", "\"title\":\"Acme Rocketry\""),
                ..serpapi.clone()
            },
        ),
        (
            "serpapi",
            Fixture {
                intent: "maps.reviews",
                query: "google:ChIJ1",
                branch: Some("engine=google_maps_reviews"),
                success: vec![(
                    "",
                    r#"{"search_metadata":{"status":"Success"},"place_info":{"title":"Acme Rockets","rating":4.6,"reviews":120},
                    "reviews":[{"link":"https://www.google.com/maps/reviews/data=r1","rating":5.0,"date":"a month ago",
                    "iso_date":"2026-11-01T10:00:00Z","snippet":"Friendly staff, fast rockets.","user":{"name":"Ada L.","link":"https://www.google.com/maps/contrib/1"}}]}"#,
                )],
                first_url: "https://www.google.com/maps/reviews/data=r1",
                empty: vec![(
                    "",
                    r#"{"search_metadata":{"status":"Success"},"reviews":[]}"#,
                )],
                asks: None,
                retitle: (
                    "Friendly staff, fast rockets.",
                    "Friendly staff, very fast rockets.",
                ),
                ..serpapi
            },
        ),
    ]
}
