//! Switchyard's server-only domain: the connector registry, packs and bundles,
//! chain resolution, the dispatcher, jobs, the event bus and the store.
//! Nothing here is linked into the browser bundle.

pub mod connectors;
pub mod demo;
pub mod execution;
#[cfg(test)]
mod fuzz;
pub mod import;
pub mod live;
pub mod ops;
pub mod packs;
pub mod process;
pub mod read_models;
pub mod store;
pub mod tenancy;
pub mod time;
pub mod urlnorm;

use std::sync::{Arc, RwLock};

use connectors::registry::Registry;
use execution::dispatch::{DispatchConfig, Dispatcher};
use execution::{flow, gone_pages, jobs::JobRunner, lease};
use live::{events::EventBus, presence};
use packs::Catalog;
use store::Store;
use tenancy::secrets;

/// Start-up settings of the engine.
#[derive(Clone, Debug, Default)]
pub struct EngineConfig {
    pub dispatch: DispatchConfig,
    /// How many fires connectors and the process may have in flight.
    pub flow: flow::FlowConfig,
    /// How long running work's leases last and how often they are renewed.
    pub leases: lease::LeaseConfig,
    /// Seals workspace secrets; `None` turns them off.
    pub secrets: Option<secrets::Sealer>,
    /// Internal destinations manifest connectors may reach.
    pub fetch_allow: connectors::guard::AllowList,
    /// How long capability calls may take and keep their results.
    pub calls: ops::CallConfig,
    /// Whether pages a connector stops returning are asked for themselves.
    pub page_rechecks: gone_pages::PageRechecks,
    /// How many sign-in attempts a minute the deployment allows.
    pub sign_in: tenancy::sign_in_limits::SignInQuota,
}

/// The handle to the whole domain that the server shares with every request:
/// cheap to clone, everything inside is shared.
#[derive(Clone, Debug)]
pub struct Engine {
    pub(crate) store: Store,
    pub(crate) registry: Registry,
    pub(crate) events: EventBus,
    pub(crate) catalog: Arc<RwLock<Catalog>>,
    pub(crate) dispatcher: Dispatcher,
    pub(crate) jobs: JobRunner,
    pub(crate) presence: presence::Presence,
    /// The one client for addresses someone else chose (workspace
    /// manifests, the crawler, a workspace's SearXNG), with the internal
    /// destinations they may reach.
    pub(crate) outbound: connectors::guard::Outbound,
    /// What this process registered from the saved workspace manifests.
    pub(crate) saved_manifests: Arc<connectors::manifest::saved::SavedManifests>,
    /// The manifest drop folder, once the server has set one up.
    pub(crate) drop_folder: Arc<std::sync::OnceLock<connectors::manifest::folder::DropFolder>>,
    /// This process as the owner of running work.
    pub(crate) owner: lease::Owner,
    pub(crate) leases: lease::LeaseConfig,
    /// Capability calls' settings, and those walking in this process.
    calls: ops::CallConfig,
    calls_in_flight: ops::CallsInFlight,
    sign_in_quota: tenancy::sign_in_limits::SignInQuota,
    /// Whether the database answers, for open streams.
    database: live::database::DatabaseWatch,
    /// Calls walking in this process, by workspace.
    calls_by_workspace: ops::Slots,
    /// Calls walking in this process, by person.
    calls_by_person: ops::Slots,
    /// Imports running in this process, by workspace.
    imports: ops::Slots,
    /// Fan-outs being started in this process, by workspace: one at a time.
    fanout_starts: ops::Turnstiles,
    /// Sets' facets, read once for everyone asking at the same time.
    facets: ops::Coalesced<i64, Arc<model::SetFacets>>,
    /// Stops the heartbeat (see [`Engine::recover`]).
    upkeep: tokio_util::sync::CancellationToken,
}

impl Engine {
    /// Builds the engine over a connected store, with an empty registry.
    pub fn new(
        store: Store,
        catalog: Catalog,
        registry_env: Option<connectors::registry::EnvLookup>,
        config: EngineConfig,
    ) -> Self {
        let events = EventBus::for_store(&store);
        let registry = match registry_env {
            Some(env) => Registry::with_env(store.clone(), events.clone(), env),
            None => Registry::new(store.clone(), events.clone()),
        };
        let catalog = Arc::new(RwLock::new(catalog));
        let owner = lease::Owner::new();
        let outbound = connectors::guard::Outbound::new(config.fetch_allow);
        let dispatcher = Dispatcher::new(
            store.clone(),
            registry.clone(),
            catalog.clone(),
            events.clone(),
            config.dispatch,
        )
        .with_sealer(config.secrets)
        .with_work(flow::Flow::new(config.flow), owner.clone(), config.leases);
        let dispatcher = match config.page_rechecks {
            gone_pages::PageRechecks::On => {
                dispatcher.with_page_checker(gone_pages::PageChecker::new(
                    store.clone(),
                    registry.clone(),
                    events.clone(),
                    outbound.clone(),
                ))
            }
            gone_pages::PageRechecks::Off => dispatcher,
        };
        let jobs = JobRunner::new(
            store.clone(),
            dispatcher.clone(),
            events.clone(),
            owner.clone(),
            config.leases,
        );
        let presence =
            presence::Presence::for_store(&store, events.clone(), owner.clone(), config.leases);
        Self {
            owner,
            presence,
            leases: config.leases,
            calls: config.calls,
            calls_in_flight: ops::CallsInFlight::default(),
            facets: ops::Coalesced::default(),
            sign_in_quota: config.sign_in,
            database: live::database::DatabaseWatch::default(),
            imports: ops::Slots::default(),
            fanout_starts: ops::Turnstiles::default(),
            calls_by_workspace: ops::Slots::default(),
            calls_by_person: ops::Slots::default(),
            upkeep: tokio_util::sync::CancellationToken::new(),
            drop_folder: Arc::default(),
            saved_manifests: Arc::default(),
            outbound,
            store,
            registry,
            events,
            catalog,
            dispatcher,
            jobs,
        }
    }

    /// A read of the pack and bundle catalogue.
    pub fn catalog(&self) -> std::sync::RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(|e| e.into_inner())
    }
}

/// The engine's parts, for tests and benchmarks that look inside. Never a
/// door: REST, MCP, the CLI and the pages call the operations.
#[cfg(any(test, feature = "test-support"))]
impl Engine {
    pub fn store(&self) -> &Store {
        &self.store
    }
    /// The clock every part of this engine reads; a test moves it.
    pub fn clock(&self) -> &time::Clock {
        self.store.clock()
    }
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
    pub fn events(&self) -> &EventBus {
        &self.events
    }
    pub fn catalog_lock(&self) -> &Arc<RwLock<Catalog>> {
        &self.catalog
    }
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }
    pub fn jobs(&self) -> &JobRunner {
        &self.jobs
    }
    pub fn presence(&self) -> &presence::Presence {
        &self.presence
    }
    pub fn outbound(&self) -> &connectors::guard::Outbound {
        &self.outbound
    }
    /// The heartbeat's tidying (abandoned imports, quiet sign-in counts),
    /// now rather than at the next heartbeat.
    pub async fn tidy_now(&self) {
        self.tidy().await;
    }
}
