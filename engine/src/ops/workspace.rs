//! Operations on the caller's workspace as a whole: whether the server can
//! serve, which connectors serve a capability, its members, whether
//! secrets can be kept.

use model::{Capability, Member};

use crate::store::StoreError;
use crate::tenancy::Principal;
use crate::Engine;

use super::OpError;

impl Engine {
    /// The database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.store.ping().await
    }

    /// Whether this process can serve: its database answers within
    /// [`crate::store::ACQUIRE_AT_MOST`]; any failure is `Unavailable`.
    pub async fn ready(&self) -> Result<(), crate::ops::OpError> {
        let waited = tokio::time::timeout(crate::store::ACQUIRE_AT_MOST, self.store.ping()).await;
        match waited {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(crate::ops::OpError::Unavailable(e.to_string())),
            Err(_) => Err(crate::ops::OpError::Unavailable(format!(
                "no answer within {:?}",
                crate::store::ACQUIRE_AT_MOST
            ))),
        }
    }

    /// The ids of the connectors serving `capability` in the caller's
    /// workspace (any status), cheapest first as a chain would try them.
    pub fn connectors_serving(&self, who: &Principal, capability: &Capability) -> Vec<String> {
        self.registry
            .serving(capability, Some(who.workspace_id))
            .iter()
            .map(|h| h.registration.profile.id.clone())
            .collect()
    }

    /// The members of the caller's workspace.
    pub async fn members(&self, who: &Principal) -> Result<Vec<Member>, OpError> {
        Ok(self.store.members_of(who.workspace_id).await?)
    }

    /// Workspace secrets can be stored: the server has a key to seal them.
    pub fn keeps_secrets(&self) -> bool {
        self.dispatcher.sealer().is_some()
    }
}
