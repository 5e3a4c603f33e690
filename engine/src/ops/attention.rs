//! Attention operations: what a workspace's admins must act on (a key
//! refused, a connector suspended, a budget spent), and the same for every
//! workspace at once for the operator's metrics.

use model::Attention;

use crate::ops::OpError;
use crate::store::StoreError;
use crate::tenancy::attention::all_in;
use crate::tenancy::Principal;
use crate::Engine;

impl Engine {
    /// What needs the admins of a workspace now, oldest first (also read
    /// by `/metrics`).
    pub(crate) async fn attention_in(
        &self,
        workspace_id: i64,
    ) -> Result<Vec<Attention>, StoreError> {
        let lens = self.lens_now(workspace_id).await?;
        let mut items = all_in(
            &self.registry,
            &lens,
            self.dispatcher.attention_after(),
            self.store.now_ms(),
        );
        items.sort_by_key(|a| a.since);
        Ok(items)
    }

    /// What needs the caller's workspace's admins (admins only).
    pub async fn attention(&self, who: &Principal) -> Result<Vec<Attention>, OpError> {
        crate::ops::require_admin(who)?;
        Ok(self.attention_in(who.workspace_id).await?)
    }
}
