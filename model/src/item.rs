//! Items: results in the curated layer, and the triage verbs people apply.

use serde::{Deserialize, Serialize};

use crate::{Capability, TriggeredBy};

/// Where an item stands in triage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum TriageState {
    /// Nobody has looked at it yet.
    New,
    AcceptedCanonical,
    AcceptedContext,
    Discarded,
}

impl TriageState {
    pub const fn name(self) -> &'static str {
        match self {
            TriageState::New => "new",
            TriageState::AcceptedCanonical => "accepted-canonical",
            TriageState::AcceptedContext => "accepted-context",
            TriageState::Discarded => "discarded",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        [
            TriageState::New,
            TriageState::AcceptedCanonical,
            TriageState::AcceptedContext,
            TriageState::Discarded,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    pub fn is_accepted(self) -> bool {
        matches!(
            self,
            TriageState::AcceptedCanonical | TriageState::AcceptedContext
        )
    }
}

/// What a person does to an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum TriageVerb {
    AcceptCanonical,
    AcceptContext,
    Discard,
    /// Returns the item to the state before the last verb.
    Undo,
}

impl TriageVerb {
    pub const fn name(self) -> &'static str {
        match self {
            TriageVerb::AcceptCanonical => "accept-canonical",
            TriageVerb::AcceptContext => "accept-context",
            TriageVerb::Discard => "discard",
            TriageVerb::Undo => "undo",
        }
    }

    /// The state the verb leads to; `None` for undo, which depends on history.
    pub fn target(self) -> Option<TriageState> {
        match self {
            TriageVerb::AcceptCanonical => Some(TriageState::AcceptedCanonical),
            TriageVerb::AcceptContext => Some(TriageState::AcceptedContext),
            TriageVerb::Discard => Some(TriageState::Discarded),
            TriageVerb::Undo => None,
        }
    }
}

/// One sighting of an item: which connector found it, in which fire, when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Evidence {
    pub connector_id: String,
    pub fire_id: i64,
    /// Unix milliseconds.
    pub found_at: i64,
    pub triggered_by: TriggeredBy,
}

/// One result in the curated layer for a record and intent. Additive: a
/// re-fire that finds the same URL adds evidence, never a duplicate, and
/// never changes the triage state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Item {
    pub id: i64,
    pub record_id: i64,
    pub intent: Capability,
    pub url: String,
    pub title: String,
    pub snippet: String,
    pub state: TriageState,
    /// Bumped by every triage verb; a verb naming an older version is refused.
    pub version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triaged_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triaged_at: Option<i64>,
    /// Unix milliseconds of the first sighting.
    pub first_seen_at: i64,
    /// Every sighting, oldest first.
    pub evidence: Vec<Evidence>,
    /// Provider fields kept from the first sighting.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub raw: serde_json::Value,
}
