//! Connectors as one workspace sees and controls them: its admins switch a
//! connector off or on for their workspace only; the connector's own state
//! (needs-env, rate-limited, auth-failed) is everyone's.

use model::{ConnectorInfo, ConnectorStatus, InventoryRow};

/// The window the inventory's and `/metrics`' figures cover: one day.
pub const STATS_WINDOW_MS: i64 = 24 * 60 * 60 * 1000;

use crate::registry::RegistryError;
use crate::store::{Principal, StatusChange, StoreError};
use crate::Engine;

/// Why a connector could not be switched.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Engine {
    /// Every registered connector as the workspace sees it.
    pub async fn connectors_in(&self, workspace_id: i64) -> Result<Vec<ConnectorInfo>, StoreError> {
        let off = self
            .store
            .workspace_disabled_connectors(workspace_id)
            .await?;
        Ok(self
            .registry
            .all()
            .iter()
            .map(|h| {
                let mut info = h.info();
                if let Some(reason) = off.get(&info.id) {
                    info.status = ConnectorStatus::Disabled {
                        reason: reason.clone(),
                    };
                }
                info
            })
            .collect())
    }

    /// The inventory of a workspace: every connector with today's fires and
    /// its figures over the last [`STATS_WINDOW_MS`].
    pub async fn inventory(&self, workspace_id: i64) -> Result<Vec<InventoryRow>, StoreError> {
        let since = crate::time::now_ms() - STATS_WINDOW_MS;
        let mut stats = self.store.connector_stats(workspace_id, since).await?;
        let mut rows = Vec::new();
        for info in self.connectors_in(workspace_id).await? {
            let at = stats.iter().position(|s| s.connector_id == info.id);
            rows.push(InventoryRow {
                fires_today: self.store.fires_today(&info.id).await?,
                stats: at.map(|i| stats.swap_remove(i)),
                info,
            });
        }
        Ok(rows)
    }

    /// One connector as the workspace sees it.
    pub async fn connector_in(
        &self,
        workspace_id: i64,
        id: &str,
    ) -> Result<ConnectorInfo, SwitchError> {
        self.connectors_in(workspace_id)
            .await?
            .into_iter()
            .find(|c| c.id == id)
            .ok_or_else(|| SwitchError::Registry(RegistryError::Unknown(id.to_owned())))
    }

    /// Switches a connector off for the caller's workspace (admins).
    pub async fn disable_connector(
        &self,
        who: &Principal,
        id: &str,
        reason: &str,
    ) -> Result<ConnectorInfo, SwitchError> {
        if self.registry.by_id(id).is_none() {
            return Err(RegistryError::Unknown(id.to_owned()).into());
        }
        let reason = match reason.trim() {
            "" => format!("by {}", who.email),
            given => given.to_owned(),
        };
        if self
            .store
            .set_workspace_connector(who.workspace_id, id, Some(&reason), &who.email)
            .await?
        {
            self.store
                .record_connector_status(
                    Some(who.workspace_id),
                    id,
                    "disabled",
                    Some(&reason),
                    &who.email,
                )
                .await?;
        }
        self.connector_in(who.workspace_id, id).await
    }

    /// Switches a connector back on for the caller's workspace (admins). A
    /// connector whose key was refused (auth-failed) or that waits out a rate
    /// limit is also cleared for everyone, to be tried again.
    pub async fn enable_connector(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<ConnectorInfo, SwitchError> {
        let Some(handle) = self.registry.by_id(id) else {
            return Err(RegistryError::Unknown(id.to_owned()).into());
        };
        let was_off = self
            .store
            .set_workspace_connector(who.workspace_id, id, None, &who.email)
            .await?;
        let cleared = matches!(
            handle.status,
            ConnectorStatus::AuthFailed { .. }
                | ConnectorStatus::RateLimited { .. }
                | ConnectorStatus::Disabled { .. }
        );
        if cleared {
            // Logged for every workspace to see, so without the person's
            // name; their own workspace's entry below has it.
            self.registry.enable(id, "a workspace admin").await?;
        }
        if was_off || cleared {
            let reason =
                cleared.then(|| format!("cleared {} for another try", handle.status.kind()));
            self.store
                .record_connector_status(
                    Some(who.workspace_id),
                    id,
                    "available",
                    reason.as_deref(),
                    &who.email,
                )
                .await?;
        }
        self.connector_in(who.workspace_id, id).await
    }

    /// The status changes of a connector the caller's workspace may see.
    pub async fn connector_audit(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<Vec<StatusChange>, SwitchError> {
        if self.registry.by_id(id).is_none() {
            return Err(RegistryError::Unknown(id.to_owned()).into());
        }
        Ok(self
            .store
            .connector_status_log(id, who.workspace_id)
            .await?)
    }
}
