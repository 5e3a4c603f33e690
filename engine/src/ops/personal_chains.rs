//! A person's own order of a pack's connectors, in the workspace they are
//! signed in to: read, set and cleared by that person only. It comes after
//! a fire's pick and a record's "always start with" and before the
//! bundle's and the pack's chain, for their own fires and chips; other
//! people, fan-outs and scheduled refreshes follow the workspace's chains.

use model::PersonalChain;

use crate::tenancy::Principal;
use crate::Engine;

use super::OpError;

/// The most connectors one order may name.
pub const MAX_PERSONAL_CHAIN: usize = 20;

impl Engine {
    /// The caller's own orders in their workspace, by pack id.
    pub async fn my_chains(&self, who: &Principal) -> Result<Vec<PersonalChain>, OpError> {
        let settings = self.store.workspace_settings(who.workspace_id).await?;
        let mut chains: Vec<PersonalChain> = settings
            .personal_chains
            .get(&who.user_id)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|(pack_id, connectors)| PersonalChain {
                pack_id,
                connectors,
            })
            .collect();
        chains.sort_by(|a, b| a.pack_id.cmp(&b.pack_id));
        Ok(chains)
    }

    /// Sets the caller's own order for a pack; an empty one clears it (the
    /// workspace's chain serves again). Each connector must be one the
    /// workspace sees that serves the pack's intent, named once; one that
    /// is switched off or lacks a key is kept, and passed over while it
    /// cannot fire.
    pub async fn set_my_chain(
        &self,
        who: &Principal,
        pack_id: &str,
        connectors: &[String],
    ) -> Result<PersonalChain, OpError> {
        let pack = self.known_pack(who, pack_id).await?;
        if connectors.len() > MAX_PERSONAL_CHAIN {
            return Err(OpError::Invalid(format!(
                "connectors: at most {MAX_PERSONAL_CHAIN}, not {}",
                connectors.len()
            )));
        }
        let mut chain: Vec<String> = Vec::with_capacity(connectors.len());
        for (i, id) in connectors.iter().enumerate() {
            let id = id.trim();
            let at = format!("connectors[{i}]");
            self.check_serves(who, &pack, id, &at)?;
            if chain.iter().any(|c| c == id) {
                return Err(OpError::Invalid(format!("{at}: {id} is named twice")));
            }
            chain.push(id.to_owned());
        }
        self.store
            .set_personal_chain(
                who.user_id,
                who.workspace_id,
                pack_id,
                (!chain.is_empty()).then_some(chain.as_slice()),
            )
            .await?;
        Ok(PersonalChain {
            pack_id: pack_id.to_owned(),
            connectors: chain,
        })
    }
}
