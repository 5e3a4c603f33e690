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
    /// A person's fan-out, or a scheduled refresh.
    #[serde(default = "fanout")]
    pub triggered_by: crate::TriggeredBy,
}

fn fanout() -> crate::TriggeredBy {
    crate::TriggeredBy::InitialFanout
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

/// The least id of a capability call. Calls and fan-outs share one
/// namespace of job ids (`GET /api/jobs/{id}` reads either): calls are
/// numbered from here and fan-outs below it. (Calls made before this
/// partition keep their lower ids and are read at `/api/calls/{id}`.)
pub const CALL_IDS_FROM: i64 = 1 << 40;

/// What an envelope's `job_id` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WorkKind {
    /// A set's packs over every record.
    Fanout,
    /// A capability call.
    Call,
}

impl WorkKind {
    /// The kind of work a job id names.
    pub const fn of_id(id: i64) -> Self {
        if id >= CALL_IDS_FROM {
            WorkKind::Call
        } else {
            WorkKind::Fanout
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
    /// What `job_id` names, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<WorkKind>,
    pub progress: Progress,
    pub results: Vec<T>,
    /// Why the work failed as a whole, with each connector's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For a job: where it stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<Job>,
}

impl<T> Envelope<T> {
    /// The same envelope with each result turned into another, or left
    /// out.
    pub fn filter_map<U>(self, f: impl FnMut(T) -> Option<U>) -> Envelope<U> {
        Envelope {
            status: self.status,
            job_id: self.job_id,
            kind: self.kind,
            progress: self.progress,
            results: self.results.into_iter().filter_map(f).collect(),
            error: self.error,
            job: self.job,
        }
    }
}

impl Envelope<crate::FireReport> {
    /// A fan-out's envelope. Its results stay empty: each fire's report is
    /// on its record (history, items) and in the events; `job` has its
    /// counts (found, nothing, errors).
    pub fn of_job(job: Job) -> Self {
        Envelope {
            status: EnvelopeStatus::of_job(job.status),
            job_id: Some(job.id),
            kind: Some(WorkKind::Fanout),
            progress: job.progress,
            results: Vec::new(),
            error: None,
            job: Some(job),
        }
    }

    /// A fire that has ended: `cancelled` when a person cancelled it;
    /// `failed` when connectors were tried and none answered (each failed,
    /// was rate-limited or gave no answer), with each one's reason.
    pub fn of_fire(report: crate::FireReport) -> Self {
        use crate::FireOutcome as O;
        let last = report.attempts.last().and_then(|a| a.end.outcome);
        let answered = report
            .attempts
            .iter()
            .any(|a| matches!(a.end.outcome, Some(O::Found | O::NotFound)));
        let (status, error) = if last == Some(O::Cancelled) {
            (EnvelopeStatus::Cancelled, None)
        } else if !report.attempts.is_empty() && !answered {
            let reasons: Vec<String> = report
                .attempts
                .iter()
                .map(|a| {
                    let why = a.end.error.as_deref().unwrap_or("failed");
                    format!("{}: {why}", a.connector_id)
                })
                .collect();
            (EnvelopeStatus::Failed, Some(reasons.join("; ")))
        } else {
            (EnvelopeStatus::Completed, None)
        };
        Envelope {
            status,
            job_id: None,
            kind: None,
            progress: Progress { done: 1, total: 1 },
            results: vec![report],
            error,
            job: None,
        }
    }
}

/// The envelope of any job, a fan-out's or a call's, as `GET
/// /api/jobs/{id}` answers it (`kind` says which).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum JobEnvelope {
    Fanout(Envelope<crate::FireReport>),
    Call(Envelope<crate::CallOutput>),
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

/// A record set's pack re-fired by itself: the records whose last fire of
/// the pack is older than `every_hours` are fired again as a job
/// (`scheduled-refresh`), within the allowed UTC hours.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RefreshSchedule {
    pub record_set_id: i64,
    pub pack_id: String,
    #[serde(flatten)]
    pub plan: RefreshPlan,
    pub created_by: String,
    /// Unix ms.
    pub created_at: i64,
    /// When it next looks for records to refresh (Unix ms).
    pub next_run_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_at: Option<i64>,
    /// The last job it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_job_id: Option<i64>,
}

/// How often a schedule refreshes and when it may.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RefreshPlan {
    /// Records whose last fire of the pack is older than this are fired
    /// again (1 to 8760 hours; 168 is a week).
    pub every_hours: u32,
    /// The UTC hours it may run in: from `window_start` up to before
    /// `window_end` (0 to 24; equal: any hour; a window may wrap midnight).
    #[serde(default)]
    pub window_start: u8,
    #[serde(default)]
    pub window_end: u8,
}

impl RefreshPlan {
    pub fn check(&self) -> Result<(), String> {
        if !(1..=8760).contains(&self.every_hours) {
            return Err(format!(
                "every_hours: {} is not 1 to 8760 hours",
                self.every_hours
            ));
        }
        for (name, hour) in [
            ("window_start", self.window_start),
            ("window_end", self.window_end),
        ] {
            if hour > 24 {
                return Err(format!("{name}: {hour} is not an hour from 0 to 24"));
            }
        }
        Ok(())
    }

    /// Whether UTC hour `hour` (0 to 23) is inside the window.
    pub fn allows(&self, hour: u8) -> bool {
        let (start, end) = (self.window_start % 24, self.window_end % 24);
        match start.cmp(&end) {
            std::cmp::Ordering::Equal => true,
            std::cmp::Ordering::Less => (start..end).contains(&hour),
            std::cmp::Ordering::Greater => hour >= start || hour < end,
        }
    }

    /// "every 7 days, 01:00-05:00 UTC".
    pub fn describe(&self) -> String {
        let every = match self.every_hours {
            24 => "every day".to_owned(),
            h if h % 24 == 0 => format!("every {} days", h / 24),
            1 => "every hour".to_owned(),
            h => format!("every {h} hours"),
        };
        if self.window_start % 24 == self.window_end % 24 {
            every
        } else {
            format!(
                "{every}, {:02}:00-{:02}:00 UTC",
                self.window_start, self.window_end
            )
        }
    }
}

#[cfg(test)]
mod refresh_tests {
    use super::*;

    #[test]
    fn a_window_may_wrap_midnight_and_equal_ends_mean_any_hour() {
        let plan = |s, e| RefreshPlan {
            every_hours: 168,
            window_start: s,
            window_end: e,
        };
        assert!(plan(0, 0).allows(13));
        assert!(plan(1, 5).allows(1) && plan(1, 5).allows(4) && !plan(1, 5).allows(5));
        assert!(plan(22, 4).allows(23) && plan(22, 4).allows(0) && !plan(22, 4).allows(12));
        assert!(plan(0, 24).allows(23));
        assert_eq!(plan(1, 5).describe(), "every 7 days, 01:00-05:00 UTC");
        assert_eq!(plan(0, 0).describe(), "every 7 days");
        assert!(plan(0, 25).check().is_err());
        assert!(RefreshPlan {
            every_hours: 0,
            ..plan(0, 0)
        }
        .check()
        .is_err());
    }
}
