//! This process's life: what it sets up before it serves (the built-in
//! connectors, the manifest drop folder, the demo data, the health other
//! processes stored, hearing their events) and the doors that follow
//! everything live (the event stream, who is viewing). The composition
//! root (`server::startup`) calls these; nothing else needs the engine's
//! parts.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use model::Event;
use tokio::sync::broadcast;

use crate::connectors::http::Http;
use crate::connectors::manifest::folder::{DropFolder, Watching};
use crate::live::presence::Viewing;
use crate::store::StoreError;
use crate::tenancy::Principal;
use crate::Engine;

impl Engine {
    /// Registers the coded adapters and the shipped manifests (and the
    /// demo connector, answering within `demo`, in demo mode), all
    /// reaching the network through this engine's outbound guard.
    pub fn register_builtin(&self, demo: Option<Duration>) -> anyhow::Result<()> {
        let http = Http::new()?.with_outbound(self.outbound.clone());
        crate::connectors::builtin::register_builtin(&self.registry, &http, demo)?;
        Ok(())
    }

    /// Registers every manifest in the drop folder `dir` and keeps the
    /// folder for the inventory; then watches it. Keep the returned guard
    /// for as long as the folder should be watched.
    pub fn open_drop_folder(&self, dir: &Path) -> notify::Result<Watching> {
        let folder = DropFolder::new(
            dir,
            self.registry.clone(),
            self.outbound.clone(),
            Arc::new(|name| std::env::var(name).ok()),
        );
        folder.load_all();
        let watching = folder.watch();
        let _ = self.drop_folder.set(folder);
        watching
    }

    /// The manifest drop folder, once one is open.
    pub fn drop_folder(&self) -> Option<&DropFolder> {
        self.drop_folder.get()
    }

    /// Loads the demo record set into the `demo` workspace, once; its id
    /// when it was loaded now.
    pub async fn load_demo(&self) -> Result<Option<i64>, StoreError> {
        let (workspace_id, _) = self.store.ensure_workspace("demo").await?;
        crate::demo::load_demo_record_set(&self.store, workspace_id).await
    }

    /// Adopts the connectors' health as stored (switches, rate limits,
    /// refusals and suspensions from before this start, or from the other
    /// processes).
    pub async fn adopt_stored_health(&self) -> Result<(), StoreError> {
        self.registry.load_health().await
    }

    /// Returns once this process hears the other processes' events.
    pub async fn listening(&self) {
        self.events.listening().await;
    }

    /// Every event published from now on, in this process or another. A
    /// door filters them by what its caller may see.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.events.subscribe()
    }

    /// The events after `last_id`, if they are still kept (a stream that
    /// reconnects catches up with them).
    pub async fn events_since(&self, last_id: u64) -> Option<Vec<Arc<Event>>> {
        self.events.since(last_id).await
    }

    /// The id the next event will have.
    pub fn next_event_id(&self) -> u64 {
        self.events.next_id()
    }

    /// What reads the next event id, for a stream to keep.
    pub fn event_ids(&self) -> crate::live::events::EventIds {
        crate::live::events::EventIds::new(&self.events)
    }

    /// Marks the caller as viewing a record set until the guard drops.
    pub async fn join_viewers(&self, record_set_id: i64, who: &Principal) -> Viewing {
        self.presence.join(record_set_id, &who.email).await
    }
}
