//! How one workspace sees the registry: everyone's connectors plus its own
//! (another workspace's are invisible), switched off where its admins
//! switched them off, and needing no variable its secrets provide.

use std::collections::{BTreeSet, HashMap};

use model::{ConnectorInfo, ConnectorStatus};

use crate::registry::{ConnectorHandle, Registry};
use crate::store::{Store, StoreError, WorkspaceSettings};

/// One workspace's view, read once per request or fire.
#[derive(Clone, Debug, Default)]
pub struct Lens {
    workspace_id: Option<i64>,
    off: HashMap<String, String>,
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

    /// The connector's status in this workspace.
    pub fn status(&self, handle: &ConnectorHandle) -> ConnectorStatus {
        if let Some(reason) = self.off.get(&handle.registration.id) {
            return ConnectorStatus::Disabled {
                reason: reason.clone(),
            };
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

    /// Whether the workspace set any secret at all.
    pub fn has_secrets(&self) -> bool {
        !self.secrets.is_empty()
    }
}
