//! Big sets at a glance: one line per record (its chips and its best
//! candidate, ranked by evidence), and the set's facets with their counts.

use serde::{Deserialize, Serialize};

use crate::{ChipState, Item, RecordFilter, TriageState};

/// A found item as the compact view shows it: the record's best candidate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Candidate {
    pub item_id: i64,
    /// The version a decision on it expects.
    pub version: i64,
    pub title: String,
    pub url: String,
    pub state: TriageState,
    /// How many connectors found it.
    pub connectors: u32,
}

/// One record on one line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CompactLine {
    pub record_id: i64,
    pub name: String,
    /// Its chips' states, in the order of the bundle's packs.
    pub chips: Vec<ChipState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<Candidate>,
    /// Found items nobody has triaged.
    pub untriaged: u32,
}

/// A stretch of the compact view: lines `offset..offset + lines.len()` of
/// `total` matching the filter and search.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CompactPage {
    pub offset: i64,
    pub total: i64,
    pub lines: Vec<CompactLine>,
}

/// How many of a set's records a filter shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FilterCount {
    pub filter: RecordFilter,
    pub records: i64,
}

/// How many records' chip of one pack are in each state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PackFacet {
    pub pack_id: String,
    pub short_label: String,
    /// `(state name, records)`, for the states some record's chip is in,
    /// in the order of [`ChipState::name`]'s states.
    pub states: Vec<(String, i64)>,
}

/// What one connector found in a set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConnectorFacet {
    pub connector_id: String,
    /// Items it found.
    pub items: i64,
    /// Of them, nobody has triaged.
    pub untriaged: i64,
    /// Records where it found exactly one item and nobody has triaged it
    /// (what "accept the single candidate" takes).
    pub single: i64,
}

/// A set's facets: what each filter shows, chip states per pack, what each
/// connector found, and how much is triaged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SetFacets {
    pub records: i64,
    pub filters: Vec<FilterCount>,
    pub packs: Vec<PackFacet>,
    pub connectors: Vec<ConnectorFacet>,
    pub items_untriaged: i64,
    pub items_triaged: i64,
}

/// The chip states in the order facets list them.
pub const STATE_ORDER: [&str; 7] = [
    "found",
    "not_found",
    "error",
    "rate_limited",
    "firing",
    "needs_env",
    "idle",
];

/// Counts chip states into a pack's facet, in [`STATE_ORDER`].
pub fn count_states<'a>(states: impl IntoIterator<Item = &'a ChipState>) -> Vec<(String, i64)> {
    tally_states(states.into_iter().map(|s| (s.name(), 1)))
}

/// Adds up how many chips are in each state into a pack's facet: one
/// entry per state that has any, in [`STATE_ORDER`]. Names of no state
/// are left out.
pub fn tally_states<'a>(counts: impl IntoIterator<Item = (&'a str, i64)>) -> Vec<(String, i64)> {
    let mut sums = [0i64; STATE_ORDER.len()];
    for (state, n) in counts {
        if let Some(i) = STATE_ORDER.iter().position(|s| *s == state) {
            sums[i] += n;
        }
    }
    STATE_ORDER
        .iter()
        .zip(sums)
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| ((*s).to_owned(), n))
        .collect()
}

/// A record's best candidate among its items: an accepted canonical item
/// when there is one; otherwise, of the items nobody has discarded, the
/// one most connectors found, then the one whose title names the record
/// best, then the first found.
pub fn best_candidate<'a>(record_name: &str, items: &'a [Item]) -> Option<&'a Item> {
    if let Some(item) = items
        .iter()
        .find(|i| i.state == TriageState::AcceptedCanonical)
    {
        return Some(item);
    }
    let name = words(record_name);
    items
        .iter()
        .filter(|i| i.state != TriageState::Discarded)
        .map(|i| (i, connectors_of(i), name_match(&name, &i.title)))
        // Ties go to the item found first (the lowest id).
        .max_by(|a, b| {
            (a.1, a.2)
                .cmp(&(b.1, b.2))
                .then_with(|| b.0.id.cmp(&a.0.id))
        })
        .map(|(i, _, _)| i)
}

/// How many distinct connectors found an item.
pub fn connectors_of(item: &Item) -> u32 {
    let mut ids: Vec<&str> = item
        .evidence
        .iter()
        .map(|e| e.connector_id.as_str())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    u32::try_from(ids.len()).unwrap_or(u32::MAX)
}

/// The item as a candidate line.
pub fn candidate(item: &Item) -> Candidate {
    Candidate {
        item_id: item.id,
        version: item.version,
        title: item.title.clone(),
        url: item.url.clone(),
        state: item.state,
        connectors: connectors_of(item),
    }
}

/// How many of the record name's words the title holds (per mille, so
/// names of any length compare).
fn name_match(name: &[String], title: &str) -> u32 {
    if name.is_empty() {
        return 0;
    }
    let title = words(title);
    let held = name.iter().filter(|w| title.contains(w)).count();
    u32::try_from(held * 1000 / name.len()).unwrap_or(0)
}

/// Lower-case words of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Capability, Evidence, TriggeredBy};

    fn item(id: i64, title: &str, state: TriageState, found_by: &[&str]) -> Item {
        Item {
            id,
            record_id: 1,
            intent: Capability::builtins()
                .next()
                .expect("a built-in capability"),
            url: format!("https://example.org/{id}"),
            title: title.to_owned(),
            snippet: String::new(),
            state,
            version: 1,
            triaged_by: None,
            triaged_at: None,
            first_seen_at: 0,
            evidence: found_by
                .iter()
                .map(|c| Evidence {
                    connector_id: (*c).to_owned(),
                    fire_id: 1,
                    found_at: 0,
                    triggered_by: TriggeredBy::HumanRefire,
                })
                .collect(),
            revision: None,
            gone: None,
            raw: serde_json::Value::Null,
        }
    }

    #[test]
    fn more_connectors_win_over_a_better_title() {
        let items = [
            item(1, "Acme Rocketry", TriageState::New, &["a"]),
            item(2, "Rockets inc.", TriageState::New, &["a", "b", "a"]),
        ];
        assert_eq!(
            best_candidate("Acme Rocketry", &items).map(|i| i.id),
            Some(2)
        );
        assert_eq!(connectors_of(&items[1]), 2);
    }

    #[test]
    fn the_title_decides_between_equal_evidence_then_the_first_found() {
        let items = [
            item(1, "Rockets inc.", TriageState::New, &["a"]),
            item(2, "ACME rocketry — home", TriageState::New, &["b"]),
            item(3, "Acme Rocketry", TriageState::New, &["c"]),
        ];
        assert_eq!(
            best_candidate("Acme Rocketry", &items).map(|i| i.id),
            Some(2)
        );
        let tied = [
            item(4, "x", TriageState::New, &["a"]),
            item(5, "y", TriageState::New, &["a"]),
        ];
        assert_eq!(best_candidate("Acme", &tied).map(|i| i.id), Some(4));
    }

    #[test]
    fn an_accepted_item_is_the_candidate_and_discarded_ones_never_are() {
        let items = [
            item(1, "Acme", TriageState::Discarded, &["a", "b"]),
            item(2, "Other", TriageState::AcceptedCanonical, &["a"]),
        ];
        assert_eq!(best_candidate("Acme", &items).map(|i| i.id), Some(2));
        let discarded = [item(1, "Acme", TriageState::Discarded, &["a"])];
        assert_eq!(best_candidate("Acme", &discarded), None);
        assert_eq!(best_candidate("Acme", &[]), None);
    }

    #[test]
    fn states_are_counted_in_their_order_and_absent_ones_left_out() {
        let states = [
            ChipState::Idle,
            ChipState::Found { count: 2 },
            ChipState::Idle,
            ChipState::NotFound,
        ];
        assert_eq!(
            count_states(&states),
            vec![
                ("found".to_owned(), 1),
                ("not_found".to_owned(), 1),
                ("idle".to_owned(), 2)
            ]
        );
    }

    #[test]
    fn tallies_add_up_one_state_told_twice_and_drop_empty_and_unknown_ones() {
        assert_eq!(
            tally_states([
                ("idle", 2),
                ("error", 0),
                ("found", 3),
                ("idle", 1),
                ("nope", 9)
            ]),
            vec![("found".to_owned(), 3), ("idle".to_owned(), 3)]
        );
    }
}
