//! The MCP door's tools as agents see them: each verb's tool, its input
//! schema made from the registry's (with its limits and the connectors
//! serving it here) and what it says it does, and the record-set and
//! bulk tools, the same for every workspace.

use std::sync::Arc;

use model::{CapabilityView, VerbKind};
use rmcp::model::{JsonObject, Tool};
use serde_json::{json, Value};

pub(super) fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// A type's schema as its OpenAPI document has it, so what a tool
/// advertises is what it parses.
pub(super) fn type_schema<T: utoipa::PartialSchema>() -> Value {
    serde_json::to_value(T::schema()).unwrap_or_else(|_| json!({}))
}

/// The records filter's schema, made from the type the tool parses.
pub(super) fn record_filter_schema() -> Value {
    let mut schema = type_schema::<model::RecordFilter>();
    schema["default"] = json!("all");
    schema
}

/// A verb tool's input: the schema the registry made from the type the
/// tool parses, with its limits and the connectors that serve it here.
pub(super) fn verb_schema(verb: &CapabilityView, serving: &[String]) -> Value {
    let mut input = verb.input_schema.clone();
    let limit = match verb.kind {
        VerbKind::Search | VerbKind::MapsSearch | VerbKind::MapsReviews => Some("max_results"),
        VerbKind::Discover => Some("top_k"),
        VerbKind::Scrape | VerbKind::MapsPlace => None,
    };
    if let Some(limit) = limit {
        input["properties"][limit]["minimum"] = json!(1);
        input["properties"][limit]["maximum"] = json!(engine::ops::MAX_RESULTS);
    }
    if verb.kind == VerbKind::Scrape {
        input["properties"]["urls"]["minItems"] = json!(1);
        input["properties"]["urls"]["maxItems"] = json!(model::MAX_SCRAPE_URLS);
    }
    input["properties"]["connector"]["enum"] = json!(serving);
    input
}

/// What a verb tool says it does.
pub(super) fn verb_description(verb: &CapabilityView) -> String {
    let what = match verb.kind {
        VerbKind::Search => format!(
            "walks the chain of connectors serving {} (cheapest first) for a query",
            verb.runs_through
        ),
        VerbKind::Discover => format!(
            "finds pages about a query through the connectors serving {}, each result naming its connector",
            verb.runs_through
        ),
        VerbKind::Scrape => format!(
            "reads each address's page (main text and metadata) through the connectors serving {}; a page that cannot be read is a failed row, never a failed call",
            verb.runs_through
        ),
        VerbKind::MapsSearch => "finds places matching a query, near somewhere if given; each place's id is what maps.place and maps.reviews take".to_owned(),
        VerbKind::MapsPlace => "reads one place again by its id (osm:... or google:...)".to_owned(),
        VerbKind::MapsReviews => "reads what people wrote about a place, by its id (osm:... or google:...)".to_owned(),
    };
    let mut description = format!(
        "{}: {what}, and answers the envelope {{status, job_id, progress, results, error}}.",
        verb.label
    );
    if let Some(why) = &verb.unavailable {
        description = format!("Unavailable now: {why}. {description}");
    }
    description
}

pub(super) fn id_schema(name: &str, what: &str) -> Value {
    json!({
        "type": "object",
        "properties": { name: { "type": "integer", "description": what } },
        "required": [name],
    })
}

/// The tools of decisions in bulk, the same for every workspace.
pub(super) fn bulk_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "preview_bulk_triage",
            "Lists every untriaged item of a set a selection takes (the one item a connector found in a record, or items found by two or more connectors), each with the version a bulk decision expects.",
            schema(json!({
                "type": "object",
                "properties": {
                    "set_id": { "type": "integer" },
                    "selection": type_schema::<model::BulkSelection>(),
                    "verb": type_schema::<model::TriageVerb>(),
                },
                "required": ["set_id", "selection", "verb"],
            })),
        ),
        Tool::new(
            "bulk_triage",
            "Decides a verb on the items a preview listed, as one batch; items someone decided on since are skipped and named. Answers the batch id for undo_bulk_triage.",
            schema(json!({
                "type": "object",
                "properties": {
                    "set_id": { "type": "integer" },
                    "selection": type_schema::<model::BulkSelection>(),
                    "verb": type_schema::<model::TriageVerb>(),
                    "expect": { "type": "array", "items": type_schema::<model::BulkExpect>() },
                },
                "required": ["set_id", "selection", "verb", "expect"],
            })),
        ),
        Tool::new(
            "undo_bulk_triage",
            "Takes a bulk decision back as one step; items decided on since are skipped and named.",
            schema(json!({
                "type": "object",
                "properties": { "batch_id": { "type": "integer" } },
                "required": ["batch_id"],
            })),
        ),
    ]
}

/// The record-set tools, the same for every workspace.
pub(super) fn record_set_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "list_record_sets",
            "The record sets of your workspace: id, name, bundle, size.",
            schema(json!({ "type": "object", "properties": {} })),
        ),
        Tool::new(
            "list_records",
            "A page of a record set's records, each with its chips (one per pack: idle, found, not found, error...).",
            schema(json!({
                "type": "object",
                "properties": {
                    "set_id": { "type": "integer" },
                    "filter": record_filter_schema(),
                    "search": { "type": "string", "default": "" },
                    "offset": { "type": "integer", "minimum": 0, "default": 0 },
                    "limit": { "type": "integer", "minimum": 1, "maximum": engine::read_models::MAX_PAGE, "default": 50 },
                },
                "required": ["set_id"],
            })),
        ),
        Tool::new(
            "fire_pack",
            "Fires a pack's chain for one record (a chip click) and answers the fire's report in the envelope.",
            schema(json!({
                "type": "object",
                "properties": {
                    "record_id": { "type": "integer" },
                    "pack": { "type": "string", "description": "A pack id, e.g. wp" },
                    "connector": { "type": "string", "description": "Fire exactly this connector" },
                    "spend_more": { "type": "boolean", "default": false, "description": "Spend past the record's daily cap this time (after a refusal that asked)" },
                },
                "required": ["record_id", "pack"],
            })),
        ),
        Tool::new(
            "start_fanout",
            "Starts a job firing the packs (the set's bundle when none are named) over every record of a set; answers the envelope, pending with its job_id (read it with read_job).",
            schema(json!({
                "type": "object",
                "properties": {
                    "set_id": { "type": "integer" },
                    "packs": { "type": "array", "items": { "type": "string" } },
                    "paid_per_record": { "type": "integer", "minimum": 0, "description": "At most this many fires of paid connectors per record" },
                },
                "required": ["set_id"],
            })),
        ),
        Tool::new(
            "read_job",
            "Any job as it stands, a fan-out's or a capability call's (an envelope's job_id; kind says which): the envelope with status and progress, and a call's results once it has ended.",
            schema(id_schema("job_id", "An envelope's job_id")),
        ),
        Tool::new(
            "read_call",
            "A capability call as it stands: the envelope, with its results once it has ended.",
            schema(id_schema("call_id", "The call (an envelope's job_id)")),
        ),
        Tool::new(
            "list_items",
            "The curated layer of one record: every item found for it, with its triage state and provenance.",
            schema(id_schema("record_id", "The record")),
        ),
        Tool::new(
            "triage_item",
            "Accepts, discards or undoes an item, at the version you read (a stale version is refused with the item as it is now).",
            schema(json!({
                "type": "object",
                "properties": {
                    "item_id": { "type": "integer" },
                    "verb": { "type": "string", "enum": ["accept-canonical", "accept-context", "discard", "undo"] },
                    "version": { "type": "integer" },
                },
                "required": ["item_id", "verb", "version"],
            })),
        ),
    ]
}
