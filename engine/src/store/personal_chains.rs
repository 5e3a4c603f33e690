//! People's own orders of a pack's connectors, one per person, workspace
//! and pack (see `personal_chains` in the migrations).

use std::collections::HashMap;

use super::{Store, StoreError};

impl Store {
    /// A person's own orders in a workspace, by pack. A row this version
    /// cannot read is left out with a warning: the pack's chain serves.
    pub async fn personal_chains(
        &self,
        user_id: i64,
        workspace_id: i64,
    ) -> Result<HashMap<String, Vec<String>>, StoreError> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT pack_id, connectors FROM personal_chains \
             WHERE user_id = $1 AND workspace_id = $2",
        )
        .bind(user_id)
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(pack, text)| match serde_json::from_str(&text) {
                Ok(chain) => Some((pack, chain)),
                Err(e) => {
                    tracing::warn!(user = user_id, workspace = workspace_id, pack = %pack, error = %e, "A personal chain cannot be read; the pack's chain serves.");
                    None
                }
            })
            .collect())
    }

    /// Sets (or with `None` clears) a person's own order for a pack.
    pub async fn set_personal_chain(
        &self,
        user_id: i64,
        workspace_id: i64,
        pack_id: &str,
        connectors: Option<&[String]>,
    ) -> Result<(), StoreError> {
        match connectors {
            Some(chain) => {
                let text =
                    serde_json::to_string(chain).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                sqlx::query(
                    "INSERT INTO personal_chains \
                     (user_id, workspace_id, pack_id, connectors, updated_at) \
                     VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (user_id, workspace_id, pack_id) DO UPDATE \
                     SET connectors = excluded.connectors, updated_at = excluded.updated_at",
                )
                .bind(user_id)
                .bind(workspace_id)
                .bind(pack_id)
                .bind(text)
                .bind(self.now_ms())
                .execute(self.pool())
                .await?;
            }
            None => {
                sqlx::query(
                    "DELETE FROM personal_chains \
                     WHERE user_id = $1 AND workspace_id = $2 AND pack_id = $3",
                )
                .bind(user_id)
                .bind(workspace_id)
                .bind(pack_id)
                .execute(self.pool())
                .await?;
            }
        }
        Ok(())
    }
}
