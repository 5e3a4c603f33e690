//! Fires, their outcomes, the history they leave and the chip state they drive.

use serde::{Deserialize, Serialize};

use crate::Capability;

/// Why a fire happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum TriggeredBy {
    InitialFanout,
    HumanRefire,
    ScheduledRefresh,
}

impl TriggeredBy {
    pub const fn name(self) -> &'static str {
        match self {
            TriggeredBy::InitialFanout => "initial-fanout",
            TriggeredBy::HumanRefire => "human-refire",
            TriggeredBy::ScheduledRefresh => "scheduled-refresh",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        [
            TriggeredBy::InitialFanout,
            TriggeredBy::HumanRefire,
            TriggeredBy::ScheduledRefresh,
        ]
        .into_iter()
        .find(|t| t.name() == name)
    }
}

/// How one attempt of one connector ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FireOutcome {
    Found,
    NotFound,
    Error,
    RateLimited,
    /// A person cancelled it while it was in flight.
    Cancelled,
    /// The call went out and no answer came (it timed out, or the process
    /// making it stopped): the provider may have done it, and billed it.
    /// It is never fired again by itself, and is listed for review.
    Unknown,
}

impl FireOutcome {
    pub const fn name(self) -> &'static str {
        match self {
            FireOutcome::Found => "found",
            FireOutcome::NotFound => "not_found",
            FireOutcome::Error => "error",
            FireOutcome::RateLimited => "rate_limited",
            FireOutcome::Cancelled => "cancelled",
            FireOutcome::Unknown => "unknown",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        [
            FireOutcome::Found,
            FireOutcome::NotFound,
            FireOutcome::Error,
            FireOutcome::RateLimited,
            FireOutcome::Cancelled,
            FireOutcome::Unknown,
        ]
        .into_iter()
        .find(|o| o.name() == name)
    }
}

/// How an attempt ended: each part absent while it is in flight (and
/// receipts for attempts made before they were kept). Shown flattened into
/// a fire's attempts and a call's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptEnd {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<FireOutcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For a rate-limited attempt: when the provider said to come back (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<i64>,
    /// What the provider billed for it, when its connector has a price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charge: Option<crate::Charge>,
    /// What it asked of the provider and what came back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<crate::Receipt>,
}

/// One attempt in a record's `connector_history`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistoryEntry {
    pub id: i64,
    /// The fire (one chip click or one job step) this attempt belongs to.
    pub fire_id: i64,
    pub record_id: i64,
    pub pack_id: String,
    pub intent: Capability,
    pub connector_id: String,
    /// Unix milliseconds.
    pub fired_at: i64,
    /// Unix milliseconds; absent while in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
    pub triggered_by: TriggeredBy,
    /// Who fired: a user's name, or `job:<id>`.
    pub actor: String,
    /// How it ended; empty while in flight.
    #[serde(flatten)]
    pub end: AttemptEnd,
}

/// An attempt that went out and got no answer (outcome `unknown`), with
/// the record it was for: the provider may have done it and billed it, so
/// it is listed for a person to review rather than fired again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Unanswered {
    #[serde(flatten)]
    pub attempt: HistoryEntry,
    pub record_name: String,
    pub record_set_id: i64,
    pub record_set_name: String,
}

/// What a chip shows for one record and pack.
///
/// Written internally tagged: `{"state": "found", "count": 4}`. Read
/// through [`StateFields`]: each variant's data has a key of its own, so
/// the map is read once, in any order, without the copy of it that serde
/// keeps to read a tagged enum (in the browser, that buffering for chips
/// and events was a tenth of the code every triage view loads).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "state", rename_all = "snake_case", try_from = "StateFields")]
pub enum ChipState {
    Idle,
    Firing,
    Found { count: u32 },
    NotFound,
    Error { reason: String },
    RateLimited { until: i64 },
    NeedsEnv { vars: Vec<String> },
}

impl ChipState {
    /// The `data-state` word: `idle`, `firing`, `found`, ...
    pub fn name(&self) -> &'static str {
        match self {
            ChipState::Idle => "idle",
            ChipState::Firing => "firing",
            ChipState::Found { .. } => "found",
            ChipState::NotFound => "not_found",
            ChipState::Error { .. } => "error",
            ChipState::RateLimited { .. } => "rate_limited",
            ChipState::NeedsEnv { .. } => "needs_env",
        }
    }
}

/// A chip state's keys as they are written, for reading one.
#[derive(Deserialize)]
pub(crate) struct StateFields {
    pub(crate) state: StateName,
    pub(crate) count: Option<u32>,
    pub(crate) reason: Option<String>,
    pub(crate) until: Option<i64>,
    pub(crate) vars: Option<Vec<String>>,
}

/// The `state` word of a chip state.
#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StateName {
    Idle,
    Firing,
    Found,
    NotFound,
    Error,
    RateLimited,
    NeedsEnv,
}

impl TryFrom<StateFields> for ChipState {
    type Error = String;

    fn try_from(fields: StateFields) -> Result<Self, String> {
        fn needs<T>(value: Option<T>, state: &str, key: &str) -> Result<T, String> {
            value.ok_or_else(|| format!("a chip state \"{state}\" needs \"{key}\""))
        }
        Ok(match fields.state {
            StateName::Idle => ChipState::Idle,
            StateName::Firing => ChipState::Firing,
            StateName::Found => ChipState::Found {
                count: needs(fields.count, "found", "count")?,
            },
            StateName::NotFound => ChipState::NotFound,
            StateName::Error => ChipState::Error {
                reason: needs(fields.reason, "error", "reason")?,
            },
            StateName::RateLimited => ChipState::RateLimited {
                until: needs(fields.until, "rate_limited", "until")?,
            },
            StateName::NeedsEnv => ChipState::NeedsEnv {
                vars: needs(fields.vars, "needs_env", "vars")?,
            },
        })
    }
}

/// A connector the chain walked past without firing, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Skipped {
    pub connector_id: String,
    pub reason: String,
    /// A spending limit (a daily cap) stopped it, not the connector's state.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capped: bool,
    /// The record's daily cap stopped a priced call: the question to ask
    /// before firing again with `spend_more`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spend_more: Option<crate::SpendQuestion>,
}

/// What one fire (one chip click, one job step) did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FireReport {
    /// Absent when nothing in the chain could fire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fire_id: Option<i64>,
    pub record_id: i64,
    pub pack_id: String,
    pub intent: Capability,
    /// The chip after the fire.
    pub chip: ChipState,
    /// Every attempt, in order.
    pub attempts: Vec<HistoryEntry>,
    /// Connectors of the chain that were not tried, with the reason.
    pub skipped: Vec<Skipped>,
    /// Items this fire added or found again.
    pub items: Vec<crate::Item>,
    /// Notes for the person, e.g. "serpapi is disabled; falling back to the chain".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl FireReport {
    /// The question to ask when the record's daily cap stopped a priced
    /// connector and nothing the fire tried found results: "spend more?".
    pub fn spend_question(&self) -> Option<&crate::SpendQuestion> {
        let found = self
            .attempts
            .iter()
            .any(|a| a.end.outcome == Some(FireOutcome::Found));
        if found {
            return None;
        }
        self.skipped.iter().find_map(|s| s.spend_more.as_ref())
    }

    /// The question, when the record's daily cap stopped the fire before
    /// anything went out: the doors with a status refuse with it.
    pub fn stopped_to_ask(&self) -> Option<&crate::SpendQuestion> {
        self.attempts
            .is_empty()
            .then(|| self.spend_question())
            .flatten()
    }
}
