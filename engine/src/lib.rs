//! Switchyard's server-only domain: the connector registry, packs and bundles,
//! chain resolution, the dispatcher, jobs, the event bus and the store.
//! Nothing here is linked into the browser bundle.

pub mod accounts;
pub mod chain;
pub mod chip;
pub mod connector;
pub mod connectors;
pub mod demo;
pub mod dispatch;
pub mod events;
pub mod import;
pub mod jobs;
pub mod lens;
pub mod manifest;
pub mod ops;
pub mod packs;
pub mod presence;
pub mod registry;
#[cfg(any(test, feature = "test-support"))]
pub mod scripted;
pub mod secrets;
pub mod store;
pub mod time;
pub mod urlnorm;
pub mod views;
pub mod workspace_catalog;
pub mod workspace_connectors;

use std::sync::{Arc, RwLock};

use dispatch::{DispatchConfig, Dispatcher};
use events::EventBus;
use jobs::JobRunner;
use packs::Catalog;
use registry::Registry;
use store::{Store, StoreError};

/// Start-up settings of the engine.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub dispatch: DispatchConfig,
    /// Fires in flight per fan-out job.
    pub job_concurrency: usize,
    /// Seals workspace secrets; `None` turns them off.
    pub secrets: Option<secrets::Sealer>,
    /// Internal destinations manifest connectors may reach.
    pub fetch_allow: connectors::guard::AllowList,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            dispatch: DispatchConfig::default(),
            job_concurrency: 4,
            secrets: None,
            fetch_allow: connectors::guard::AllowList::default(),
        }
    }
}

/// The handle to the whole domain that the server shares with every request:
/// cheap to clone, everything inside is shared.
#[derive(Clone, Debug)]
pub struct Engine {
    pub store: Store,
    pub registry: Registry,
    pub events: EventBus,
    pub catalog: Arc<RwLock<Catalog>>,
    pub dispatcher: Dispatcher,
    pub jobs: JobRunner,
    pub presence: presence::Presence,
    /// Internal destinations manifest connectors may reach.
    pub fetch_allow: connectors::guard::AllowList,
    /// The manifest drop folder, once the server has set one up.
    pub drop_folder: Arc<std::sync::OnceLock<manifest::folder::DropFolder>>,
}

impl Engine {
    /// Builds the engine over a connected store, with an empty registry.
    pub fn new(
        store: Store,
        catalog: Catalog,
        registry_env: Option<registry::EnvLookup>,
        config: EngineConfig,
    ) -> Self {
        let events = EventBus::new();
        let registry = match registry_env {
            Some(env) => Registry::with_env(store.clone(), events.clone(), env),
            None => Registry::new(store.clone(), events.clone()),
        };
        let catalog = Arc::new(RwLock::new(catalog));
        let dispatcher = Dispatcher::new(
            store.clone(),
            registry.clone(),
            catalog.clone(),
            events.clone(),
            config.dispatch,
        )
        .with_sealer(config.secrets);
        let jobs = JobRunner::new(
            store.clone(),
            dispatcher.clone(),
            events.clone(),
            config.job_concurrency,
        );
        Self {
            presence: presence::Presence::new(events.clone()),
            drop_folder: Arc::default(),
            fetch_allow: config.fetch_allow,
            store,
            registry,
            events,
            catalog,
            dispatcher,
            jobs,
        }
    }

    /// Recovers from a previous process's end: closes attempts it left in
    /// flight and resumes its jobs. Call once, after registering connectors.
    pub async fn recover(&self) -> Result<(), StoreError> {
        let closed = self.store.close_interrupted().await?;
        if closed > 0 {
            tracing::warn!(
                attempts = closed,
                "Closed attempts a previous run left in flight."
            );
        }
        self.jobs.resume_all().await?;
        Ok(())
    }

    /// A read of the pack and bundle catalogue.
    pub fn catalog(&self) -> std::sync::RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(|e| e.into_inner())
    }
}
