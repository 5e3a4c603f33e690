//! Manifest operations: the connectors a workspace's admins write in the
//! browser (tried before they are saved, saved, removed, listed); every
//! process registers the saved ones (`connectors::manifest::saved`).

use std::sync::Arc;
use std::time::Instant;

use model::{ConnectorInfo, ConnectorSource, ManifestTest, SavedManifest, TestReport};

use crate::connectors::manifest::workspace::{parse, probe, report, taken_by, SaveError};
use crate::connectors::manifest::{Format, Manifest, ManifestConnector, ManifestError};
use crate::connectors::seam::{FireError, FireOpts};
use crate::ops::OpError;
use crate::store::Owned;
use crate::tenancy::Principal;
use crate::Engine;

impl Engine {
    /// A workspace's manifest as a connector. Its `{{secret.NAME}}` reads
    /// the workspace's own secrets only, never the server's environment:
    /// otherwise anyone allowed to write a manifest could send the
    /// operator's keys (or `DATABASE_URL`) to a host of their choosing.
    pub(crate) fn manifest_connector(&self, manifest: Manifest) -> ManifestConnector {
        ManifestConnector::new(
            Arc::new(manifest),
            self.outbound.clone(),
            Arc::new(|_| None),
        )
    }

    /// Fires a draft once, as the dispatcher would, without saving it or
    /// recording anything: what it found and how the answer was classified.
    pub async fn test_manifest(
        &self,
        who: &Principal,
        test: &ManifestTest,
    ) -> Result<TestReport, OpError> {
        crate::ops::require_admin(who)?;
        let started = Instant::now();
        let (manifest, mut problems) = match parse(&test.text, test.format) {
            Ok(m) => (Some(m), Vec::new()),
            Err(ManifestError(problems)) => (None, problems),
        };
        if test.query.trim().is_empty() {
            problems.push(model::Problem {
                field: "query".to_owned(),
                message: "give a sample query to send".to_owned(),
            });
        }
        let Some(manifest) = manifest.filter(|_| problems.is_empty()) else {
            return Ok(TestReport {
                problems,
                outcome: None,
                error: None,
                results: Vec::new(),
                elapsed_ms: 0,
            });
        };
        let mut opts = FireOpts {
            max_results: 10,
            ..FireOpts::default()
        };
        if let Some(record_id) = test.record_id {
            self.authorize(who, Owned::Record(record_id)).await?;
            let record = self.store.record(record_id).await?;
            opts.record_name = record.name.clone();
            opts.record_fields = record.field_map();
        }
        let all = self.dispatcher.workspace_secrets(who.workspace_id).await?;
        opts.secrets = all.only(&manifest.spec.profile.requires_env);
        let intent = manifest
            .registration()
            .profile
            .capabilities
            .first()
            .cloned();
        let connector = ManifestConnector::on_trial(
            Arc::new(manifest),
            self.outbound.clone(),
            Arc::new(|_| None),
        );
        let fired = match intent {
            Some(intent) => probe(&connector, &intent, test.query.trim(), &opts).await,
            None => Err(FireError::Malformed {
                reason: "it serves no capability".to_owned(),
            }),
        };
        Ok(report(fired, started))
    }

    /// Saves a manifest for the caller's workspace and registers it at once
    /// (admins). Saving a manifest with the same id again replaces it.
    pub async fn save_manifest(
        &self,
        who: &Principal,
        text: &str,
        format: Format,
    ) -> Result<ConnectorInfo, OpError> {
        crate::ops::require_admin(who)?;
        let manifest = parse(text, format).map_err(SaveError::Invalid)?;
        let id = manifest.spec.profile.id.clone();
        let mine = ConnectorSource::Workspace {
            workspace_id: who.workspace_id,
        };
        if let Some(holder) = self.registry.by_id(&id).filter(|h| h.source != mine) {
            return Err(SaveError::Taken {
                by: taken_by(&holder.source, who.workspace_id),
                id,
            }
            .into());
        }
        if !self
            .store
            .save_manifest(who.workspace_id, &id, format, text, &who.email)
            .await?
        {
            return Err(SaveError::Taken {
                id,
                by: "another workspace's connector".to_owned(),
            }
            .into());
        }
        let registration = manifest.registration();
        let connector = self.manifest_connector(manifest);
        self.registry
            .register_from(registration, Arc::new(connector), mine)?;
        self.saved_manifests
            .saved_here(&id, who.workspace_id, format, text);
        tracing::info!(connector = %id, workspace = who.workspace_id, by = %who.email, "Manifest connector saved.");
        self.announce_in(who.workspace_id, &id).await
    }

    /// Removes a manifest connector of the caller's workspace (admins).
    /// Fires already running through it finish; its history stays.
    pub async fn remove_manifest(&self, who: &Principal, id: &str) -> Result<(), OpError> {
        crate::ops::require_admin(who)?;
        if !self.store.delete_manifest(who.workspace_id, id).await? {
            return Err(SaveError::NotFound(id.to_owned()).into());
        }
        let mine = ConnectorSource::Workspace {
            workspace_id: who.workspace_id,
        };
        if self.registry.by_id(id).is_some_and(|h| h.source == mine) {
            self.registry.unregister(id)?;
        }
        self.saved_manifests.removed_here(id);
        tracing::info!(connector = %id, workspace = who.workspace_id, by = %who.email, "Manifest connector removed.");
        Ok(())
    }

    /// The caller's workspace's saved manifests, each with why it is not
    /// serving when it is not.
    pub async fn manifests(&self, who: &Principal) -> Result<Vec<SavedManifest>, OpError> {
        let mut saved = self.store.manifests_of(who.workspace_id).await?;
        let mine = ConnectorSource::Workspace {
            workspace_id: who.workspace_id,
        };
        for m in &mut saved {
            m.error = match self.registry.by_id(&m.connector_id) {
                Some(h) if h.source == mine => None,
                Some(h) => Some(format!(
                    "not serving: id {:?} is taken by {}",
                    m.connector_id,
                    taken_by(&h.source, who.workspace_id)
                )),
                None => Some(match parse(&m.text, m.format) {
                    Err(e) => format!("not serving: {e}"),
                    Ok(_) => "not serving; save it again".to_owned(),
                }),
            };
        }
        Ok(saved)
    }
}
