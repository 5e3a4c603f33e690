//! Typed verbs: every capability a door can call, declared once with its
//! input and output types, how it answers and what it bills. The source
//! document's web verbs (`web.scrape`, `web.discover`) are declared here;
//! every search capability (built-in or from a manifest) is a verb of the
//! [`VerbKind::Search`] kind. Doors make their schemas from the types a
//! kind names, never by hand.

use serde::{Deserialize, Serialize};

use crate::BuiltinCapability;

/// The most addresses one `web.scrape` call reads.
pub const MAX_SCRAPE_URLS: usize = 20;
/// The longest address `web.scrape` takes, in bytes.
pub const MAX_URL_BYTES: usize = 2048;

/// `POST /api/capabilities/web.scrape/call`: read each address's page.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ScrapeRequest {
    /// The pages to read (1 to 20 http(s) addresses); one result each, in
    /// this order.
    pub urls: Vec<String>,
    /// Read every page with exactly this connector instead of walking the
    /// chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// Answer at once with `pending` and the job's id instead of waiting.
    #[serde(default, rename = "async")]
    pub run_async: bool,
}

/// `POST /api/capabilities/web.discover/call`: find pages about a query
/// through the web search connectors.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DiscoverRequest {
    /// What to look for, as a person would type it.
    pub query: String,
    /// At most this many results (1 to 50; 10 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Search with exactly this connector instead of walking the chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// Answer at once with `pending` and the job's id instead of waiting.
    #[serde(default, rename = "async")]
    pub run_async: bool,
}

/// Whether a page was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PageStatus {
    /// Read: `content` and `metadata` hold what it says.
    Ok,
    /// Not read: `error` says why (the batch goes on without it).
    Failed,
}

/// What a page says about itself. Provider text: show it as text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PageMetadata {
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub description: String,
    /// The page's language as it declares it (`<html lang>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// The address the page names as its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_url: Option<String>,
}

/// One address of a `web.scrape` call, as read. Provider text: show it as
/// text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ScrapedPage {
    /// The address as asked.
    pub url: String,
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub status: PageStatus,
    /// The page's main text (navigation, scripts and boilerplate left
    /// out); empty when it was not read.
    pub content: String,
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub metadata: PageMetadata,
    /// The page was longer than a connector reads (2 MiB of HTML, 200,000
    /// characters of text): `content` is of its first part.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The connector that read it (for a failed page: the last one tried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_id: Option<String>,
    /// Why it was not read, with each connector's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The input and output types of a verb: what its doors parse and answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum VerbKind {
    /// [`crate::CallRequest`] → [`crate::CallResult`]s.
    Search,
    /// [`ScrapeRequest`] → a [`ScrapedPage`] per address.
    Scrape,
    /// [`DiscoverRequest`] → [`crate::CallResult`]s, each naming the
    /// connector (provider) that found it.
    Discover,
    /// [`crate::MapsSearchRequest`] → [`crate::Place`]s.
    MapsSearch,
    /// [`crate::PlaceRequest`] → one [`crate::Place`].
    MapsPlace,
    /// [`crate::ReviewsRequest`] → [`crate::Review`]s.
    MapsReviews,
}

impl VerbKind {
    /// Every kind.
    pub const ALL: [VerbKind; 6] = [
        VerbKind::Search,
        VerbKind::Scrape,
        VerbKind::Discover,
        VerbKind::MapsSearch,
        VerbKind::MapsPlace,
        VerbKind::MapsReviews,
    ];
}

/// A type's JSON Schema, inline (nothing refers to a document's
/// components), as its OpenAPI document has it.
#[cfg(feature = "openapi")]
fn schema_of<T: utoipa::PartialSchema>() -> serde_json::Value {
    serde_json::to_value(T::schema()).unwrap_or_default()
}

#[cfg(feature = "openapi")]
impl VerbKind {
    /// The JSON Schema of what a verb of this kind takes.
    pub fn input_schema(self) -> serde_json::Value {
        match self {
            VerbKind::Search => schema_of::<crate::CallRequest>(),
            VerbKind::Scrape => schema_of::<ScrapeRequest>(),
            VerbKind::Discover => schema_of::<DiscoverRequest>(),
            VerbKind::MapsSearch => schema_of::<crate::MapsSearchRequest>(),
            VerbKind::MapsPlace => schema_of::<crate::PlaceRequest>(),
            VerbKind::MapsReviews => schema_of::<crate::ReviewsRequest>(),
        }
    }

    /// The JSON Schema of one result of a verb of this kind.
    pub fn output_schema(self) -> serde_json::Value {
        match self {
            VerbKind::Search | VerbKind::Discover => schema_of::<crate::CallResult>(),
            VerbKind::Scrape => schema_of::<ScrapedPage>(),
            VerbKind::MapsSearch | VerbKind::MapsPlace => schema_of::<crate::Place>(),
            VerbKind::MapsReviews => schema_of::<crate::Review>(),
        }
    }
}

/// How a verb answers: every verb answers the one envelope; this says
/// whether it can finish within the request, and whether it runs as a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum VerbMode {
    /// Finishes within the request when it is quick; `pending` with a job
    /// id when it is slower, or when asked with `async`.
    InlineOrJob,
}

/// A verb declared in code (the search verbs come from the capabilities
/// connectors declare).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verb {
    /// The dotted name, e.g. `web.scrape`.
    pub name: &'static str,
    pub label: &'static str,
    pub kind: VerbKind,
    /// The capability whose connectors it walks: a connector serving it
    /// serves the verb.
    pub runs_through: BuiltinCapability,
    pub mode: VerbMode,
    /// What one unit of its use is. Connectors charge by their own price
    /// per request, counted against the workspace's budgets.
    pub billing_unit: &'static str,
}

/// `web.scrape`: each address's page, read by the connectors serving
/// `crawl.extract`.
pub const SCRAPE: Verb = Verb {
    name: "web.scrape",
    label: "Read pages",
    kind: VerbKind::Scrape,
    runs_through: BuiltinCapability::CrawlExtract,
    mode: VerbMode::InlineOrJob,
    billing_unit: "page read",
};

/// `web.discover`: pages about a query, found by the connectors serving
/// `search.web`.
pub const DISCOVER: Verb = Verb {
    name: "web.discover",
    label: "Discover pages",
    kind: VerbKind::Discover,
    runs_through: BuiltinCapability::SearchWeb,
    mode: VerbMode::InlineOrJob,
    billing_unit: "search",
};

/// `maps.search`: places matching a query, near somewhere.
pub const MAPS_SEARCH: Verb = Verb {
    name: "maps.search",
    label: "Find places",
    kind: VerbKind::MapsSearch,
    runs_through: BuiltinCapability::MapsSearch,
    mode: VerbMode::InlineOrJob,
    billing_unit: "search",
};

/// `maps.place`: one place read again by its id.
pub const MAPS_PLACE: Verb = Verb {
    name: "maps.place",
    label: "Read a place",
    kind: VerbKind::MapsPlace,
    runs_through: BuiltinCapability::MapsPlace,
    mode: VerbMode::InlineOrJob,
    billing_unit: "place read",
};

/// `maps.reviews`: what people wrote about a place.
pub const MAPS_REVIEWS: Verb = Verb {
    name: "maps.reviews",
    label: "Read reviews",
    kind: VerbKind::MapsReviews,
    runs_through: BuiltinCapability::MapsReviews,
    mode: VerbMode::InlineOrJob,
    billing_unit: "page of reviews",
};

/// The verbs declared in code. Adding one is a constant above, its types
/// and its executor. A verb named like the capability it runs through
/// (`maps.search`) is that capability's typed door.
pub const VERBS: &[Verb] = &[SCRAPE, DISCOVER, MAPS_SEARCH, MAPS_PLACE, MAPS_REVIEWS];

impl Verb {
    /// The verb declared in code with this name.
    pub fn named(name: &str) -> Option<&'static Verb> {
        VERBS.iter().find(|v| v.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_are_found_by_name_and_are_not_capabilities_connectors_declare() {
        for verb in VERBS {
            assert_eq!(Verb::named(verb.name), Some(verb));
            // Either the typed door of the capability it runs through, or
            // a name no connector may declare.
            match verb.name.parse::<crate::Capability>() {
                Ok(cap) => assert_eq!(cap, verb.runs_through.into(), "{}", verb.name),
                Err(e) => assert!(e.reason.contains("typed verb"), "{}: {e}", verb.name),
            }
        }
        assert_eq!(Verb::named("search.news"), None);
        let kinds: Vec<VerbKind> = VERBS.iter().map(|v| v.kind).collect();
        for kind in VerbKind::ALL {
            let declared = kinds.iter().filter(|k| **k == kind).count();
            let expected = usize::from(kind != VerbKind::Search);
            assert_eq!(declared, expected, "{kind:?}: one verb per typed kind");
        }
    }

    #[cfg(feature = "openapi")]
    #[test]
    fn schemas_are_whole_without_references() {
        for kind in VerbKind::ALL {
            for schema in [kind.input_schema(), kind.output_schema()] {
                let text = schema.to_string();
                assert!(schema["properties"].is_object(), "{kind:?}: {text}");
                assert!(!text.contains("$ref"), "{kind:?}: {text}");
            }
        }
        let scrape = VerbKind::Scrape.input_schema();
        assert_eq!(scrape["required"], serde_json::json!(["urls"]));
        assert!(scrape["properties"]["async"].is_object());
    }

    #[test]
    fn each_kind_of_result_reads_back_as_itself() {
        let page = ScrapedPage {
            url: "https://acme.example/".into(),
            status: PageStatus::Failed,
            content: String::new(),
            metadata: PageMetadata::default(),
            truncated: false,
            connector_id: None,
            error: Some("site crawler: acme.example answered HTTP 404".into()),
        };
        let json = serde_json::to_string(&page).unwrap();
        let back: crate::CallOutput = serde_json::from_str(&json).unwrap();
        assert_eq!(back, crate::CallOutput::Page(page));
        let found = crate::CallResult {
            url: "https://acme.example/".into(),
            title: "Acme".into(),
            snippet: String::new(),
            connector_id: "brave".into(),
        };
        let json = serde_json::to_string(&found).unwrap();
        let back: crate::CallOutput = serde_json::from_str(&json).unwrap();
        assert_eq!(back, crate::CallOutput::Found(found));
        let place = crate::Place {
            id: "osm:N1".into(),
            name: "Café Einstein".into(),
            lat: Some(52.5),
            url: "https://www.openstreetmap.org/node/1".into(),
            provider: "nominatim".into(),
            ..crate::Place::default()
        };
        let json = serde_json::to_string(&place).unwrap();
        let back: crate::CallOutput = serde_json::from_str(&json).unwrap();
        assert_eq!(back, crate::CallOutput::Place(place));
        let review = crate::Review {
            place_id: "google:ChIJ1".into(),
            text: "Good coffee.".into(),
            url: "https://maps.example/r/1".into(),
            provider: "google-places".into(),
            ..crate::Review::default()
        };
        let json = serde_json::to_string(&review).unwrap();
        let back: crate::CallOutput = serde_json::from_str(&json).unwrap();
        assert_eq!(back, crate::CallOutput::Review(review));
    }
}
