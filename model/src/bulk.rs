//! Decisions in bulk: which items of a set a decision takes (a selection
//! people recognise from reconciliation: "the one candidate a connector
//! found", "found by two or more connectors"), what it would change, and
//! what it did, undone as one step.

use serde::{Deserialize, Serialize};

use crate::{TriageState, TriageVerb};

/// The most items one bulk decision takes.
pub const MAX_BULK: usize = 10_000;

/// Which untriaged items of a set a bulk decision takes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum BulkSelection {
    /// In each record where `connector_id` found exactly one item, that
    /// item (while nobody has triaged it).
    SingleFrom { connector_id: String },
    /// Every untriaged item found by two or more connectors.
    FoundByTwoOrMore,
}

impl BulkSelection {
    /// In words: "the one item fire-through-X found in a record".
    pub fn describe(&self) -> String {
        match self {
            BulkSelection::SingleFrom { connector_id } => {
                format!("records where {connector_id} found exactly one item: that item")
            }
            BulkSelection::FoundByTwoOrMore => "items found by two or more connectors".to_owned(),
        }
    }
}

/// One item a bulk decision takes, as the preview shows it; `version` is
/// the one the decision expects (a later change skips the item).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkLine {
    pub item_id: i64,
    pub version: i64,
    pub record_id: i64,
    pub record_name: String,
    pub title: String,
    pub url: String,
}

/// An item a bulk decision expects at `version` (as its preview listed
/// it): a later change skips the item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BulkExpect {
    pub item_id: i64,
    pub version: i64,
}

/// What a bulk decision would change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkPreview {
    pub selection: BulkSelection,
    pub verb: TriageVerb,
    pub items: Vec<BulkLine>,
}

/// An item a bulk decision (or its undo) left as it was, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkSkip {
    pub item_id: i64,
    pub title: String,
    /// Its state now, and who put it there.
    pub state: TriageState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// What a bulk decision (or its undo) did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkOutcome {
    /// The decision, for its undo.
    pub batch_id: i64,
    /// Items changed.
    pub changed: u32,
    /// Items someone else decided on meanwhile, left as they were.
    pub skipped: Vec<BulkSkip>,
}

impl BulkOutcome {
    /// "Accepted 798 items; 2 skipped (someone decided first)."
    pub fn describe(&self, done: &str) -> String {
        let mut words = format!(
            "{done} {} item{}",
            self.changed,
            if self.changed == 1 { "" } else { "s" }
        );
        if !self.skipped.is_empty() {
            words.push_str(&format!(
                "; {} skipped (someone decided first)",
                self.skipped.len()
            ));
        }
        words.push('.');
        words
    }
}
