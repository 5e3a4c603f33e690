//! How one workspace sees the registry: everyone's connectors plus its own
//! (another workspace's are invisible), switched off where its admins
//! switched them off or where its own key met a refusal, a rate limit or a
//! suspension, needing no variable its secrets provide, and whose key each
//! connector's calls use there.

use std::collections::{BTreeSet, HashMap};

use model::{BudgetStatus, Capability, ConnectorInfo, ConnectorStatus, NextCost};

use crate::connectors::registry::{ConnectorHandle, Registry};
use crate::store::{Store, StoreError, WorkspaceSettings};
use crate::time::Clock;

/// One workspace's view, read once per request or fire.
#[derive(Clone, Debug, Default)]
pub struct Lens {
    workspace_id: Option<i64>,
    off: HashMap<String, ConnectorStatus>,
    secrets: BTreeSet<String>,
    budgets: Vec<BudgetStatus>,
    /// What one record may cost a day, per unit.
    record_caps: Vec<model::RecordCapStatus>,
    /// When its own rate limits and suspensions lift is read from this.
    clock: Clock,
}

impl Lens {
    /// The view of `workspace_id` (`None`: a set from before workspaces,
    /// which sees no workspace's own connectors).
    pub async fn of(store: &Store, workspace_id: Option<i64>) -> Result<Self, StoreError> {
        let Some(ws) = workspace_id else {
            return Ok(Self::default());
        };
        Ok(Self::from_settings(
            ws,
            &*store.workspace_settings(ws).await?,
            store.clock(),
        ))
    }

    /// The view of workspace `ws` with these settings, by `clock`.
    pub fn from_settings(ws: i64, settings: &WorkspaceSettings, clock: &Clock) -> Self {
        Self {
            workspace_id: Some(ws),
            off: settings.off.clone(),
            secrets: settings.secret_names.clone(),
            budgets: settings.budgets.clone(),
            record_caps: settings.record_caps.clone(),
            clock: clock.clone(),
        }
    }

    /// Whether the workspace sees the connector at all.
    pub fn sees(&self, handle: &ConnectorHandle) -> bool {
        handle.source.visible_in(self.workspace_id)
    }

    /// Every connector the workspace sees, ordered by id.
    pub fn handles(&self, registry: &Registry) -> Vec<ConnectorHandle> {
        registry.all_in(self.workspace_id)
    }

    /// The connector's status in this workspace: the workspace's own first
    /// (a rate limit or suspension of its key until it lifts), then what
    /// everyone sees, less the variables its secrets provide. While its own
    /// key is used, a rate limit, suspension or refusal of the server's key
    /// is not the workspace's problem.
    pub fn status(&self, handle: &ConnectorHandle) -> ConnectorStatus {
        match self.own_status(handle) {
            ConnectorStatus::Available => self
                .spent_budget(handle)
                .map_or(ConnectorStatus::Available, |reason| {
                    ConnectorStatus::OverBudget { reason }
                }),
            other => other,
        }
    }

    /// What one call of the connector for `intent` costs here, and what is
    /// left of the tightest budget counting it; `None` when it is free.
    pub fn next_cost(&self, handle: &ConnectorHandle, intent: &Capability) -> Option<NextCost> {
        let cost = handle.registration.profile.cost.as_ref()?;
        let amount = cost.of_call(intent.name());
        if amount <= model::Amount::ZERO {
            return None;
        }
        let id = &handle.registration.profile.id;
        Some(NextCost {
            amount,
            budget_left: self
                .budgets
                .iter()
                .filter(|b| b.budget.counts(id, &cost.unit))
                .map(BudgetStatus::left)
                .min(),
            unit: cost.unit.clone(),
        })
    }

    /// What one record may cost a day in `unit`, if the workspace caps it.
    pub fn record_cap(&self, unit: &str) -> Option<model::Amount> {
        self.record_caps
            .iter()
            .find(|c| c.cap.unit == unit)
            .map(|c| c.cap.daily_limit)
    }

    /// Which budget has too little left for one more call of the
    /// connector this month, in words, if one has (a call priced at
    /// nothing always fits). (As read with the
    /// settings: the walk's own count is what stops a call.)
    fn spent_budget(&self, handle: &ConnectorHandle) -> Option<String> {
        let cost = handle.registration.profile.cost.as_ref()?;
        let id = &handle.registration.profile.id;
        self.budgets
            .iter()
            .filter(|b| b.budget.counts(id, &cost.unit))
            .find(|b| b.left() < cost.per_call)
            .map(|b| b.spent_reason(&handle.registration.profile.display_name))
    }

    /// The status before budgets.
    fn own_status(&self, handle: &ConnectorHandle) -> ConnectorStatus {
        let now = self.clock.now_ms();
        match self.off.get(&handle.registration.profile.id) {
            Some(
                ConnectorStatus::RateLimited { until, .. }
                | ConnectorStatus::Suspended { until, .. },
            ) if *until <= now => {}
            Some(own) => return own.clone(),
            None => {}
        }
        if self.key_owner(handle).is_some()
            && matches!(
                handle.status,
                ConnectorStatus::RateLimited { .. }
                    | ConnectorStatus::Suspended { .. }
                    | ConnectorStatus::AuthFailed { .. }
            )
        {
            return ConnectorStatus::Available;
        }
        match &handle.status {
            ConnectorStatus::NeedsEnv { vars } => {
                let missing: Vec<String> = vars
                    .iter()
                    .filter(|v| !self.secrets.contains(*v))
                    .cloned()
                    .collect();
                if missing.is_empty() {
                    ConnectorStatus::Available
                } else {
                    ConnectorStatus::NeedsEnv { vars: missing }
                }
            }
            other => other.clone(),
        }
    }

    /// The connector as the workspace's people see it.
    pub fn info(&self, handle: &ConnectorHandle) -> ConnectorInfo {
        let mut info = handle.info();
        info.status = self.status(handle);
        info.status_reason = info.status.reason();
        info
    }

    /// Whose key the connector's calls use in this workspace: the
    /// workspace's (`Some`), when one of its secrets provides a variable the
    /// connector reads, or the server's (`None`).
    pub fn key_owner(&self, handle: &ConnectorHandle) -> Option<i64> {
        let own = handle
            .registration
            .profile
            .requires_env
            .iter()
            .any(|v| self.secrets.contains(v));
        self.workspace_id.filter(|_| own)
    }

    /// Whether the workspace set any secret at all.
    pub fn has_secrets(&self) -> bool {
        !self.secrets.is_empty()
    }
}

/// The name a connector's rate slots and daily cap are counted under for
/// calls with one key owner's key (a provider limits each key): the
/// connector's id for the server's key, with the workspace for its own.
pub fn usage_key(connector_id: &str, key_owner: Option<i64>) -> String {
    match key_owner {
        Some(workspace) => format!("{connector_id} workspace:{workspace}"),
        None => connector_id.to_owned(),
    }
}

/// The name one workspace's share of a connector's daily cap on the
/// server's key is counted under.
pub fn share_key(connector_id: &str, workspace: i64) -> String {
    format!("{connector_id} share:{workspace}")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use model::{BuiltinCapability as B, CostTier};

    use super::*;
    use crate::connectors::scripted::{ScriptedConnector, Step};

    #[tokio::test]
    async fn a_workspace_s_own_key_answers_for_itself_only() {
        let db = crate::store::testing::sqlite();
        let engine = crate::store::testing::engine(&db).await;
        let mut reg =
            ScriptedConnector::registration("keyed", CostTier::Paid, &[B::SearchWeb.into()]);
        reg.profile.requires_env = vec!["KEYED_KEY".to_owned()];
        engine
            .registry
            .register(reg, ScriptedConnector::new("keyed", [Step::Found(1)]))
            .unwrap();
        engine
            .registry
            .mark_rate_limited("keyed", Duration::from_secs(60), "HTTP 429")
            .await;
        let handle = engine.registry.by_id("keyed").unwrap();
        let mut settings = WorkspaceSettings::default();
        let server_key = Lens::from_settings(1, &settings, engine.store.clock());
        settings.secret_names.insert("KEYED_KEY".to_owned());
        let own_key = Lens::from_settings(1, &settings, engine.store.clock());

        // The server's key is limited: so is a workspace using it, not one
        // using its own key, whose fires and caps count apart.
        assert_eq!(server_key.status(&handle).kind(), "rate-limited");
        assert_eq!(own_key.status(&handle), ConnectorStatus::Available);
        assert_eq!(server_key.key_owner(&handle), None);
        assert_eq!(own_key.key_owner(&handle), Some(1));
        assert_eq!(usage_key("keyed", None), "keyed");
        assert_eq!(usage_key("keyed", Some(1)), "keyed workspace:1");

        // What the workspace's own key met holds there until it lifts.
        settings.off.insert(
            "keyed".to_owned(),
            ConnectorStatus::RateLimited {
                until: engine.store.now_ms() + 60_000,
                reason: "HTTP 429 (this workspace's key)".to_owned(),
            },
        );
        assert_eq!(
            Lens::from_settings(1, &settings, engine.store.clock())
                .status(&handle)
                .kind(),
            "rate-limited"
        );
        settings.off.insert(
            "keyed".to_owned(),
            ConnectorStatus::RateLimited {
                until: engine.store.now_ms() - 1,
                reason: "HTTP 429 (this workspace's key)".to_owned(),
            },
        );
        assert_eq!(
            Lens::from_settings(1, &settings, engine.store.clock()).status(&handle),
            ConnectorStatus::Available
        );
    }
}
