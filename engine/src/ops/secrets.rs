//! Secrets operations: the workspace secrets its admins list, set and
//! clear (names and when, never values; sealed by `tenancy::secrets`).

use model::{check_secret_name, EventKind, SecretInfo};

use crate::ops::OpError;
use crate::store::StoreError;
use crate::tenancy::secrets::{check_value, SecretsError};
use crate::tenancy::Principal;
use crate::Engine;

impl Engine {
    /// The names of the caller's workspace's secrets, who set them and when.
    pub async fn secrets(&self, who: &Principal) -> Result<Vec<SecretInfo>, OpError> {
        Ok(self.store.secrets_of(who.workspace_id).await?)
    }

    /// Sets (or replaces) a secret of the caller's workspace (admins).
    pub async fn set_secret(
        &self,
        who: &Principal,
        name: &str,
        value: &str,
    ) -> Result<SecretInfo, OpError> {
        crate::ops::require_admin(who)?;
        check_secret_name(name).map_err(SecretsError::Invalid)?;
        let value = check_value(value)?;
        let sealer = self.dispatcher.sealer().ok_or(SecretsError::NoKey)?;
        let sealed = sealer.seal(who.workspace_id, name, value)?;
        self.store
            .put_secret(who.workspace_id, name, &sealed, &who.email)
            .await?;
        tracing::info!(workspace = who.workspace_id, secret = %name, by = %who.email, "Workspace secret set.");
        // A connector switched off here because the old key was refused
        // gets another try with the new one.
        for handle in self.registry.all_in(Some(who.workspace_id)) {
            let id = &handle.registration.profile.id;
            if handle
                .registration
                .profile
                .requires_env
                .iter()
                .any(|v| v == name)
                && self.store.clear_system_switch(who.workspace_id, id).await?
            {
                self.store
                    .record_connector_status(
                        Some(who.workspace_id),
                        id,
                        "available",
                        Some(&format!("{name} was set again")),
                        &who.email,
                    )
                    .await?;
            }
        }
        self.announce_users_of(who.workspace_id, name).await?;
        Ok(self
            .store
            .secrets_of(who.workspace_id)
            .await?
            .into_iter()
            .find(|s| s.name == name)
            .ok_or_else(|| SecretsError::NotSet(name.to_owned()))?)
    }

    /// Clears a secret of the caller's workspace (admins).
    pub async fn clear_secret(&self, who: &Principal, name: &str) -> Result<(), OpError> {
        crate::ops::require_admin(who)?;
        if !self.store.delete_secret(who.workspace_id, name).await? {
            return Err(SecretsError::NotSet(name.to_owned()).into());
        }
        tracing::info!(workspace = who.workspace_id, secret = %name, by = %who.email, "Workspace secret cleared.");
        self.announce_users_of(who.workspace_id, name).await?;
        Ok(())
    }

    /// Tells the workspace's viewers about every connector that reads the
    /// secret: its status there may have changed (needs-env or not).
    async fn announce_users_of(&self, workspace_id: i64, name: &str) -> Result<(), StoreError> {
        for info in self.connectors_in(workspace_id).await? {
            if info.profile.requires_env.iter().any(|v| v == name) {
                self.events.publish_in(
                    Some(workspace_id),
                    EventKind::ConnectorChanged { connector: info },
                );
            }
        }
        Ok(())
    }
}
