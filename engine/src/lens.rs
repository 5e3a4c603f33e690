//! How one workspace sees the registry: everyone's connectors plus its own
//! (another workspace's are invisible), switched off where its admins
//! switched them off or where its own key met a refusal, a rate limit or a
//! suspension, needing no variable its secrets provide, and whose key each
//! connector's calls use there.

use std::collections::{BTreeSet, HashMap};

use model::{ConnectorInfo, ConnectorStatus};

use crate::registry::{ConnectorHandle, Registry};
use crate::store::{Store, StoreError, WorkspaceSettings};

/// One workspace's view, read once per request or fire.
#[derive(Clone, Debug, Default)]
pub struct Lens {
    workspace_id: Option<i64>,
    off: HashMap<String, ConnectorStatus>,
    secrets: BTreeSet<String>,
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
        ))
    }

    /// The view of workspace `ws` with these settings.
    pub fn from_settings(ws: i64, settings: &WorkspaceSettings) -> Self {
        Self {
            workspace_id: Some(ws),
            off: settings.off.clone(),
            secrets: settings.secret_names.clone(),
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
        let now = crate::time::now_ms();
        match self.off.get(&handle.registration.id) {
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
