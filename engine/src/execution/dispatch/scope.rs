//! One workspace's view of the registry and catalogue, and the chain a
//! pack resolves to for a record in it.

use std::collections::HashMap;

use model::{RecordSetSummary, Skipped};

use super::{DispatchError, Dispatcher};
use crate::connectors::lens::Lens;
use crate::connectors::registry::{ConnectorHandle, Registry};
use crate::connectors::seam::Secrets;
use crate::packs::chain::{self, Candidate, Chain, ChainRequest};
use crate::packs::{BundleMember, Catalog, PackConfig};
use crate::store::{StoreError, StoredRecord, WorkspaceSettings};
use crate::tenancy::secrets;

/// The chain inputs of one record that live in the database.
#[derive(Clone, Debug, Default)]
pub struct RecordChainInputs {
    /// "Start with this connector" a person set for the record and pack.
    pub record_override: Option<String>,
    /// Connectors that already found results for the record and intent.
    pub already_found: Vec<String>,
}

impl RecordChainInputs {
    /// A pack's inputs from what [`Store::record_facts`] read of a record.
    pub fn of(
        (overrides, found): &(HashMap<String, String>, Vec<(String, String)>),
        pack: &PackConfig,
    ) -> Self {
        Self {
            record_override: overrides.get(&pack.pack_id).cloned(),
            already_found: found
                .iter()
                .filter(|(intent, _)| intent == pack.intent.name())
                .map(|(_, connector)| connector.clone())
                .collect(),
        }
    }
}

impl Dispatcher {
    /// The connector `id` as `workspace_id` may see it.
    pub fn handle(&self, id: &str, workspace_id: Option<i64>) -> Option<ConnectorHandle> {
        self.registry.by_id_in(id, workspace_id)
    }

    /// A workspace's secrets, opened (see [`secrets::open_all`]).
    pub async fn workspace_secrets(&self, workspace_id: i64) -> Result<Secrets, StoreError> {
        secrets::open_all(&self.store, self.sealer.as_ref(), workspace_id).await
    }

    /// The catalogue a workspace sees: the shipped one with the workspace's
    /// own packs and bundles laid over it (`None`: the shipped one).
    pub async fn catalog_in(&self, workspace_id: Option<i64>) -> Result<Catalog, StoreError> {
        Ok(self.scope(workspace_id).await?.catalog)
    }

    /// What a workspace's fires, chips and menus read, once per request.
    pub async fn scope(&self, workspace_id: Option<i64>) -> Result<Scope, StoreError> {
        self.scope_for(workspace_id, None).await
    }

    /// [`Dispatcher::scope`] as one person sees it: with their own orders
    /// of the packs' connectors (`user_id`; `None`: work nobody in
    /// particular asked for, which follows the workspace's chains).
    pub async fn scope_for(
        &self,
        workspace_id: Option<i64>,
        user_id: Option<i64>,
    ) -> Result<Scope, StoreError> {
        let base = self
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let Some(ws) = workspace_id else {
            return Ok(Scope {
                lens: Lens::default(),
                catalog: base,
                personal: HashMap::new(),
            });
        };
        let settings = self.store.workspace_settings(ws).await?;
        let personal = user_id
            .and_then(|user| settings.personal_chains.get(&user).cloned())
            .unwrap_or_default();
        Ok(Scope {
            lens: Lens::from_settings(ws, &settings, self.store.clock()),
            catalog: overlaid(base, ws, &settings),
            personal,
        })
    }

    /// Resolves the chain a fire of `pack_id` on `record` (of `set`, seen
    /// through `scope`) would walk now.
    pub async fn chain_for(
        &self,
        scope: &Scope,
        record: &StoredRecord,
        set: &RecordSetSummary,
        pack_id: &str,
        explicit: Option<&str>,
    ) -> Result<(PackConfig, Chain), DispatchError> {
        let (pack, member) = pack_in(&scope.catalog, &set.bundle_id, pack_id)
            .ok_or_else(|| DispatchError::UnknownPack(pack_id.to_owned()))?;
        let inputs = self.chain_inputs(record.id, &pack).await?;
        let chain = self.resolve(scope, &pack, member.as_ref(), explicit, &inputs, None);
        Ok((pack, chain))
    }

    pub(super) async fn chain_inputs(
        &self,
        record_id: i64,
        pack: &PackConfig,
    ) -> Result<RecordChainInputs, StoreError> {
        let facts = self.store.record_facts(record_id).await?;
        Ok(RecordChainInputs::of(&facts, pack))
    }

    pub(super) fn resolve(
        &self,
        scope: &Scope,
        pack: &PackConfig,
        member: Option<&BundleMember>,
        explicit: Option<&str>,
        inputs: &RecordChainInputs,
        waits_out_until: Option<i64>,
    ) -> Chain {
        chain::resolve(
            &ChainRequest {
                intent: Some(&pack.intent),
                explicit,
                record_override: inputs.record_override.as_deref(),
                person: scope.personal_chain(&pack.pack_id),
                bundle_override: member.and_then(|m| m.connector_chain_override.as_deref()),
                pack_preferred: &pack.preferred_connectors,
                already_found: &inputs.already_found,
                waits_out_until,
            },
            &scope.candidates(&self.registry),
        )
    }
}

/// What one workspace's fires, chips and menus read once per request: how
/// it sees the registry and its catalogue. Read it with
/// [`Dispatcher::scope`] and hand it down instead of reading either again.
#[derive(Clone, Debug)]
pub struct Scope {
    pub lens: Lens,
    pub catalog: Catalog,
    /// The person's own orders by pack (empty when nobody in particular
    /// asked, see [`Dispatcher::scope_for`]).
    pub personal: HashMap<String, Vec<String>>,
}

impl Scope {
    /// The person's own order for a pack, when they set one.
    pub fn personal_chain(&self, pack_id: &str) -> Option<&[String]> {
        self.personal.get(pack_id).map(Vec::as_slice)
    }

    /// The connectors as chain resolution sees them here.
    pub fn candidates(&self, registry: &Registry) -> Vec<Candidate> {
        candidates_of(&self.lens.handles(registry), &self.lens)
    }

    /// The packs of a bundle, in roster order: the chips of its cards.
    pub fn packs_of(&self, bundle_id: &str) -> Vec<PackConfig> {
        self.catalog
            .bundle_packs(bundle_id)
            .into_iter()
            .map(|(p, _)| p.clone())
            .collect()
    }
}

/// The shipped catalogue with a workspace's own packs and bundles laid over
/// it (the shipped one if they no longer fit it).
pub(super) fn overlaid(base: Catalog, ws: i64, settings: &WorkspaceSettings) -> Catalog {
    base.clone()
        .with_overlay(settings.packs.clone(), settings.bundles.clone())
        .unwrap_or_else(|e| {
            // Valid when saved; a changed shipped catalogue can clash with it.
            tracing::warn!(workspace = ws, error = %e, "A workspace's own packs no longer fit the catalogue; showing the shipped one.");
            base
        })
}

/// A pack and its membership in a record set's bundle.
pub(super) fn pack_in(
    catalog: &Catalog,
    bundle_id: &str,
    pack_id: &str,
) -> Option<(PackConfig, Option<BundleMember>)> {
    let pack = catalog.pack(pack_id)?.clone();
    let member = catalog
        .bundle(bundle_id)
        .and_then(|b| b.members.iter().find(|m| m.pack == pack_id).cloned());
    Some((pack, member))
}

/// The connectors as chain resolution sees them through a workspace's lens.
pub(super) fn candidates_of(handles: &[ConnectorHandle], lens: &Lens) -> Vec<Candidate> {
    handles
        .iter()
        .filter(|h| lens.sees(h))
        .map(|h| Candidate {
            id: h.registration.profile.id.clone(),
            serves: h.registration.profile.capabilities.clone(),
            cost_tier: h.registration.profile.cost_tier,
            status: lens.status(h),
        })
        .collect()
}

pub(super) fn skip(connector_id: &str, reason: &str) -> Skipped {
    Skipped {
        connector_id: connector_id.to_owned(),
        reason: reason.to_owned(),
        capped: false,
        spend_more: None,
    }
}

/// The variables a pack's chain waits for, when nothing else stops it: every
/// connector it would try is registered but needs environment variables.
pub(super) fn pack_needs_env(pack: &PackConfig, candidates: &[Candidate]) -> Option<Vec<String>> {
    let chain = chain::resolve(
        &ChainRequest {
            intent: Some(&pack.intent),
            pack_preferred: &pack.preferred_connectors,
            ..Default::default()
        },
        candidates,
    );
    if !chain.to_try.is_empty() {
        return None;
    }
    let mut vars: Vec<String> = Vec::new();
    for s in &chain.skipped {
        if let Some(c) = candidates.iter().find(|c| c.id == s.connector_id) {
            if let model::ConnectorStatus::NeedsEnv { vars: v } = &c.status {
                for var in v {
                    if !vars.contains(var) {
                        vars.push(var.clone());
                    }
                }
            }
        }
    }
    (!vars.is_empty()).then_some(vars)
}
