//! Records as a triage card shows them, and CSV import reports.

use serde::{Deserialize, Serialize};

use crate::ChipState;

/// One column value of a record, in the CSV's column order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Field {
    pub name: String,
    pub value: String,
}

/// A chip on a card: the pack it fires and what it shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Chip {
    pub pack_id: String,
    #[serde(flatten)]
    pub state: ChipState,
    /// The connector a plain click fires first (its display name), if any can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// Why a connector of the chain is passed over for spending (a spent
    /// budget), if one is: the click goes on to `next`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
}

/// One record with its chips.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Record {
    pub id: i64,
    pub record_set_id: i64,
    pub name: String,
    pub fields: Vec<Field>,
    pub chips: Vec<Chip>,
}

/// A CSV line that was not imported, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Rejection {
    /// 1-based line number in the file (the header is line 1).
    pub line: u64,
    pub reason: String,
}

/// The answer to a CSV import.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ImportReport {
    /// The new record set.
    pub id: i64,
    pub imported: u64,
    /// The first bad lines (at most 1,000), in file order.
    pub rejected: Vec<Rejection>,
    /// Every bad line, listed or not.
    pub rejected_count: u64,
}

/// Which records a triage view shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RecordFilter {
    #[default]
    All,
    /// Records with at least one item nobody has triaged.
    Unreviewed,
    /// Records where fires ran and found nothing.
    NothingFound,
    /// Records with a failed attempt for an intent that has no items.
    Errors,
    /// Records with items found since the person's previous visit of the
    /// set.
    Changed,
}

/// A page of a record set's records, each with its chips.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecordsPage {
    pub record_set: crate::RecordSetSummary,
    /// The packs of the set's bundle: the chips of every card, in order.
    pub packs: Vec<crate::PackConfig>,
    pub offset: i64,
    pub limit: i64,
    /// Records matching the filter and search, on every page.
    pub total: i64,
    pub records: Vec<Record>,
}

/// What the triage view shows for a page of cards: the records with their
/// chips, the items under them and the set's newest job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TriagePage {
    pub page: RecordsPage,
    pub items: Vec<crate::Item>,
    /// The newest job of the set, if any.
    pub job: Option<crate::Job>,
    /// The last event published before this was read: the live stream
    /// resumes after it, so nothing that happens meanwhile is lost.
    pub event_id: u64,
    /// When the person's previous visit of the set ended (Unix ms): items
    /// first seen after it are new to them. Absent on a first visit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
}

/// One record of an export with its accepted items.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExportedRecord {
    pub id: i64,
    pub name: String,
    pub fields: Vec<crate::Field>,
    pub accepted: Vec<crate::Item>,
}
