//! The OpenAPI document served at `/api/openapi.json`: every route it lists
//! is routed and nothing else is, it reads as OpenAPI 3.1, and every
//! reference, parameter and error in it resolves.

mod common;

use std::collections::BTreeSet;

use common::TestServer;
use serde_json::Value;

async fn the_document(server: &TestServer) -> (String, Value) {
    // Anyone may read it: a client is written before it has a token.
    let res = server
        .anonymous
        .get(server.at("/api/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let text = res.text().await.unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    (text, json)
}

#[tokio::test]
async fn every_documented_route_is_routed_and_nothing_else_under_api_is() {
    let server = TestServer::start().await;
    let (_, doc) = the_document(&server).await;
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .filter(|k| ["get", "put", "post", "delete", "patch"].contains(&k.as_str()))
                .map(move |m| (m.to_uppercase(), path.clone()))
        })
        .collect();
    // The route list every other test walks is the document's.
    let listed: BTreeSet<(String, String)> = server::api::routes()
        .into_iter()
        .map(|(method, path)| (method.to_string(), path))
        .collect();
    assert_eq!(listed, documented);
    assert!(documented.len() > 50, "{documented:?}");
    // The router answers each one itself: never the "no such route" 404,
    // never 405 (ids that name nothing, and empty bodies, are fine).
    let no_such_route = |status: u16, body: &str| {
        status == 405 || (status == 404 && body.contains("no such API route"))
    };
    for (method, path) in &documented {
        let concrete = path
            .split('/')
            .map(|segment| {
                if segment.starts_with('{') {
                    "0"
                } else {
                    segment
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        let res = server
            .client
            .request(method.parse().unwrap(), server.at(&concrete))
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        // An event stream goes on: its headers are the answer.
        let body = if path == "/api/events" {
            String::new()
        } else {
            res.text().await.unwrap()
        };
        assert!(
            !no_such_route(status, &body),
            "{method} {path} is documented but not routed: {status} {body}"
        );
    }
    // And what is not documented is not routed.
    for (method, path) in [("GET", "/api/nope"), ("POST", "/api/record-sets/1/nope")] {
        let res = server
            .client
            .request(method.parse().unwrap(), server.at(path))
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        let body = res.text().await.unwrap();
        assert!(
            no_such_route(status, &body),
            "{method} {path}: {status} {body}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn the_document_is_openapi_3_1_and_everything_in_it_resolves() {
    let server = TestServer::start().await;
    let (text, doc) = the_document(&server).await;
    let spec = oas3::from_json(&text).expect("the document reads as OpenAPI 3.1");
    let version = spec.validate_version().expect("a supported version");
    assert_eq!((version.major, version.minor), (3, 1));

    // Every reference points at a schema the document has.
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in &refs {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("a reference outside the schemas: {r}"));
        assert!(schemas.contains_key(name), "{r} does not resolve");
    }

    let public = ["/api/health", "/api/ready", "/api/openapi.json"];
    let mut operations = 0;
    for (path, method, op) in spec.operations() {
        operations += 1;
        let at = format!("{method} {path}");
        let params = op.parameters(&spec).expect(&at);
        // Each `{name}` of the path is a declared path parameter, and back.
        let in_path: BTreeSet<&str> = path
            .split('{')
            .skip(1)
            .filter_map(|p| p.split_once('}').map(|(name, _)| name))
            .collect();
        let declared: BTreeSet<&str> = params
            .iter()
            .filter(|p| p.location == oas3::spec::ParameterIn::Path)
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(in_path, declared, "{at}");
        op.request_body(&spec).expect(&at);
        let responses = op.responses(&spec);
        assert!(
            responses.keys().any(|code| code.starts_with('2')),
            "{at} has no success"
        );
        assert!(responses.contains_key("500"), "{at}");
        // What an error looks like is part of the contract.
        for (code, response) in &responses {
            if code.starts_with(['4', '5']) && path != "/api/openapi.json" {
                assert!(
                    response.content.contains_key("application/json"),
                    "{at} {code} has no error body"
                );
            }
        }
        if !public.contains(&path.as_str()) {
            assert!(responses.contains_key("401"), "{at} says nothing of 401");
        }
    }
    assert_eq!(operations, server::api::routes().len());
    server.stop().await;
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(list) => list.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Every verb declared in code has its route in the document, and the
/// route's body is the schema the registry lists for it (one type makes
/// both, so they cannot drift).
#[tokio::test]
async fn every_typed_verb_is_documented_with_the_registry_s_schema() {
    let server = TestServer::start().await;
    let (_, doc) = the_document(&server).await;
    let (_, verbs) = server.get_json("/api/capabilities").await;
    for verb in model::VERBS {
        let path = format!("/api/capabilities/{}/call", verb.name);
        let body = &doc["paths"][&path]["post"]["requestBody"]["content"]["application/json"]
            ["schema"]["$ref"];
        let name = body
            .as_str()
            .unwrap_or_else(|| panic!("{path} is documented with a body: {body}"))
            .trim_start_matches("#/components/schemas/");
        let listed = verbs
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == verb.name)
            .unwrap_or_else(|| panic!("{} listed", verb.name));
        assert_eq!(
            doc["components"]["schemas"][name], listed["input_schema"],
            "{}: the document's {name} and the registry's input schema",
            verb.name
        );
    }
}
