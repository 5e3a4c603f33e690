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

/// A change of an item's words: the connector that reported the address
/// reported it again with a different title or snippet. The item shows the
/// new words and keeps its triage; the revision says what it said before.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Revision {
    pub connector_id: String,
    pub fire_id: i64,
    /// Unix milliseconds.
    pub changed_at: i64,
    pub title_before: String,
    pub snippet_before: String,
    pub title: String,
    pub snippet: String,
}

impl Revision {
    /// What changed, in words: "title and snippet", "title" or "snippet".
    pub fn what(&self) -> &'static str {
        match (
            self.title != self.title_before,
            self.snippet != self.snippet_before,
        ) {
            (true, true) => "title and snippet",
            (true, false) => "title",
            _ => "snippet",
        }
    }
}

/// A page that went away: it answered 404 or 410 when asked for itself
/// after a connector stopped returning it. The item stays, with its triage.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Gone {
    /// Unix milliseconds of the check that found it gone.
    pub at: i64,
    /// Why, in words: "Scripted stopped returning it, and it answered HTTP
    /// 410 when re-checked".
    pub reason: String,
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
    /// The newest change of its words, if they ever changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<Revision>,
    /// Set when its page went away; the item is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gone: Option<Gone>,
    /// Provider fields kept from the first sighting.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub raw: serde_json::Value,
}

impl Item {
    /// Whether its words changed after someone accepted it: the card says
    /// "changed since you accepted it".
    pub fn changed_since_accepted(&self) -> bool {
        match (&self.revision, self.triaged_at) {
            (Some(r), Some(at)) => self.state.is_accepted() && r.changed_at > at,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(state: TriageState, triaged_at: Option<i64>, changed_at: Option<i64>) -> Item {
        Item {
            id: 1,
            record_id: 1,
            intent: "search.news".parse().unwrap(),
            url: "https://example.org/".into(),
            title: "Now".into(),
            snippet: "same".into(),
            state,
            version: 1,
            triaged_by: triaged_at.map(|_| "ada".into()),
            triaged_at,
            first_seen_at: 0,
            evidence: Vec::new(),
            revision: changed_at.map(|changed_at| Revision {
                connector_id: "news".into(),
                fire_id: 2,
                changed_at,
                title_before: "Before".into(),
                snippet_before: "same".into(),
                title: "Now".into(),
                snippet: "same".into(),
            }),
            gone: None,
            raw: serde_json::Value::Null,
        }
    }

    #[test]
    fn a_change_after_an_acceptance_is_said_and_others_are_not() {
        let accepted = TriageState::AcceptedCanonical;
        assert!(item(accepted, Some(10), Some(20)).changed_since_accepted());
        assert!(!item(accepted, Some(30), Some(20)).changed_since_accepted());
        assert!(!item(TriageState::Discarded, Some(10), Some(20)).changed_since_accepted());
        assert!(!item(TriageState::New, None, Some(20)).changed_since_accepted());
        assert!(!item(accepted, Some(10), None).changed_since_accepted());
        assert_eq!(
            item(accepted, None, Some(1)).revision.unwrap().what(),
            "title"
        );
    }
}
