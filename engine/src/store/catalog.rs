//! The rows behind a workspace's own packs and bundles: each definition as
//! JSON, laid over the shipped catalogue by `engine::packs::workspace`.

use super::{Store, StoreError};

/// Which part of the catalogue a row holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatalogKind {
    Pack,
    Bundle,
}

impl CatalogKind {
    fn name(self) -> &'static str {
        match self {
            CatalogKind::Pack => "pack",
            CatalogKind::Bundle => "bundle",
        }
    }
}

impl Store {
    /// A workspace's own packs and bundles, in the order they were first saved.
    pub async fn workspace_catalog(
        &self,
        workspace_id: i64,
    ) -> Result<(Vec<model::PackConfig>, Vec<model::BundleConfig>), StoreError> {
        let rows: Vec<(String, String, String)> = sqlx::query_as(
            "SELECT kind, item_id, definition FROM workspace_catalog \
             WHERE workspace_id = $1 ORDER BY updated_at, item_id",
        )
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?;
        let (mut packs, mut bundles) = (Vec::new(), Vec::new());
        for (kind, id, json) in rows {
            let corrupt = |e: serde_json::Error| StoreError::Corrupt(format!("{kind} {id}: {e}"));
            match kind.as_str() {
                "pack" => packs.push(serde_json::from_str(&json).map_err(corrupt)?),
                "bundle" => bundles.push(serde_json::from_str(&json).map_err(corrupt)?),
                other => return Err(StoreError::Corrupt(format!("catalogue kind {other:?}"))),
            }
        }
        Ok((packs, bundles))
    }

    /// Saves a workspace's pack or bundle, replacing its earlier version.
    pub async fn put_catalog_item(
        &self,
        workspace_id: i64,
        kind: CatalogKind,
        id: &str,
        definition: &str,
        actor: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO workspace_catalog \
             (workspace_id, kind, item_id, definition, updated_by, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (workspace_id, kind, item_id) DO UPDATE SET \
             definition = excluded.definition, updated_by = excluded.updated_by",
        )
        .bind(workspace_id)
        .bind(kind.name())
        .bind(id)
        .bind(definition)
        .bind(actor)
        .bind(self.now_ms())
        .execute(self.pool())
        .await?;
        self.settings_changed(workspace_id);
        Ok(())
    }

    /// Deletes a workspace's pack or bundle; `false` when it had none.
    pub async fn delete_catalog_item(
        &self,
        workspace_id: i64,
        kind: CatalogKind,
        id: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "DELETE FROM workspace_catalog WHERE workspace_id = $1 AND kind = $2 AND item_id = $3",
        )
        .bind(workspace_id)
        .bind(kind.name())
        .bind(id)
        .execute(self.pool())
        .await?;
        self.settings_changed(workspace_id);
        Ok(done.rows_affected() > 0)
    }
}
