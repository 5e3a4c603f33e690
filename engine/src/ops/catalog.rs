//! Catalogue operations: the packs and bundles of the caller's workspace
//! (the shipped catalogue with its admins' own), and its admins' edits.

use model::{BundleConfig, EventKind, PackConfig, WorkspaceCatalog};

use crate::ops::OpError;
use crate::packs::workspace::CatalogEditError;
use crate::packs::Catalog;
use crate::store::{CatalogKind, StoreError};
use crate::tenancy::Principal;
use crate::Engine;

impl Engine {
    /// The catalogue a workspace sees (`None`: the shipped one).
    /// The packs and bundles the caller's workspace has: the shipped
    /// catalogue with its own laid over it.
    pub async fn catalog_of(&self, who: &Principal) -> Result<Catalog, OpError> {
        Ok(self.catalog_in(Some(who.workspace_id)).await?)
    }

    pub(crate) async fn catalog_in(
        &self,
        workspace_id: Option<i64>,
    ) -> Result<Catalog, StoreError> {
        self.dispatcher.catalog_in(workspace_id).await
    }

    /// The caller's workspace's catalogue, telling its own from the shipped.
    pub async fn workspace_catalog(&self, who: &Principal) -> Result<WorkspaceCatalog, OpError> {
        let catalog = self.catalog_in(Some(who.workspace_id)).await?;
        let (packs, bundles) = self.store.workspace_catalog(who.workspace_id).await?;
        let (shipped_packs, shipped_bundles) = {
            let base = self.catalog();
            (
                base.packs().iter().map(|p| p.pack_id.clone()).collect(),
                base.bundles().iter().map(|b| b.bundle_id.clone()).collect(),
            )
        };
        Ok(WorkspaceCatalog {
            packs: catalog.packs().to_vec(),
            bundles: catalog.bundles().to_vec(),
            own_packs: packs.into_iter().map(|p| p.pack_id).collect(),
            own_bundles: bundles.into_iter().map(|b| b.bundle_id).collect(),
            shipped_packs,
            shipped_bundles,
        })
    }

    /// Every chain names connectors the workspace sees, each once.
    fn check_chain(
        &self,
        who: &Principal,
        at: &str,
        chain: &[String],
    ) -> Result<(), CatalogEditError> {
        for (i, id) in chain.iter().enumerate() {
            if chain[..i].contains(id) {
                return Err(CatalogEditError::Invalid(format!(
                    "{at}[{i}]: {id:?} is already in the chain"
                )));
            }
            if self.registry.by_id_in(id, Some(who.workspace_id)).is_none() {
                return Err(CatalogEditError::Invalid(format!(
                    "{at}[{i}]: no connector {id:?} in this workspace"
                )));
            }
        }
        Ok(())
    }

    /// A pack's label must not be one a member already gave another pack
    /// for themselves (Settings): they would see two chips alike.
    async fn check_personal_labels(
        &self,
        who: &Principal,
        pack: &PackConfig,
    ) -> Result<(), CatalogEditError> {
        let label = pack.short_label.trim().to_lowercase();
        for member in self.store.members_of(who.workspace_id).await? {
            let labels = self.store.pack_labels(member.user_id).await?;
            if let Some((other, _)) = labels
                .iter()
                .find(|(id, l)| **id != pack.pack_id && l.to_lowercase() == label)
            {
                return Err(CatalogEditError::Invalid(format!(
                    "pack {:?}: short_label {:?} is what {} calls pack {other:?} (their own label); pick another",
                    pack.pack_id, pack.short_label, member.email
                )));
            }
        }
        Ok(())
    }

    /// Checks the workspace's own packs and bundles laid over the shipped
    /// catalogue, and returns the result.
    fn overlay(
        &self,
        packs: Vec<PackConfig>,
        bundles: Vec<BundleConfig>,
    ) -> Result<Catalog, CatalogEditError> {
        self.catalog()
            .with_overlay(packs, bundles)
            .map_err(|e| CatalogEditError::Invalid(e.to_string()))
    }

    fn catalog_changed(&self, workspace_id: i64) {
        self.events
            .publish_in(Some(workspace_id), EventKind::CatalogChanged);
    }

    /// Creates or changes a pack for the caller's workspace (admins). A
    /// shipped pack's id makes this workspace's version of it.
    pub async fn save_pack(
        &self,
        who: &Principal,
        pack: PackConfig,
    ) -> Result<PackConfig, OpError> {
        crate::ops::require_admin(who)?;
        self.check_chain(who, "preferred_connectors", &pack.preferred_connectors)?;
        let (mut packs, bundles) = self.store.workspace_catalog(who.workspace_id).await?;
        match packs.iter_mut().find(|p| p.pack_id == pack.pack_id) {
            Some(slot) => *slot = pack.clone(),
            None => packs.push(pack.clone()),
        }
        let merged = self.overlay(packs, bundles)?;
        self.check_personal_labels(who, &pack).await?;
        let json = serde_json::to_string(&pack)
            .map_err(|e| CatalogEditError::Invalid(format!("pack: {e}")))?;
        self.store
            .put_catalog_item(
                who.workspace_id,
                CatalogKind::Pack,
                &pack.pack_id,
                &json,
                &who.email,
            )
            .await?;
        tracing::info!(workspace = who.workspace_id, pack = %pack.pack_id, by = %who.email, "Pack saved.");
        self.catalog_changed(who.workspace_id);
        Ok(merged
            .pack(&pack.pack_id)
            .cloned()
            .ok_or_else(|| CatalogEditError::NotFound(format!("pack {:?}", pack.pack_id)))?)
    }

    /// Removes the caller's workspace's own pack, or its version of a
    /// shipped pack (which comes back as shipped) (admins).
    pub async fn remove_pack(&self, who: &Principal, id: &str) -> Result<(), OpError> {
        crate::ops::require_admin(who)?;
        let (mut packs, bundles) = self.store.workspace_catalog(who.workspace_id).await?;
        let before = packs.len();
        packs.retain(|p| p.pack_id != id);
        if packs.len() == before {
            return Err(CatalogEditError::NotFound(format!(
                "this workspace has no pack {id:?} of its own (shipped packs can be changed, not removed)"
            )).into());
        }
        self.overlay(packs, bundles).map_err(|e| {
            CatalogEditError::Invalid(format!("{e}; take the pack out of its bundles first"))
        })?;
        self.store
            .delete_catalog_item(who.workspace_id, CatalogKind::Pack, id)
            .await?;
        self.catalog_changed(who.workspace_id);
        Ok(())
    }

    /// Creates or changes a bundle for the caller's workspace (admins).
    pub async fn save_bundle(
        &self,
        who: &Principal,
        bundle: BundleConfig,
    ) -> Result<BundleConfig, OpError> {
        crate::ops::require_admin(who)?;
        for (i, member) in bundle.members.iter().enumerate() {
            if let Some(chain) = &member.connector_chain_override {
                self.check_chain(
                    who,
                    &format!("members[{i}].connector_chain_override"),
                    chain,
                )?;
            }
        }
        let (packs, mut bundles) = self.store.workspace_catalog(who.workspace_id).await?;
        match bundles.iter_mut().find(|b| b.bundle_id == bundle.bundle_id) {
            Some(slot) => *slot = bundle.clone(),
            None => bundles.push(bundle.clone()),
        }
        self.overlay(packs, bundles)?;
        let json = serde_json::to_string(&bundle)
            .map_err(|e| CatalogEditError::Invalid(format!("bundle: {e}")))?;
        self.store
            .put_catalog_item(
                who.workspace_id,
                CatalogKind::Bundle,
                &bundle.bundle_id,
                &json,
                &who.email,
            )
            .await?;
        tracing::info!(workspace = who.workspace_id, bundle = %bundle.bundle_id, by = %who.email, "Bundle saved.");
        self.catalog_changed(who.workspace_id);
        Ok(bundle)
    }

    /// Removes the caller's workspace's own bundle, or its version of a
    /// shipped one (admins). A bundle of its own that a record set uses
    /// stays.
    pub async fn remove_bundle(&self, who: &Principal, id: &str) -> Result<(), OpError> {
        crate::ops::require_admin(who)?;
        let (packs, mut bundles) = self.store.workspace_catalog(who.workspace_id).await?;
        let before = bundles.len();
        bundles.retain(|b| b.bundle_id != id);
        if bundles.len() == before {
            return Err(CatalogEditError::NotFound(format!(
                "this workspace has no bundle {id:?} of its own (shipped bundles can be changed, not removed)"
            )).into());
        }
        if self.catalog().bundle(id).is_none() {
            let sets = self.store.list_record_sets(who.workspace_id).await?;
            if let Some(set) = sets.iter().find(|s| s.bundle_id == id) {
                return Err(CatalogEditError::Invalid(format!(
                    "bundle {id:?}: the record set {:?} uses it; delete the set or keep the bundle",
                    set.name
                ))
                .into());
            }
        }
        self.overlay(packs, bundles)?;
        self.store
            .delete_catalog_item(who.workspace_id, CatalogKind::Bundle, id)
            .await?;
        self.catalog_changed(who.workspace_id);
        Ok(())
    }
}
