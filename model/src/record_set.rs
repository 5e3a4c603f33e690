//! Record sets as the browser and the REST door see them.

use serde::{Deserialize, Serialize};

/// One imported list of entities, as listed on the record sets page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecordSetSummary {
    pub id: i64,
    pub name: String,
    /// The bundle whose packs are the chips on every card of this set.
    pub bundle_id: String,
    /// How many records the set holds.
    pub records: i64,
    /// True for the set `--demo` loads: its content is made up.
    pub is_demo: bool,
    /// Unix milliseconds.
    pub created_at: i64,
    /// The workspace it belongs to (none only for sets stored before
    /// accounts, until the first workspace adopts them).
    #[serde(default)]
    pub workspace_id: Option<i64>,
}
