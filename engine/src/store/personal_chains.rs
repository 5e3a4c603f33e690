//! People's own orders of a pack's connectors, one per person, workspace
//! and pack (see `personal_chains` in the migrations). A workspace's are
//! read with its settings (`Store::workspace_settings`), so a fire reads
//! them from memory.

use std::collections::HashMap;

use super::{Store, StoreError};

/// Own orders by user id, then by pack id.
pub type PersonalChains = HashMap<i64, HashMap<String, Vec<String>>>;

impl Store {
    /// Everyone's own orders in a workspace: by user, then by pack. A row
    /// this version cannot read is left out with a warning: the pack's
    /// chain serves.
    pub(super) async fn personal_chains_in(
        &self,
        workspace_id: i64,
    ) -> Result<PersonalChains, StoreError> {
        let rows: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT user_id, pack_id, connectors FROM personal_chains WHERE workspace_id = $1",
        )
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?;
        let mut out = PersonalChains::new();
        for (user, pack, text) in rows {
            match serde_json::from_str(&text) {
                Ok(chain) => {
                    out.entry(user).or_default().insert(pack, chain);
                }
                Err(e) => {
                    tracing::warn!(user, workspace = workspace_id, pack = %pack, error = %e, "A personal chain cannot be read; the pack's chain serves.");
                }
            }
        }
        Ok(out)
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
        self.settings_changed(workspace_id);
        Ok(())
    }
}
