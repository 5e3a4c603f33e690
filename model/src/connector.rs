//! Connectors as the inventory, the chip menu and the REST door see them.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Capability, Problem};

/// What firing a connector costs, cheapest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum CostTier {
    Free,
    FreeTier,
    Paid,
}

impl CostTier {
    pub const fn name(self) -> &'static str {
        match self {
            CostTier::Free => "free",
            CostTier::FreeTier => "free-tier",
            CostTier::Paid => "paid",
        }
    }
}

impl fmt::Display for CostTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Soft limits the registry enforces for every caller together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RateHints {
    /// At most this many fires per second (throttled, not refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_second: Option<f64>,
    /// At most this many fires per UTC day, counted in the database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_cap: Option<u32>,
}

/// Whether a connector can fire now, and if not, why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum ConnectorStatus {
    Available,
    /// Switched off by a person.
    Disabled {
        reason: String,
    },
    /// The provider said 429; fires resume after `until` (Unix ms).
    RateLimited {
        until: i64,
        reason: String,
    },
    /// The provider refused the credentials; a person must re-enable it.
    AuthFailed {
        at: i64,
        reason: String,
    },
    /// Environment variables it needs are unset.
    NeedsEnv {
        vars: Vec<String>,
    },
    /// It failed several times in a row; chains skip it until `until` (Unix
    /// ms), each suspension longer than the last, and it comes back by itself.
    Suspended {
        until: i64,
        /// When the first suspension of this streak began (Unix ms; 0 when
        /// stored before it was kept).
        #[serde(default)]
        since: i64,
        reason: String,
    },
    /// A budget of the workspace has too little left for a call this month
    /// (`reason` names it); it fires again when the budget is raised or the
    /// month turns.
    OverBudget {
        reason: String,
    },
}

impl ConnectorStatus {
    /// The status word: `available`, `disabled`, `rate-limited`, `auth-failed`,
    /// `needs-env`, `suspended`, `over-budget`.
    pub fn kind(&self) -> &'static str {
        match self {
            ConnectorStatus::Available => "available",
            ConnectorStatus::Disabled { .. } => "disabled",
            ConnectorStatus::RateLimited { .. } => "rate-limited",
            ConnectorStatus::AuthFailed { .. } => "auth-failed",
            ConnectorStatus::NeedsEnv { .. } => "needs-env",
            ConnectorStatus::Suspended { .. } => "suspended",
            ConnectorStatus::OverBudget { .. } => "over-budget",
        }
    }

    pub fn is_available(&self) -> bool {
        matches!(self, ConnectorStatus::Available)
    }

    /// Why it cannot fire, in a sentence; `None` when available.
    pub fn reason(&self) -> Option<String> {
        match self {
            ConnectorStatus::Available => None,
            ConnectorStatus::Disabled { reason } => Some(format!("disabled: {reason}")),
            ConnectorStatus::RateLimited { reason, .. } => Some(format!("rate-limited: {reason}")),
            ConnectorStatus::AuthFailed { reason, .. } => Some(format!("auth failed: {reason}")),
            ConnectorStatus::NeedsEnv { vars } => Some(format!("needs {}", vars.join(", "))),
            ConnectorStatus::Suspended { reason, .. } => Some(format!("suspended: {reason}")),
            ConnectorStatus::OverBudget { reason } => Some(reason.clone()),
        }
    }
}

/// Who a connector is and what it serves: the fields every connector
/// declares, wherever it comes from (code, a manifest file, the browser).
/// Declared here once; the registry, a manifest and the wire all carry it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConnectorProfile {
    /// 1 to 64 of a-z, 0-9, `-` and `_`.
    pub id: String,
    pub display_name: String,
    /// Shown in the chip's connector menu, e.g. `SerpApi/G`.
    pub short_label: String,
    pub capabilities: Vec<Capability>,
    pub cost_tier: CostTier,
    /// Environment variables it needs: names, never values.
    #[serde(default)]
    pub requires_env: Vec<String>,
    #[serde(default)]
    pub rate_hints: RateHints,
    /// What a call costs, when declared; `None`: calls are not billed.
    /// Written out as `null` when absent, as manifests always wrote it: a
    /// manifest's version (its digest, in every receipt) is taken over this
    /// form, and skipping it would make every unchanged manifest look new.
    #[serde(default)]
    pub cost: Option<crate::Cost>,
}

/// The slowest rate hint: one call in about 17 minutes. Slower than this is
/// a switch, not a rate; and a spacing of years would overflow the timers.
pub const MIN_PER_SECOND: f64 = 0.001;
/// The fastest rate hint.
pub const MAX_PER_SECOND: f64 = 10_000.0;
/// The largest daily cap.
pub const MAX_DAILY_CAP: u32 = 1_000_000_000;

/// The longest display name.
pub const MAX_DISPLAY_NAME_CHARS: usize = 80;
/// The longest short label.
pub const MAX_SHORT_LABEL_CHARS: usize = 16;

impl ConnectorProfile {
    /// Every mistake in it, each named by its field; empty when it is sound.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        let mut bad = |field: &str, message: String| {
            problems.push(Problem {
                field: field.to_owned(),
                message,
            });
        };
        let id_ok = !self.id.is_empty()
            && self.id.len() <= 64
            && self
                .id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !id_ok {
            bad(
                "id",
                format!(
                    "{:?} is not an id: use 1 to 64 of a-z, 0-9, - and _",
                    self.id
                ),
            );
        }
        if self.display_name.trim().is_empty()
            || self.display_name.chars().count() > MAX_DISPLAY_NAME_CHARS
        {
            bad(
                "display_name",
                format!("give 1 to {MAX_DISPLAY_NAME_CHARS} characters"),
            );
        }
        if self.short_label.trim().is_empty()
            || self.short_label.chars().count() > MAX_SHORT_LABEL_CHARS
        {
            bad(
                "short_label",
                format!("give 1 to {MAX_SHORT_LABEL_CHARS} characters"),
            );
        }
        if self.capabilities.is_empty() {
            bad(
                "capabilities",
                "name at least one, e.g. \"search.web\" or a new dotted name like \"community.forum\""
                    .to_owned(),
            );
        }
        for (i, var) in self.requires_env.iter().enumerate() {
            if let Err(e) = crate::check_secret_name(var) {
                bad(&format!("requires_env[{i}]"), e);
            }
        }
        if let Some(ps) = self.rate_hints.per_second {
            if !(MIN_PER_SECOND..=MAX_PER_SECOND).contains(&ps) {
                bad(
                    "rate_hints.per_second",
                    format!(
                        "{ps} is out of range: give {MIN_PER_SECOND} to {MAX_PER_SECOND} calls a second, or leave it out"
                    ),
                );
            }
        }
        if let Some(cap) = self.rate_hints.daily_cap {
            if !(1..=MAX_DAILY_CAP).contains(&cap) {
                bad(
                    "rate_hints.daily_cap",
                    format!("{cap} is out of range: give 1 to {MAX_DAILY_CAP}, or leave it out"),
                );
            }
        }
        if let Some(cost) = &self.cost {
            if let Err(e) = cost.check() {
                bad("cost.unit", e);
            }
            let most = crate::Amount::units(crate::spend::MAX_CALL_UNITS);
            if cost.per_call > most {
                bad(
                    "cost.per_call",
                    format!("a call may cost at most {most} of its unit"),
                );
            }
            for (capability, price) in &cost.by_capability {
                if *price > most {
                    bad(
                        &format!("cost.by_capability.{capability}"),
                        format!("a call may cost at most {most} of its unit"),
                    );
                }
            }
            for capability in cost.by_capability.keys() {
                if !self.capabilities.iter().any(|own| own.name() == capability) {
                    bad(
                        &format!("cost.by_capability.{capability}"),
                        "name one of the connector's capabilities".to_owned(),
                    );
                }
            }
        }
        problems
    }
}

/// One registered connector: what it declares, plus its status and where it
/// comes from; never a secret value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConnectorInfo {
    #[serde(flatten)]
    pub profile: ConnectorProfile,
    #[serde(flatten)]
    pub status: ConnectorStatus,
    /// `status`'s reason in a sentence, absent when available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    /// Where the connector comes from.
    #[serde(default)]
    pub source: ConnectorSource,
}

/// Where a connector comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConnectorSource {
    /// Coded in Switchyard (a rebuild changes it).
    #[default]
    Builtin,
    /// A manifest file in the drop folder.
    File { path: String },
    /// A manifest an admin of this workspace saved in the browser or through
    /// the API; no other workspace sees it.
    Workspace { workspace_id: i64 },
}

impl ConnectorSource {
    /// In a few words, for the inventory.
    pub fn describe(&self) -> String {
        match self {
            ConnectorSource::Builtin => "built-in".to_owned(),
            ConnectorSource::File { path } => format!("manifest file {path}"),
            ConnectorSource::Workspace { .. } => "added in the browser".to_owned(),
        }
    }

    /// Whether a workspace sees it: everything but another workspace's own.
    pub fn visible_in(&self, workspace_id: Option<i64>) -> bool {
        match self {
            ConnectorSource::Workspace {
                workspace_id: owner,
            } => Some(*owner) == workspace_id,
            _ => true,
        }
    }

    /// The workspace that owns it, if one does.
    pub fn workspace(&self) -> Option<i64> {
        match self {
            ConnectorSource::Workspace { workspace_id } => Some(*workspace_id),
            _ => None,
        }
    }
}

/// One status change of a connector, for its audit trail: who switched it
/// off or on, when a provider refused it, when someone re-checked it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatusChange {
    pub connector_id: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub actor: String,
    /// Unix milliseconds.
    pub at: i64,
}

/// One line of a chip's connector menu: a connector serving the pack's intent,
/// its last attempt for this record, and whether a plain click would start there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MenuEntry {
    pub connector: ConnectorInfo,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt: Option<crate::HistoryEntry>,
    /// A plain click fires this connector first.
    pub next: bool,
    /// The person set "always start with this connector" for this record.
    pub record_override: bool,
    /// Its place (1 first) in the person's own order for the pack, when
    /// they set one and it is in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub your_order: Option<u32>,
    /// What a fire through it costs here, and what is left of the tightest
    /// budget counting it; absent when it is free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<crate::NextCost>,
}

/// A chip's connector menu.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConnectorMenu {
    pub record_id: i64,
    pub pack_id: String,
    pub entries: Vec<MenuEntry>,
}

/// How a connector did over a window (the last day), counted from every
/// attempt in the database, so every process agrees.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConnectorStats {
    pub connector_id: String,
    /// Finished attempts.
    pub attempts: u64,
    pub found: u64,
    pub not_found: u64,
    pub errors: u64,
    pub rate_limited: u64,
    /// Median and 95th percentile of the attempts' durations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_ms: Option<i64>,
    /// The window hour by hour, oldest first (24 for a day), for the chart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hours: Vec<HourCount>,
}

/// One hour of a connector's attempts: counts by outcome and how long they
/// took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HourCount {
    pub attempts: u32,
    pub found: u32,
    /// Errors and rate limits.
    pub failed: u32,
    /// Of the failed, the rate limits.
    #[serde(default)]
    pub rate_limited: u32,
    /// Median and 95th percentile of the hour's durations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_ms: Option<i64>,
}

impl HourCount {
    /// Finished without results.
    pub fn not_found(&self) -> u32 {
        self.attempts
            .saturating_sub(self.found)
            .saturating_sub(self.failed)
    }

    /// Failed other than by a rate limit.
    pub fn errors(&self) -> u32 {
        self.failed.saturating_sub(self.rate_limited)
    }
}

impl ConnectorStats {
    /// Found answers among finished attempts, 0 to 1.
    pub fn hit_rate(&self) -> f64 {
        ratio(self.found, self.attempts)
    }

    /// Errors among finished attempts, 0 to 1.
    pub fn error_rate(&self) -> f64 {
        ratio(self.errors, self.attempts)
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// One inventory line: a connector as a workspace sees it, today's fires
/// against its daily cap, and its last day in that workspace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InventoryRow {
    #[serde(flatten)]
    pub info: ConnectorInfo,
    pub fires_today: i64,
    /// Absent when it has not fired in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<ConnectorStats>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> ConnectorProfile {
        ConnectorProfile {
            id: "probe".to_owned(),
            display_name: "Probe".to_owned(),
            short_label: "P".to_owned(),
            capabilities: vec![Capability::Builtin(crate::BuiltinCapability::SearchWeb)],
            cost_tier: CostTier::Free,
            requires_env: Vec::new(),
            rate_hints: RateHints::default(),
            cost: None,
        }
    }

    fn fields(p: &ConnectorProfile) -> Vec<String> {
        p.problems().into_iter().map(|p| p.field).collect()
    }

    #[test]
    fn rate_hints_out_of_range_are_refused_by_name() {
        for bad in [
            1e-30,
            0.0009,
            0.0,
            -1.0,
            10_000.5,
            1e300,
            f64::NAN,
            f64::INFINITY,
        ] {
            let mut p = profile();
            p.rate_hints.per_second = Some(bad);
            assert_eq!(fields(&p), ["rate_hints.per_second"], "{bad}");
        }
        for good in [MIN_PER_SECOND, 0.5, 5.0, MAX_PER_SECOND] {
            let mut p = profile();
            p.rate_hints.per_second = Some(good);
            assert!(fields(&p).is_empty(), "{good}");
        }
        for (cap, ok) in [
            (0, false),
            (1, true),
            (MAX_DAILY_CAP, true),
            (MAX_DAILY_CAP + 1, false),
        ] {
            let mut p = profile();
            p.rate_hints.daily_cap = Some(cap);
            assert_eq!(fields(&p).is_empty(), ok, "{cap}");
        }
    }

    #[test]
    fn a_price_past_the_most_a_call_may_cost_is_refused_by_name() {
        let mut p = profile();
        let mut cost =
            crate::Cost::per_call(crate::Amount::units(crate::spend::MAX_CALL_UNITS), "USD");
        p.cost = Some(cost.clone());
        assert!(fields(&p).is_empty());
        cost.per_call = crate::Amount::units(crate::spend::MAX_CALL_UNITS + 1);
        cost.by_capability
            .insert("search.web".to_owned(), crate::Amount::units(2_000_000));
        p.cost = Some(cost);
        assert_eq!(
            fields(&p),
            ["cost.per_call", "cost.by_capability.search.web"]
        );
    }
}
