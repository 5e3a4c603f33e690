//! The coded adapters, one file each, with their registrations; shared HTTP
//! plumbing in `http`, social-platform filters in `social`, environment
//! reads in `env`.

pub mod bluesky;
pub mod brave;
pub mod demo;
pub mod env;
pub mod gdelt;
pub mod google;
pub mod http;
pub mod openalex;
pub mod searxng;
pub mod serpapi;
pub mod site;
pub mod social;
pub mod tavily;
pub mod wikidata;
pub mod wikipedia;

use std::sync::Arc;

use crate::connector::Connector;
use crate::registry::{Registration, Registry, RegistryError};
use http::Http;

/// One coded adapter: its registration and a builder taking the shared
/// client, a base URL (`None`: the provider's) and a key (`None`: read from
/// the environment at each fire).
pub struct Adapter {
    pub registration: fn() -> Registration,
    pub build: fn(Http, Option<String>, Option<String>) -> Arc<dyn Connector>,
}

macro_rules! adapter {
    ($registration:path, $ty:ty) => {
        Adapter {
            registration: $registration,
            build: |http, base, key| Arc::new(<$ty>::from_parts(http, base, key)),
        }
    };
}

macro_rules! from_parts {
    ($($ty:ty),* $(,)?) => {
        $(impl $ty {
            /// Builds the adapter (see [`Adapter`]).
            pub fn from_parts(http: Http, base: Option<String>, key: Option<String>) -> Self {
                Self { http, base, key }
            }
        })*
    };
}

from_parts!(
    searxng::Searxng,
    tavily::Tavily,
    serpapi::SerpApi,
    brave::Brave,
    wikipedia::Wikipedia,
    wikidata::Wikidata,
    google::KnowledgeGraph,
    google::YouTube,
    bluesky::Bluesky,
    openalex::OpenAlex,
    gdelt::Gdelt,
);

/// Every coded adapter that talks to a real provider.
pub fn adapters() -> Vec<Adapter> {
    vec![
        adapter!(searxng::registration, searxng::Searxng),
        adapter!(tavily::registration, tavily::Tavily),
        adapter!(serpapi::registration, serpapi::SerpApi),
        adapter!(brave::registration, brave::Brave),
        adapter!(wikipedia::registration, wikipedia::Wikipedia),
        adapter!(wikidata::registration, wikidata::Wikidata),
        adapter!(google::kg_registration, google::KnowledgeGraph),
        adapter!(bluesky::registration, bluesky::Bluesky),
        adapter!(google::youtube_registration, google::YouTube),
        adapter!(openalex::registration, openalex::OpenAlex),
        adapter!(gdelt::registration, gdelt::Gdelt),
    ]
}

/// Registers every coded adapter against the real providers, and the demo
/// connector (answering within `demo` at the most) when given.
pub fn register_builtin(
    registry: &Registry,
    http: &Http,
    demo: Option<std::time::Duration>,
) -> Result<(), RegistryError> {
    for adapter in adapters() {
        registry.register(
            (adapter.registration)(),
            (adapter.build)(http.clone(), None, None),
        )?;
    }
    let crawler = site::SiteCrawler {
        allow: site::AllowList::from_env(),
        timeout: None,
    };
    registry.register(site::registration(), Arc::new(crawler))?;
    if let Some(latency) = demo {
        registry.register(demo::registration(), Arc::new(demo::Demo { latency }))?;
    }
    Ok(())
}
