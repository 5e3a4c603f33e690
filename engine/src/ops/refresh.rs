//! Operations on a record set's refresh schedules: read by every member,
//! set and removed by admins.

use model::{RefreshPlan, RefreshSchedule};

use crate::store::Owned;
use crate::tenancy::Principal;
use crate::Engine;

use super::{require_admin, OpError};

impl Engine {
    /// The refresh schedules of a record set, by pack.
    pub async fn refreshes(
        &self,
        who: &Principal,
        set_id: i64,
    ) -> Result<Vec<RefreshSchedule>, OpError> {
        self.authorize(who, Owned::RecordSet(set_id)).await?;
        Ok(self.store.refreshes_of(set_id).await?)
    }

    /// The packs of the set's bundle a schedule may be set for: id and name.
    pub async fn refreshable_packs(
        &self,
        who: &Principal,
        set_id: i64,
    ) -> Result<Vec<(String, String)>, OpError> {
        self.authorize(who, Owned::RecordSet(set_id)).await?;
        let set = self.store.record_set(set_id).await?;
        let catalog = self.catalog_in(set.workspace_id).await?;
        Ok(catalog
            .bundle_packs(&set.bundle_id)
            .into_iter()
            .map(|(pack, _)| (pack.pack_id.clone(), pack.display_name.clone()))
            .collect())
    }

    /// Sets (or changes) how a pack of the set's bundle is refreshed
    /// (admins); it first looks for stale records at the next heartbeat.
    pub async fn set_refresh(
        &self,
        who: &Principal,
        set_id: i64,
        pack_id: &str,
        plan: RefreshPlan,
    ) -> Result<RefreshSchedule, OpError> {
        require_admin(who)?;
        self.authorize(who, Owned::RecordSet(set_id)).await?;
        plan.check().map_err(OpError::Invalid)?;
        let set = self.store.record_set(set_id).await?;
        if !self
            .bundle_pack_ids(&set)
            .await?
            .iter()
            .any(|p| p == pack_id)
        {
            return Err(OpError::Invalid(format!(
                "pack: {pack_id:?} is not a pack of the set's bundle {:?}",
                set.bundle_id
            )));
        }
        Ok(self
            .store
            .set_refresh(set_id, pack_id, plan, &who.email)
            .await?)
    }

    /// Stops refreshing a pack of the set (admins).
    pub async fn remove_refresh(
        &self,
        who: &Principal,
        set_id: i64,
        pack_id: &str,
    ) -> Result<(), OpError> {
        require_admin(who)?;
        self.authorize(who, Owned::RecordSet(set_id)).await?;
        if self.store.remove_refresh(set_id, pack_id).await? {
            Ok(())
        } else {
            Err(OpError::NotFound(format!(
                "no refresh schedule for pack {pack_id:?} of record set {set_id}"
            )))
        }
    }
}
