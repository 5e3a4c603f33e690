//! The maps verbs through REST, MCP and the CLI against local fakes of
//! Nominatim and the Places API (New) in their documented answer shapes:
//! a search near somewhere (typed coordinates, an `osm:` id, our
//! User-Agent), a place read again by that id, reviews of a Google place,
//! an id no connector of the chain reads, a rate limit and a refused key,
//! each failing with its reason while the other connectors keep answering.

mod common;

use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Json;
use common::agent::{agent, answer, call, token};
use common::command::switchyard;
use common::{TestServer, TEST_EMAIL, TEST_WORKSPACE};
use engine::connectors::builtin::{google_places, nominatim, Endpoint};
use engine::connectors::http::Http;
use serde_json::{json, Value};

const GOOD_KEY: &str = "places-test-key";

/// What the fakes were asked: each request's path and query, and its
/// User-Agent.
type Asked = Arc<Mutex<Vec<(String, String)>>>;

fn nominatim_hit() -> Value {
    json!([{
        "place_id": 12345, "osm_type": "node", "osm_id": 240109189,
        "lat": "52.5170365", "lon": "13.3888599", "category": "amenity", "type": "cafe",
        "name": "Acme Rockets",
        "display_name": "Acme Rockets, 42, Unter den Linden, Berlin, 10117, Deutschland",
        "extratags": { "phone": "+49 30 1234567", "website": "https://acme.example/" }
    }])
}

/// Nominatim: `/search` finds Acme only when asked near Berlin; `/lookup`
/// reads node 240109189 again.
async fn fake_nominatim(asked: Asked) -> String {
    let search_asked = asked.clone();
    let app = axum::Router::new()
        .route(
            "/search",
            get(
                move |Query(q): Query<Vec<(String, String)>>, headers: HeaderMap| {
                    let asked = search_asked.clone();
                    async move {
                        let ua = headers["user-agent"].to_str().unwrap_or("").to_owned();
                        let text = q.iter().find(|(k, _)| k == "q").map(|(_, v)| v.clone());
                        asked.lock().unwrap().push((format!("search {text:?}"), ua));
                        if text.as_deref() == Some("Acme Rockets, Berlin") {
                            Json(nominatim_hit())
                        } else {
                            Json(json!([]))
                        }
                    }
                },
            ),
        )
        .route(
            "/lookup",
            get(
                move |Query(q): Query<Vec<(String, String)>>, headers: HeaderMap| {
                    let asked = asked.clone();
                    async move {
                        let ua = headers["user-agent"].to_str().unwrap_or("").to_owned();
                        let ids = q
                            .iter()
                            .find(|(k, _)| k == "osm_ids")
                            .map(|(_, v)| v.clone());
                        asked.lock().unwrap().push((format!("lookup {ids:?}"), ua));
                        match ids.as_deref() {
                            Some("N240109189") => Json(nominatim_hit()),
                            _ => Json(json!([])),
                        }
                    }
                },
            ),
        );
    serve(app).await
}

/// The Places API (New): a text search that is rate-limited for "Busy",
/// place details with reviews for ChIJ1, and Google's refusal of any
/// other key.
async fn fake_places() -> String {
    let refused = || {
        (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT"}})),
        )
            .into_response()
    };
    let app = axum::Router::new()
        .route(
            "/v1/places:searchText",
            post(move |headers: HeaderMap, Json(body): Json<Value>| async move {
                if headers["x-goog-api-key"] != GOOD_KEY {
                    return refused();
                }
                if body["textQuery"] == "Busy" {
                    return (
                        StatusCode::TOO_MANY_REQUESTS,
                        [("retry-after", "30")],
                        Json(json!({"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}})),
                    )
                        .into_response();
                }
                Json(json!({"places": []})).into_response()
            }),
        )
        .route(
            "/v1/places/{id}",
            get(move |Path(id): Path<String>, headers: HeaderMap| async move {
                if headers["x-goog-api-key"] != GOOD_KEY {
                    return refused();
                }
                if id != "ChIJ1" {
                    return (StatusCode::NOT_FOUND, Json(json!({"error": {"code": 404, "status": "NOT_FOUND"}}))).into_response();
                }
                let mask = headers["x-goog-fieldmask"].to_str().unwrap_or("");
                if mask.contains("reviews") {
                    return Json(json!({"id": "ChIJ1", "reviews": [{
                        "rating": 5, "relativePublishTimeDescription": "a month ago",
                        "text": {"text": "Friendly staff, fast rockets.", "languageCode": "en"},
                        "authorAttribution": {"displayName": "Ada L."},
                        "publishTime": "2026-11-01T10:00:00Z",
                        "googleMapsUri": "https://www.google.com/maps/reviews/data=r1"
                    }]}))
                    .into_response();
                }
                Json(json!({"id": "ChIJ1", "displayName": {"text": "Acme Rockets"},
                    "formattedAddress": "Unter den Linden 42, 10117 Berlin, Germany",
                    "location": {"latitude": 52.5170365, "longitude": 13.3888599},
                    "rating": 4.6, "userRatingCount": 120, "types": ["store"]}))
                .into_response()
            }),
        );
    serve(app).await
}

async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A server whose Nominatim and Google Places reach the fakes, Places
/// with `key`.
async fn server(asked: Asked, key: &str) -> TestServer {
    let nominatim_url = fake_nominatim(asked).await;
    let places_url = fake_places().await;
    let key = key.to_owned();
    TestServer::start_with(engine::store::testing::sqlite(), move |state| {
        let registry = state.engine.registry();
        let endpoint = |base: String, key: Option<String>| Endpoint {
            http: Http::new().unwrap(),
            base: Some(base),
            key,
        };
        registry
            .register(
                nominatim::registration(),
                Arc::new(nominatim::Nominatim(endpoint(nominatim_url, None))),
            )
            .unwrap();
        // The key is given to the adapter here, as the environment would.
        let mut places = google_places::registration();
        places.profile.requires_env.clear();
        registry
            .register(
                places,
                Arc::new(google_places::GooglePlaces(endpoint(places_url, Some(key)))),
            )
            .unwrap();
    })
    .await
}

#[tokio::test]
async fn places_are_found_read_again_and_reviewed_through_rest_and_mcp() {
    let asked = Asked::default();
    let server = server(asked.clone(), GOOD_KEY).await;
    let (code, found) = server
        .post_json(
            "/api/capabilities/maps.search/call",
            json!({"query": "Acme Rockets", "near": "Berlin"}),
        )
        .await;
    assert_eq!(
        (code, found["status"].as_str()),
        (200, Some("completed")),
        "{found}"
    );
    let place = &found["results"][0];
    assert_eq!(place["id"], "osm:N240109189");
    assert_eq!(place["lat"], 52.5170365, "a number, not text");
    assert_eq!(place["lon"], 13.3888599);
    assert_eq!(place["phone"], "+49 30 1234567");
    assert_eq!(place["categories"], json!(["cafe", "amenity"]));
    assert_eq!(place["provider"], "nominatim");
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked[0].0, "search Some(\"Acme Rockets, Berlin\")");
        assert!(
            asked[0].1.starts_with("Switchyard/"),
            "our User-Agent: {}",
            asked[0].1
        );
    }

    // The id reads the place again; one with the same id system only.
    let (_, again) = server
        .post_json(
            "/api/capabilities/maps.place/call",
            json!({"place_id": "osm:N240109189"}),
        )
        .await;
    assert_eq!(again["results"][0]["name"], "Acme Rockets", "{again}");
    let (_, google) = server
        .post_json(
            "/api/capabilities/maps.place/call",
            json!({"place_id": "google:ChIJ1"}),
        )
        .await;
    assert_eq!(google["status"], "completed", "{google}");
    assert_eq!(google["results"][0]["provider"], "google-places");
    assert_eq!(google["results"][0]["rating_count"], 120);

    // Reviews: Nominatim has none, and Google reads only google: ids.
    let (_, reviews) = server
        .post_json(
            "/api/capabilities/maps.reviews/call",
            json!({"place_id": "google:ChIJ1"}),
        )
        .await;
    assert_eq!(reviews["status"], "completed", "{reviews}");
    let review = &reviews["results"][0];
    assert_eq!(
        (
            review["author"].as_str(),
            review["rating"].as_f64(),
            review["place_id"].as_str()
        ),
        (Some("Ada L."), Some(5.0), Some("google:ChIJ1"))
    );
    assert_eq!(review["text"], "Friendly staff, fast rockets.");
    let (_, unread) = server
        .post_json(
            "/api/capabilities/maps.reviews/call",
            json!({"place_id": "osm:N240109189"}),
        )
        .await;
    assert_eq!(unread["status"], "failed", "{unread}");
    assert!(
        unread["error"]
            .as_str()
            .unwrap()
            .contains("google-places: Google Places reads only place ids starting google:"),
        "{unread}"
    );

    // Bad input names its field.
    for (path, body, field) in [
        ("maps.place", json!({"place_id": "ChIJ1"}), "place_id"),
        (
            "maps.reviews",
            json!({"place_id": "google:x", "max_results": 0}),
            "max_results",
        ),
        (
            "maps.search",
            json!({"query": "Acme", "near": "x".repeat(1001)}),
            "near",
        ),
        ("maps.search", json!({"query": "Acme", "top_k": 3}), "top_k"),
    ] {
        let (code, error) = server
            .post_json(&format!("/api/capabilities/{path}/call"), body.clone())
            .await;
        assert_eq!(code, 400, "{body}: {error}");
        assert!(
            error["detail"].as_str().unwrap().contains(field),
            "{body}: {error}"
        );
    }

    // The agents' door: the same tool schema the registry lists, and the
    // same envelope.
    let token = token(&server, TEST_EMAIL, TEST_WORKSPACE).await;
    let agent = agent(&server, &token).await;
    let tools = agent.list_all_tools().await.unwrap();
    let search = tools
        .iter()
        .find(|t| t.name == "maps.search")
        .expect("a maps tool");
    assert!(search.input_schema["properties"]["near"].is_object());
    assert_eq!(
        search.input_schema["properties"]["connector"]["enum"],
        json!(["nominatim", "google-places"])
    );
    let read = answer(&call(&agent, "maps.place", json!({"place_id": "google:ChIJ1"})).await);
    assert_eq!(read["results"], google["results"]);
    agent.cancel().await.ok();

    // And from a shell.
    let ran = switchyard(
        &server,
        Some(&token),
        &["call", "maps.search", "Acme", "Rockets", "--near", "Berlin"],
    )
    .await;
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("52.51704, 13.38886"), "{}", ran.stdout);
    assert!(
        ran.stdout.contains("id osm:N240109189 via nominatim"),
        "{}",
        ran.stdout
    );
    let ran = switchyard(
        &server,
        Some(&token),
        &["call", "maps.reviews", "google:ChIJ1"],
    )
    .await;
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("5/5 Ada L."), "{}", ran.stdout);
    server.stop().await;
}

#[tokio::test]
async fn a_rate_limit_and_a_refused_key_fail_with_their_reasons_and_others_keep_answering() {
    let server = server(Asked::default(), GOOD_KEY).await;
    let (_, busy) = server
        .post_json(
            "/api/capabilities/maps.search/call",
            json!({"query": "Busy", "connector": "google-places"}),
        )
        .await;
    assert_eq!(busy["status"], "failed", "{busy}");
    assert!(
        busy["error"].as_str().unwrap().contains("rate-limited"),
        "{busy}"
    );
    // Nominatim still answers the verb.
    let (_, verbs) = server.get_json("/api/capabilities").await;
    let search = verbs
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "maps.search")
        .unwrap();
    assert_eq!(search["available"], true, "{search}");
    server.stop().await;

    let refused = server_with_bad_key().await;
    let (_, read) = refused
        .post_json(
            "/api/capabilities/maps.place/call",
            json!({"place_id": "google:ChIJ1"}),
        )
        .await;
    assert_eq!(read["status"], "failed", "{read}");
    assert!(
        read["error"]
            .as_str()
            .unwrap()
            .contains("API key not valid"),
        "{read}"
    );
    assert!(
        !read.to_string().contains("bad-key"),
        "the key never shows: {read}"
    );
    let (_, verbs) = refused.get_json("/api/capabilities").await;
    let place = verbs
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "maps.reviews")
        .unwrap();
    assert_eq!(
        place["available"], false,
        "its only connector's key was refused: {place}"
    );
    refused.stop().await;
}

async fn server_with_bad_key() -> TestServer {
    server(Asked::default(), "bad-key").await
}
