//! The OpenAPI document served at `/api/openapi.json`: it lists exactly the
//! routes of the REST door's table, reads as OpenAPI 3.1, and every
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
async fn the_document_lists_exactly_the_routes_of_the_route_table() {
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
    let routed: BTreeSet<(String, String)> = server::api::routes()
        .iter()
        .map(|r| (r.method.to_string(), format!("/api{}", r.path)))
        .collect();
    let missing: Vec<_> = routed.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&routed).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "undocumented routes: {missing:?}; documented but not routed: {extra:?}"
    );
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

    let public = ["/api/health", "/api/openapi.json"];
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
