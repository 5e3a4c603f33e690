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

/// A chip on a card: the pack it fires and what it shows. Its state's keys
/// are written among its own, and read with them (see [`ChipState`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(try_from = "ChipFields")]
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
    /// Which rule put `next` first (the chip's tooltip says it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_by: Option<crate::ChainRule>,
    /// What a click on it costs now, when `next` is priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cost: Option<crate::NextCost>,
}

/// A chip's keys as they are written, for reading one.
#[derive(Deserialize)]
struct ChipFields {
    pack_id: String,
    state: crate::fire::StateName,
    count: Option<u32>,
    reason: Option<String>,
    until: Option<i64>,
    vars: Option<Vec<String>>,
    next: Option<String>,
    held: Option<String>,
    chosen_by: Option<crate::ChainRule>,
    next_cost: Option<crate::NextCost>,
}

impl TryFrom<ChipFields> for Chip {
    type Error = String;

    fn try_from(fields: ChipFields) -> Result<Self, String> {
        let state = ChipState::try_from(crate::fire::StateFields {
            state: fields.state,
            count: fields.count,
            reason: fields.reason,
            until: fields.until,
            vars: fields.vars,
        })?;
        Ok(Chip {
            pack_id: fields.pack_id,
            state,
            next: fields.next,
            held: fields.held,
            chosen_by: fields.chosen_by,
            next_cost: fields.next_cost,
        })
    }
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
    /// What its fires were billed today (UTC), per unit; empty when nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spent_today: Vec<crate::SpentToday>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn every_state() -> Vec<ChipState> {
        vec![
            ChipState::Idle,
            ChipState::Firing,
            ChipState::Found { count: 4 },
            ChipState::NotFound,
            ChipState::Error {
                reason: "HTTP 500".into(),
            },
            ChipState::RateLimited { until: 1_700_000 },
            ChipState::NeedsEnv {
                vars: vec!["SERPAPI_KEY".into()],
            },
        ]
    }

    #[test]
    fn every_chip_state_reads_back_alone_and_in_a_chip() {
        for state in every_state() {
            let text = serde_json::to_string(&state).unwrap();
            assert_eq!(
                serde_json::from_str::<ChipState>(&text).unwrap(),
                state,
                "{text}"
            );
            let chip = Chip {
                pack_id: "web".into(),
                state: state.clone(),
                next: Some("SearXNG".into()),
                held: None,
                chosen_by: Some(crate::ChainRule::Person),
                next_cost: Some(crate::NextCost {
                    amount: crate::Amount::units(1),
                    unit: "USD".into(),
                    budget_left: None,
                }),
            };
            let text = serde_json::to_string(&chip).unwrap();
            assert_eq!(serde_json::from_str::<Chip>(&text).unwrap(), chip, "{text}");
        }
    }

    #[test]
    fn the_state_word_may_come_after_its_data_and_unknown_keys_are_left() {
        let chip: Chip = serde_json::from_value(json!({
            "count": 3, "pack_id": "news", "later": true, "state": "found"
        }))
        .unwrap();
        assert_eq!(chip.state, ChipState::Found { count: 3 });
        assert_eq!(chip.pack_id, "news");
    }

    #[test]
    fn a_state_without_its_data_is_an_error_that_names_it() {
        let e = serde_json::from_value::<Chip>(json!({"pack_id": "web", "state": "error"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains(r#"a chip state "error" needs "reason""#), "{e}");
        let e = serde_json::from_value::<ChipState>(json!({"state": "found"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains(r#""found" needs "count""#), "{e}");
        let e = serde_json::from_value::<ChipState>(json!({"state": "glowing"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("glowing"), "{e}");
    }
}
