//! Jobs (set-wide fan-outs) and the one envelope every fire or job answers with.

use serde::{Deserialize, Serialize};

/// Where a job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Running,
    Completed,
    Cancelled,
}

impl JobStatus {
    pub const fn name(self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Completed => "completed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        [
            JobStatus::Running,
            JobStatus::Completed,
            JobStatus::Cancelled,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// How far a piece of work has come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Progress {
    pub done: u64,
    pub total: u64,
}

/// A fan-out over a record set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Job {
    pub id: i64,
    pub record_set_id: i64,
    pub packs: Vec<String>,
    pub status: JobStatus,
    pub progress: Progress,
    pub found: u64,
    pub not_found: u64,
    pub errors: u64,
    /// Unix milliseconds.
    pub created_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
    pub created_by: String,
    /// At most this many fires of paid connectors per record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paid_per_record: Option<u32>,
}

/// `completed` when the results are here, `pending` when the work carries
/// on, `cancelled` when someone stopped it (what had finished stays),
/// `failed` when it ended without an answer (`error` says why).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EnvelopeStatus {
    Completed,
    Pending,
    Cancelled,
    Failed,
}

impl EnvelopeStatus {
    /// Where a job's envelope stands.
    pub fn of_job(status: JobStatus) -> Self {
        match status {
            JobStatus::Running => EnvelopeStatus::Pending,
            JobStatus::Completed => EnvelopeStatus::Completed,
            JobStatus::Cancelled => EnvelopeStatus::Cancelled,
        }
    }
}

/// The one shape every fire and job answers with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Envelope<T> {
    pub status: EnvelopeStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<i64>,
    pub progress: Progress,
    pub results: Vec<T>,
    /// Why the work failed as a whole, with each connector's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For a job: where it stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<Job>,
}

impl Envelope<crate::FireReport> {
    /// A fire that has ended: `cancelled` when a person cancelled it.
    pub fn of_fire(report: crate::FireReport) -> Self {
        let cancelled = report
            .attempts
            .last()
            .is_some_and(|a| a.outcome == Some(crate::FireOutcome::Cancelled));
        Envelope {
            status: if cancelled {
                EnvelopeStatus::Cancelled
            } else {
                EnvelopeStatus::Completed
            },
            job_id: None,
            progress: Progress { done: 1, total: 1 },
            results: vec![report],
            error: None,
            job: None,
        }
    }
}

/// What a fan-out of a set's bundle may fire and spend, asked before it
/// runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FanoutEstimate {
    pub records: u64,
    /// One line per connector its chains may reach, in chain order.
    pub lines: Vec<EstimateLine>,
    /// The workspace's budgets these connectors count against, with what
    /// is left of each this month.
    pub budgets: Vec<crate::BudgetStatus>,
}

/// One connector a fan-out may reach.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EstimateLine {
    pub connector_id: String,
    pub display_name: String,
    pub cost_tier: crate::CostTier,
    /// Fires if every connector before it in its chains finds nothing:
    /// the worst case.
    pub fires: u64,
    /// Fires expected from how often the connectors before it found
    /// something over the last day (one without attempts counts as finding
    /// nothing).
    pub expected_fires: u64,
    /// What those fires cost, when the connector is priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spend: Option<EstimatedSpend>,
}

/// What a connector's fires in a fan-out would cost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EstimatedSpend {
    pub unit: String,
    pub worst: crate::Amount,
    pub expected: crate::Amount,
}

impl EstimateLine {
    /// "Brave: up to 24 fires (about 12), 24 Brave requests at worst, about 12".
    pub fn describe(&self) -> String {
        let mut line = format!(
            "{} ({}): up to {} fires (about {})",
            self.display_name, self.cost_tier, self.fires, self.expected_fires
        );
        if let Some(spend) = &self.spend {
            line += &format!(
                ", {} at worst, about {}",
                spend.worst.in_unit(&spend.unit),
                spend.expected.in_unit(&spend.unit)
            );
        }
        line
    }

    /// Firing it costs something: it is priced or on a paid tier.
    pub fn costs(&self) -> bool {
        self.cost_tier == crate::CostTier::Paid
            || self
                .spend
                .as_ref()
                .is_some_and(|s| s.worst > crate::Amount::ZERO)
    }
}
