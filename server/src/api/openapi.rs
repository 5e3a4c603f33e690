//! The REST door's OpenAPI 3.1 document, generated from the handlers'
//! `#[utoipa::path]` attributes and the wire types, served at
//! `GET /api/openapi.json`. The router is made from the same attributes
//! (see [`super::router`]), so every route is documented.

use axum::Json;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use crate::auth::SESSION_COOKIE;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Switchyard",
        description = "Enrich and triage lists of entities: record sets, packs fired \
                       through chains of connectors, and the curated layer of what they \
                       found. Every error is `{error, detail}`; send an API token as \
                       `Authorization: Bearer ...` (or a browser session).",
    ),
    // Schemas only query parameters name (bodies bring their own).
    components(schemas(model::RecordFilter)),
    security(("bearer" = []), ("session" = [])),
)]
pub struct ApiDoc;

/// The ways in, and what every route but the public ones may answer.
struct Doors;

impl Modify for Doors {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API token (`switchyard token create`); it acts as its user \
                         in its workspace.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                SESSION_COOKIE,
                "A browser session from the sign-in page.",
            ))),
        );
        let error = || {
            ContentBuilder::new()
                .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                    "ErrorBody",
                ))))
                .build()
        };
        for (path, item) in doc.paths.paths.iter_mut() {
            let public = PUBLIC.contains(&path.as_str());
            for op in operations(item) {
                if !public {
                    op.responses
                        .responses
                        .entry("401".to_owned())
                        .or_insert_with(|| {
                            RefOr::T(
                                ResponseBuilder::new()
                                    .description("No session and no valid token")
                                    .content("application/json", error())
                                    .build(),
                            )
                        });
                }
                op.responses
                    .responses
                    .entry("500".to_owned())
                    .or_insert_with(|| {
                        RefOr::T(
                            ResponseBuilder::new()
                                .description("Something failed inside; the log has it")
                                .content("application/json", error())
                                .build(),
                        )
                    });
            }
        }
    }
}

/// The routes anyone may call (see [`crate::auth::is_public`]).
const PUBLIC: &[&str] = &["/api/health", "/api/openapi.json"];

fn operations(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    [
        item.get.as_mut(),
        item.put.as_mut(),
        item.post.as_mut(),
        item.delete.as_mut(),
        item.patch.as_mut(),
    ]
    .into_iter()
    .flatten()
}

/// The document, built once.
pub fn document() -> &'static utoipa::openapi::OpenApi {
    static DOC: std::sync::OnceLock<utoipa::openapi::OpenApi> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        let (_, mut doc) = super::router_and_document();
        Doors.modify(&mut doc);
        doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
        doc
    })
}

/// This document: every route of the REST door with its parameters,
/// bodies and answers, errors included.
#[utoipa::path(
    get, path = "/api/openapi.json", tag = "health", security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json"))
)]
pub async fn openapi_json() -> Json<&'static utoipa::openapi::OpenApi> {
    Json(document())
}
