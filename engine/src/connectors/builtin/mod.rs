//! The connectors built in: the coded adapters, one file each with its
//! registration, for providers whose answers need code (several requests,
//! filters, claims), and the built-in manifests (`engine/manifests/`) for
//! those whose body is request, JSON and mapping; social-platform filters in
//! `social`.

pub mod brave;
pub mod demo;
pub mod google;
pub mod google_places;
pub mod nominatim;
pub mod page;
pub mod places;
pub mod searxng;
pub mod serpapi;
pub mod serpapi_maps;
pub mod site;
pub mod social;
pub mod tavily;
pub mod wikidata;

use std::sync::Arc;

use crate::connectors::env;
use crate::connectors::http::Http;
use crate::connectors::registry::{Registration, Registry, RegistryError};
use crate::connectors::seam::Connector;

/// What every HTTP adapter holds: the shared client, the provider's base URL
/// (`None`: the provider's own) and a key (`None`: read from the environment
/// at each fire, so a rotated key is used at once).
#[derive(Debug)]
pub struct Endpoint {
    pub http: Http,
    pub base: Option<String>,
    pub key: Option<String>,
}

impl Endpoint {
    /// The base URL, or the provider's own.
    pub fn base_or(&self, default: &str) -> String {
        self.base.clone().unwrap_or_else(|| default.to_owned())
    }

    /// The key given at construction, or the setting read now (the firing
    /// workspace's secret, else the variable).
    pub fn key(
        &self,
        var: &str,
        opts: &crate::connectors::seam::FireOpts,
    ) -> Result<String, crate::connectors::seam::FireError> {
        env::key(&self.key, var, opts)
    }
}

/// One coded adapter: its registration and how to build it on an endpoint.
pub struct Adapter {
    pub registration: fn() -> Registration,
    pub build: fn(Endpoint) -> Arc<dyn Connector>,
}

impl Adapter {
    /// Builds the adapter on a client, a base URL and a key (see [`Endpoint`]).
    pub fn connector(
        &self,
        http: Http,
        base: Option<String>,
        key: Option<String>,
    ) -> Arc<dyn Connector> {
        (self.build)(Endpoint { http, base, key })
    }
}

macro_rules! adapter {
    ($registration:path, $ty:path) => {
        Adapter {
            registration: $registration,
            build: |endpoint| Arc::new($ty(endpoint)),
        }
    };
}

/// Every coded adapter that talks to a real provider.
pub fn adapters() -> Vec<Adapter> {
    vec![
        adapter!(searxng::registration, searxng::Searxng),
        adapter!(tavily::registration, tavily::Tavily),
        adapter!(serpapi::registration, serpapi::SerpApi),
        adapter!(brave::registration, brave::Brave),
        adapter!(wikidata::registration, wikidata::Wikidata),
        adapter!(google::kg_registration, google::KnowledgeGraph),
        adapter!(google::youtube_registration, google::YouTube),
        adapter!(nominatim::registration, nominatim::Nominatim),
        adapter!(google_places::registration, google_places::GooglePlaces),
    ]
}

/// The manifests built into Switchyard, by file name: connectors whose body
/// is request, JSON and mapping are written this way, like any operator's.
pub const BUILTIN_MANIFESTS: [(&str, &str); 4] = [
    (
        "bluesky.toml",
        include_str!("../../../manifests/bluesky.toml"),
    ),
    ("gdelt.toml", include_str!("../../../manifests/gdelt.toml")),
    (
        "openalex.toml",
        include_str!("../../../manifests/openalex.toml"),
    ),
    (
        "wikipedia.toml",
        include_str!("../../../manifests/wikipedia.toml"),
    ),
];

/// Registers every coded adapter and built-in manifest against the real
/// providers, and the demo connector (answering within `demo` at the most)
/// when given.
pub fn register_builtin(
    registry: &Registry,
    http: &Http,
    demo: Option<std::time::Duration>,
) -> Result<(), RegistryError> {
    for adapter in adapters() {
        registry.register(
            (adapter.registration)(),
            adapter.connector(http.clone(), None, None),
        )?;
    }
    for (file, text) in BUILTIN_MANIFESTS {
        let manifest = crate::connectors::manifest::Manifest::parse(
            text,
            crate::connectors::manifest::Format::Toml,
        )
        .map_err(|e| RegistryError::Invalid {
            id: file.to_owned(),
            problems: e.0,
        })?;
        registry.register(
            manifest.registration(),
            Arc::new(crate::connectors::manifest::ManifestConnector::new(
                Arc::new(manifest),
                http.outbound().clone(),
                Arc::new(|name| std::env::var(name).ok()),
            )),
        )?;
    }
    let crawler = site::SiteCrawler {
        outbound: http.outbound().clone(),
        timeout: None,
    };
    registry.register(site::registration(), Arc::new(crawler))?;
    if let Some(latency) = demo {
        registry.register(demo::registration(), Arc::new(demo::Demo { latency }))?;
    }
    Ok(())
}
