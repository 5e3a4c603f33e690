//! The per-workspace settings every fire, chip and menu reads, kept in
//! memory: the connectors a workspace switched off, the names of its
//! secrets, its own packs and bundles, its budgets, its members' own
//! connector orders. This process's own writes to them
//! replace them at once; another process's are seen within [`FRESH_FOR`].

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Store, StoreError};

/// How long settings read from the database are used before being read
/// again (what another process changed shows after at most this).
pub const FRESH_FOR: Duration = Duration::from_millis(750);

/// One workspace's settings.
#[derive(Debug, Default, PartialEq)]
pub struct WorkspaceSettings {
    /// Connectors switched off in the workspace, or that met a refusal, a
    /// rate limit or a suspension with its own key, with the status each
    /// shows there (see [`Store::workspace_connector_states`]).
    pub off: HashMap<String, model::ConnectorStatus>,
    /// The names of the secrets it set (never their values).
    pub secret_names: BTreeSet<String>,
    pub packs: Vec<model::PackConfig>,
    pub bundles: Vec<model::BundleConfig>,
    /// Its budgets with this month's spend.
    pub budgets: Vec<model::BudgetStatus>,
    /// Its members' own orders of packs' connectors.
    pub personal_chains: super::PersonalChains,
    /// What one record may cost a day, per unit.
    pub record_caps: Vec<model::RecordCapStatus>,
}

/// Settings read, by workspace, with a count of this process's changes so
/// a read that raced a change is not kept.
#[derive(Debug, Default)]
pub(super) struct SettingsCache {
    entries: Mutex<HashMap<i64, Entry>>,
}

#[derive(Debug, Default)]
struct Entry {
    changes: u64,
    read: Option<(Instant, Arc<WorkspaceSettings>)>,
}

impl SettingsCache {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Store {
    /// A workspace's settings, from memory when fresh.
    pub async fn workspace_settings(
        &self,
        workspace_id: i64,
    ) -> Result<Arc<WorkspaceSettings>, StoreError> {
        let changes = {
            let entries = self.settings.entries();
            match entries.get(&workspace_id) {
                Some(Entry {
                    read: Some((at, settings)),
                    ..
                }) if at.elapsed() < FRESH_FOR => return Ok(settings.clone()),
                Some(entry) => entry.changes,
                None => 0,
            }
        };
        let (packs, bundles) = self.workspace_catalog(workspace_id).await?;
        let settings = Arc::new(WorkspaceSettings {
            off: self.workspace_connector_states(workspace_id).await?,
            secret_names: self
                .secrets_of(workspace_id)
                .await?
                .into_iter()
                .map(|s| s.name)
                .collect(),
            packs,
            bundles,
            budgets: self.budgets(workspace_id).await?,
            personal_chains: self.personal_chains_in(workspace_id).await?,
            record_caps: self.record_caps(workspace_id).await?,
        });
        let mut entries = self.settings.entries();
        let entry = entries.entry(workspace_id).or_default();
        if entry.changes == changes {
            entry.read = Some((Instant::now(), settings.clone()));
        }
        Ok(settings)
    }

    /// This process changed a workspace's settings: the next read goes to
    /// the database.
    pub(super) fn settings_changed(&self, workspace_id: i64) {
        let mut entries = self.settings.entries();
        let entry = entries.entry(workspace_id).or_default();
        entry.changes += 1;
        entry.read = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_change_made_here_shows_at_once() {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        let (ws, _) = store.ensure_workspace("w").await.unwrap();
        assert!(store.workspace_settings(ws).await.unwrap().off.is_empty());
        store
            .set_workspace_connector(
                ws,
                "serpapi",
                Some(&model::ConnectorStatus::Disabled {
                    reason: "too dear".into(),
                }),
                "ana",
            )
            .await
            .unwrap();
        let settings = store.workspace_settings(ws).await.unwrap();
        assert_eq!(
            settings.off["serpapi"],
            model::ConnectorStatus::Disabled {
                reason: "too dear".into()
            }
        );
        // Unchanged, it is the same read.
        assert!(Arc::ptr_eq(
            &settings,
            &store.workspace_settings(ws).await.unwrap()
        ));
        store
            .set_workspace_connector(ws, "serpapi", None, "ana")
            .await
            .unwrap();
        assert!(store.workspace_settings(ws).await.unwrap().off.is_empty());
    }
}
