//! The rows behind workspace manifest connectors and workspace secrets.
//! Secrets are stored sealed; this module never sees a plain value.

use sqlx::Row;

use model::{ManifestFormat, SavedManifest, SecretInfo};

use super::{Store, StoreError};

/// A stored manifest and the workspace that owns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredManifest {
    pub workspace_id: i64,
    pub saved: SavedManifest,
}

fn manifest_of(row: &sqlx::any::AnyRow) -> Result<StoredManifest, StoreError> {
    let format: String = row.try_get("format")?;
    Ok(StoredManifest {
        workspace_id: row.try_get("workspace_id")?,
        saved: SavedManifest {
            connector_id: row.try_get("connector_id")?,
            format: ManifestFormat::from_name(&format)
                .ok_or_else(|| StoreError::Corrupt(format!("manifest format {format:?}")))?,
            text: row.try_get("text")?,
            updated_by: row.try_get("updated_by")?,
            updated_at: row.try_get("updated_at")?,
            error: None,
        },
    })
}

const MANIFEST_COLUMNS: &str =
    "connector_id, workspace_id, format, text, updated_by, updated_at FROM workspace_manifests";

impl Store {
    /// Every saved manifest of every workspace, for registering at start.
    pub async fn all_manifests(&self) -> Result<Vec<StoredManifest>, StoreError> {
        let rows = sqlx::query(&format!("SELECT {MANIFEST_COLUMNS} ORDER BY connector_id"))
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(manifest_of).collect()
    }

    /// How many manifests are saved and when the last was: changes when
    /// any manifest is saved, changed or removed anywhere.
    pub async fn manifests_fingerprint(&self) -> Result<(i64, i64), StoreError> {
        Ok(
            sqlx::query_as(
                "SELECT COUNT(*), COALESCE(MAX(updated_at), 0) FROM workspace_manifests",
            )
            .fetch_one(self.pool())
            .await?,
        )
    }

    /// One workspace's saved manifests.
    pub async fn manifests_of(&self, workspace_id: i64) -> Result<Vec<SavedManifest>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {MANIFEST_COLUMNS} WHERE workspace_id = $1 ORDER BY connector_id"
        ))
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(|r| Ok(manifest_of(r)?.saved)).collect()
    }

    /// The saved manifest of a connector, whichever workspace owns it.
    pub async fn manifest(&self, connector_id: &str) -> Result<Option<StoredManifest>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {MANIFEST_COLUMNS} WHERE connector_id = $1"
        ))
        .bind(connector_id)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(manifest_of).transpose()
    }

    /// Saves a workspace's manifest, replacing its earlier version. Returns
    /// `false` (and changes nothing) when another workspace owns the id.
    pub async fn save_manifest(
        &self,
        workspace_id: i64,
        connector_id: &str,
        format: ManifestFormat,
        text: &str,
        actor: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "INSERT INTO workspace_manifests \
             (connector_id, workspace_id, format, text, updated_by, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (connector_id) DO UPDATE SET \
             format = excluded.format, text = excluded.text, \
             updated_by = excluded.updated_by, updated_at = excluded.updated_at \
             WHERE workspace_manifests.workspace_id = excluded.workspace_id",
        )
        .bind(connector_id)
        .bind(workspace_id)
        .bind(format.name())
        .bind(text)
        .bind(actor)
        .bind(self.now_ms())
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Deletes a workspace's manifest; `false` when it had none by that id.
    pub async fn delete_manifest(
        &self,
        workspace_id: i64,
        connector_id: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "DELETE FROM workspace_manifests WHERE workspace_id = $1 AND connector_id = $2",
        )
        .bind(workspace_id)
        .bind(connector_id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// The names of a workspace's secrets, who set them and when.
    pub async fn secrets_of(&self, workspace_id: i64) -> Result<Vec<SecretInfo>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT name, set_by, set_at FROM workspace_secrets \
             WHERE workspace_id = $1 ORDER BY name",
        )
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// A workspace's sealed secrets by name.
    pub async fn sealed_secrets(
        &self,
        workspace_id: i64,
    ) -> Result<Vec<(String, String)>, StoreError> {
        Ok(
            sqlx::query_as("SELECT name, sealed FROM workspace_secrets WHERE workspace_id = $1")
                .bind(workspace_id)
                .fetch_all(self.pool())
                .await?,
        )
    }

    /// Stores a sealed secret, replacing its earlier value.
    pub async fn put_secret(
        &self,
        workspace_id: i64,
        name: &str,
        sealed: &str,
        actor: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO workspace_secrets (workspace_id, name, sealed, set_by, set_at) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (workspace_id, name) DO UPDATE SET \
             sealed = excluded.sealed, set_by = excluded.set_by, set_at = excluded.set_at",
        )
        .bind(workspace_id)
        .bind(name)
        .bind(sealed)
        .bind(actor)
        .bind(self.now_ms())
        .execute(self.pool())
        .await?;
        self.settings_changed(workspace_id);
        Ok(())
    }

    /// Clears a secret; `false` when it was not set.
    pub async fn delete_secret(&self, workspace_id: i64, name: &str) -> Result<bool, StoreError> {
        let done =
            sqlx::query("DELETE FROM workspace_secrets WHERE workspace_id = $1 AND name = $2")
                .bind(workspace_id)
                .bind(name)
                .execute(self.pool())
                .await?;
        self.settings_changed(workspace_id);
        Ok(done.rows_affected() > 0)
    }
}
