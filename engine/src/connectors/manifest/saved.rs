//! Workspace manifests kept in step with the database on every process: a
//! manifest saved, changed or removed through one process serves (or stops
//! serving) on every other within a second. Each process remembers what it
//! registered from the table; a cheap fingerprint of the table, read every
//! [`FOLLOW_EVERY`], tells it when to compare again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use model::{ConnectorSource, ManifestFormat};

use crate::connectors::manifest::workspace::parse;
use crate::store::StoreError;
use crate::Engine;

/// How often a process on a shared database looks for manifests saved
/// elsewhere.
pub const FOLLOW_EVERY: Duration = Duration::from_millis(500);

/// What this process registered from `workspace_manifests`, by connector id,
/// and the table's fingerprint when it last compared.
#[derive(Debug, Default)]
pub struct SavedManifests {
    registered: Mutex<HashMap<String, Adopted>>,
    fingerprint: Mutex<Option<(i64, i64)>>,
}

/// One saved manifest as this process registered it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Adopted {
    workspace_id: i64,
    format: ManifestFormat,
    text: String,
}

impl SavedManifests {
    fn registered(&self) -> std::sync::MutexGuard<'_, HashMap<String, Adopted>> {
        self.registered.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This process saved (and registered) a manifest itself.
    pub(crate) fn saved_here(
        &self,
        id: &str,
        workspace_id: i64,
        format: ManifestFormat,
        text: &str,
    ) {
        self.registered().insert(
            id.to_owned(),
            Adopted {
                workspace_id,
                format,
                text: text.to_owned(),
            },
        );
    }

    /// This process removed a manifest itself.
    pub(crate) fn removed_here(&self, id: &str) {
        self.registered().remove(id);
    }
}

impl Engine {
    /// Brings the registry in step with the saved manifests of every
    /// workspace: registers the new and changed ones, unregisters the
    /// removed ones. One that no longer checks, or whose id a built-in or
    /// file holds, is logged and left out. Answers how many it registered.
    pub async fn adopt_saved_manifests(&self) -> Result<usize, StoreError> {
        let stored = self.store.all_manifests().await?;
        let mut registered = 0;
        let mut now_saved = HashMap::new();
        for manifest in stored {
            let id = manifest.saved.connector_id;
            let adopted = Adopted {
                workspace_id: manifest.workspace_id,
                format: manifest.saved.format,
                text: manifest.saved.text,
            };
            let source = ConnectorSource::Workspace {
                workspace_id: adopted.workspace_id,
            };
            let same = self.saved_manifests.registered().get(&id) == Some(&adopted)
                && self.registry.by_id(&id).is_some_and(|h| h.source == source);
            if !same && self.adopt(&id, &adopted, source) {
                registered += 1;
            }
            now_saved.insert(id, adopted);
        }
        let gone: Vec<String> = self
            .saved_manifests
            .registered()
            .keys()
            .filter(|id| !now_saved.contains_key(*id))
            .cloned()
            .collect();
        for id in gone {
            let workspace_owned = self
                .registry
                .by_id(&id)
                .is_some_and(|h| matches!(h.source, ConnectorSource::Workspace { .. }));
            if workspace_owned && self.registry.unregister(&id).is_ok() {
                tracing::info!(connector = %id, "A manifest removed elsewhere stops serving here.");
            }
        }
        now_saved.retain(|id, _| {
            self.registry
                .by_id(id)
                .is_some_and(|h| matches!(h.source, ConnectorSource::Workspace { .. }))
        });
        *self.saved_manifests.registered() = now_saved;
        Ok(registered)
    }

    /// Registers one saved manifest in place of what this process had under
    /// its id; whether it serves now.
    fn adopt(&self, id: &str, adopted: &Adopted, source: ConnectorSource) -> bool {
        if let Some(holder) = self.registry.by_id(id).filter(|h| h.source != source) {
            tracing::warn!(connector = %id, holder = %holder.source.describe(), "A saved manifest's id is taken; it is not registered.");
            return false;
        }
        let manifest = match parse(&adopted.text, adopted.format) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(connector = %id, error = %e, "A saved manifest no longer checks; it is not registered.");
                return false;
            }
        };
        let registration = manifest.registration();
        let connector = self.manifest_connector(manifest);
        match self
            .registry
            .register_from(registration, Arc::new(connector), source)
        {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(connector = %id, error = %e, "A saved manifest was refused.");
                false
            }
        }
    }

    /// Every [`FOLLOW_EVERY`] until the engine stops, compares again when
    /// the table's fingerprint changed (another process saved or removed
    /// a manifest). Only a shared database needs it.
    pub(crate) async fn follow_saved_manifests(&self) {
        let mut every = tokio::time::interval(FOLLOW_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => {}
                () = self.upkeep.cancelled() => return,
            }
            let now = match self.store.manifests_fingerprint().await {
                Ok(now) => now,
                Err(e) => {
                    tracing::warn!(error = %e, "Looking for manifests saved elsewhere failed; trying again.");
                    continue;
                }
            };
            let seen = *self
                .saved_manifests
                .fingerprint
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if seen == Some(now) {
                continue;
            }
            match self.adopt_saved_manifests().await {
                Ok(_) => {
                    *self
                        .saved_manifests
                        .fingerprint
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = Some(now);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "Adopting manifests saved elsewhere failed; trying again.");
                }
            }
        }
    }
}
