//! Live events: what `/api/events` streams to every viewer of a record set.

use serde::{Deserialize, Serialize};

use crate::{ChipState, ConnectorInfo, HistoryEntry, Item, Job};

/// One event. `id` grows by one per event in a server process and is the SSE
/// id a reconnecting browser sends back as `Last-Event-ID`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Event {
    pub id: u64,
    /// The record set it concerns; absent for events every viewer gets
    /// (connector changes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_set_id: Option<i64>,
    /// The only workspace whose viewers get it (a connector of that
    /// workspace, or that workspace's switch); absent for everyone's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<i64>,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// What a fire changed, told at once: the attempts it opened or closed
    /// (an open one has no outcome), the items their results became, and
    /// its chip when that changed. A fire sends one when it starts (its
    /// chip firing, its first attempt open), two each time its chain walks
    /// on to the next connector (the attempt closed with its items, the
    /// next one open), and one when it ends (its last attempt, its items,
    /// its chip): two for most fires, however many items they find. A fire a stopped process left sends one too when another
    /// process closes it (its chip only). Apply in that order: attempts,
    /// items, chip.
    FireNews {
        record_id: i64,
        pack_id: String,
        /// Who fired it (the system, closing a stopped process's fire).
        actor: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attempts: Vec<HistoryEntry>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        items: Vec<Item>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chip: Option<ChipState>,
    },
    /// An item was triaged, or its page found gone (what a fire finds
    /// comes in its [`EventKind::FireNews`]).
    ItemChanged {
        item: Item,
        actor: String,
    },
    ConnectorChanged {
        connector: ConnectorInfo,
    },
    ConnectorRemoved {
        id: String,
    },
    /// A connector now needs an admin of the workspace (its key was
    /// refused, or errors keep it suspended): sent when it begins.
    AttentionRaised {
        attention: crate::Attention,
    },
    JobChanged {
        job: Job,
    },
    /// Who is viewing the record set now (after someone came or went):
    /// the first [`MAX_VIEWERS_NAMED`] by name, and how many in all, so
    /// the news of a join stays small however many watch.
    Presence {
        viewers: Vec<String>,
        #[serde(default)]
        count: usize,
    },
    /// A budget of the workspace passed its warning line or was spent to
    /// the end, or an admin set, changed or removed it: budgets are read
    /// again.
    BudgetChanged {
        budget: crate::BudgetStatus,
    },
    /// The workspace's packs or bundles changed: chips may have come, gone
    /// or changed their chain.
    CatalogChanged,
    /// The events since the browser's `Last-Event-ID` are no longer kept:
    /// reload the state.
    Resync,
    /// The database stopped answering (nothing can change meanwhile; the
    /// page says so) or answers again (reload the state). Sent on open
    /// streams only, never kept, and without an id.
    Database {
        answering: bool,
    },
}

/// The most viewers a presence event names; `count` says how many there are.
pub const MAX_VIEWERS_NAMED: usize = 20;

impl EventKind {
    /// The presence news of a set's viewers: the first ones by name, and
    /// how many in all.
    pub fn presence(viewers: Vec<String>) -> Self {
        let count = viewers.len();
        Self::presence_of(viewers, count)
    }

    /// The same from the viewers in order (only the first ones are read)
    /// and how many there are.
    pub fn presence_of(viewers: impl IntoIterator<Item = String>, count: usize) -> Self {
        EventKind::Presence {
            viewers: viewers.into_iter().take(MAX_VIEWERS_NAMED).collect(),
            count,
        }
    }
}
