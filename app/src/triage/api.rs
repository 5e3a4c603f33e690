//! The server functions of the triage view. Each is a public endpoint: it
//! checks its input and reaches the engine itself.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use model::{Chip, ChipState, ConnectorMenu, Item, Job, RecordFilter, TriagePage, TriageVerb};
use serde::{Deserialize, Serialize};

/// How the triage view pages records.
pub const PAGE_SIZE: i64 = 50;

#[cfg(feature = "ssr")]
use crate::access::ssr;

#[server]
pub async fn load_triage(
    set_id: i64,
    filter: RecordFilter,
    search: String,
    offset: i64,
) -> Result<TriagePage, ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine
        .triage_page(&who, set_id, filter, &search, offset, PAGE_SIZE)
        .await
        .map_err(ssr::fail)
}

/// What the view shows of a fire: the chip after it, the items it added or
/// found again, and why nothing fired when nothing could. The whole report
/// (every attempt with its receipt, the connectors passed over) is REST's
/// `POST /api/records/{id}/fire`; the view needs none of it, and reading it
/// would put its readers in the module every triage view loads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChipFired {
    pub chip: ChipState,
    pub items: Vec<Item>,
    /// What the person is told about the fire: a pick that could not fire
    /// and the fallback taken, or why nothing fired.
    pub notes: Vec<String>,
    /// Whether any connector was tried.
    pub tried: bool,
    /// The record's daily cap stopped a priced connector and nothing was
    /// found: the question to ask ("spend more?").
    pub spend_more: Option<model::SpendQuestion>,
}

impl ChipFired {
    /// Why nothing fired, when nothing did: the last note.
    pub fn not_fired(&self) -> Option<String> {
        if self.spend_more.is_some() {
            return None;
        }
        (!self.tried).then(|| self.notes.last().cloned()).flatten()
    }
}

#[cfg(feature = "ssr")]
impl From<model::FireReport> for ChipFired {
    fn from(report: model::FireReport) -> Self {
        Self {
            tried: !report.attempts.is_empty(),
            spend_more: report.spend_question().cloned(),
            notes: report.notes,
            chip: report.chip,
            items: report.items,
        }
    }
}

#[server]
pub async fn fire_chip(
    record_id: i64,
    pack_id: String,
    connector: Option<String>,
    // Absent: within the record's daily caps.
    spend_more: Option<bool>,
) -> Result<ChipFired, ServerFnError> {
    let (engine, who) = ssr::door()?;
    let choice = engine::ops::FireChoice {
        connector: connector.as_deref(),
        spend_more: spend_more.unwrap_or(false),
    };
    engine
        .fire_pack(&who, record_id, &pack_id, choice)
        .await
        .map(ChipFired::from)
        .map_err(ssr::fail)
}

/// The chips now of the given records of a set (the view reads them again
/// when a connector changed). Ids that are not the set's are left out.
#[server(input = Json)]
pub async fn reload_chips(
    set_id: i64,
    record_ids: Vec<i64>,
) -> Result<Vec<(i64, Vec<Chip>)>, ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine
        .chips_of_records(&who, set_id, &record_ids)
        .await
        .map_err(ssr::fail)
}

/// Cancels a fire in flight; `false` when it had already ended.
#[server]
pub async fn cancel_fire(fire_id: i64) -> Result<bool, ServerFnError> {
    let (engine, who) = ssr::door()?;
    match engine.cancel_fire(&who, fire_id).await {
        Ok(()) => Ok(true),
        Err(engine::ops::OpError::Conflict { .. }) => Ok(false),
        Err(e) => Err(ssr::fail(e)),
    }
}

#[server]
pub async fn load_menu(record_id: i64, pack_id: String) -> Result<ConnectorMenu, ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine
        .record_menu(&who, record_id, &pack_id)
        .await
        .map_err(ssr::fail)
}

#[server]
pub async fn set_start_with(
    record_id: i64,
    pack_id: String,
    connector: Option<String>,
) -> Result<(), ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine
        .set_start_with(&who, record_id, &pack_id, connector.as_deref())
        .await
        .map_err(ssr::fail)
}

/// The outcome of a triage verb: the item as it is now, and a sentence when
/// someone else acted first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TriageOutcome {
    pub item: Item,
    pub conflict: Option<String>,
}

#[server]
pub async fn triage_item(
    item_id: i64,
    verb: TriageVerb,
    version: i64,
) -> Result<TriageOutcome, ServerFnError> {
    let (engine, who) = ssr::door()?;
    match engine.triage_item(&who, item_id, verb, version).await {
        Ok(item) => Ok(TriageOutcome {
            item,
            conflict: None,
        }),
        Err(engine::ops::OpError::Conflict {
            current: Some(current),
            ..
        }) => Ok(TriageOutcome {
            conflict: Some(format!(
                "Someone else acted first: this item is now {}{}.",
                current.state.name(),
                current
                    .triaged_by
                    .as_deref()
                    .map(|w| format!(" (by {w})"))
                    .unwrap_or_default()
            )),
            item: *current,
        }),
        Err(e) => Err(ssr::fail(e)),
    }
}

/// Starts the set's bundle over every record; each record may take at most
/// `paid_per_record` fires of paid connectors.
#[server]
pub async fn start_fanout(set_id: i64, paid_per_record: Option<u32>) -> Result<Job, ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine
        .start_fanout(&who, set_id, None, paid_per_record)
        .await
        .map_err(ssr::fail)
}

#[server]
pub async fn fanout_estimate(set_id: i64) -> Result<model::FanoutEstimate, ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine
        .estimate_fanout(&who, set_id)
        .await
        .map_err(ssr::fail)
}

#[server]
pub async fn cancel_fanout(job_id: i64) -> Result<Job, ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine.cancel_job(&who, job_id).await.map_err(ssr::fail)
}

/// Lines `offset..offset + limit` of the compact view.
#[server]
pub async fn load_lines(
    set_id: i64,
    filter: RecordFilter,
    search: String,
    offset: i64,
    limit: i64,
) -> Result<model::CompactPage, ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine
        .compact_page(&who, set_id, (filter, &search), offset, limit)
        .await
        .map_err(ssr::fail)
}

#[server]
pub async fn load_facets(set_id: i64) -> Result<model::SetFacets, ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine.set_facets(&who, set_id).await.map_err(ssr::fail)
}

#[server(input = Json)]
pub async fn preview_bulk(
    set_id: i64,
    selection: model::BulkSelection,
    verb: TriageVerb,
) -> Result<model::BulkPreview, ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine
        .bulk_preview(&who, set_id, selection, verb)
        .await
        .map_err(ssr::fail)
}

#[server(input = Json)]
pub async fn decide_bulk(
    set_id: i64,
    selection: model::BulkSelection,
    verb: TriageVerb,
    expect: Vec<model::BulkExpect>,
) -> Result<model::BulkOutcome, ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine
        .bulk_triage(&who, set_id, (selection, verb), &expect)
        .await
        .map_err(ssr::fail)
}

#[server]
pub async fn undo_bulk(batch_id: i64) -> Result<model::BulkOutcome, ServerFnError> {
    let (engine, who) = ssr::door()?;
    engine.undo_bulk(&who, batch_id).await.map_err(ssr::fail)
}
