//! The connector seam: the trait every adapter implements, what it returns,
//! and how a failed attempt is classified.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use model::Capability;
use serde::{Deserialize, Serialize};

/// The record a fire is for, as a connector may use it (a site crawler reads
/// the `website` field; most connectors only need the query).
#[derive(Clone, Debug, Default)]
pub struct FireOpts {
    pub record_name: String,
    pub record_fields: BTreeMap<String, String>,
    /// How many results the caller wants at most.
    pub max_results: usize,
    /// The firing workspace's secrets this connector declared it needs; they
    /// win over the server's environment.
    pub secrets: Secrets,
}

/// Secret values by name. Debug-printing shows the names only, so a stray
/// `{:?}` cannot leak a key.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(BTreeMap<String, String>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Secrets {
    pub fn new(values: BTreeMap<String, String>) -> Self {
        Self(values)
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Only the named ones (what one connector requires).
    pub fn only(&self, names: &[String]) -> Self {
        Self(
            self.0
                .iter()
                .filter(|(k, _)| names.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One result a connector found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnectorResult {
    pub url: String,
    pub title: String,
    #[serde(default)]
    pub snippet: String,
    /// Provider fields worth keeping (rank, date, handle...), as returned.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub raw: serde_json::Value,
}

/// What one fire found: its results and, when it stopped short of what it
/// meant to read (a later page failed), why. A partial fire keeps what it
/// found: the results of page 1 are evidence even when page 2 failed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Found {
    pub results: Vec<ConnectorResult>,
    /// Why the fire is partial, in words; `None` when it read all it meant to.
    pub partial: Option<String>,
}

impl From<Vec<ConnectorResult>> for Found {
    fn from(results: Vec<ConnectorResult>) -> Self {
        Self {
            results,
            partial: None,
        }
    }
}

impl FromIterator<ConnectorResult> for Found {
    fn from_iter<I: IntoIterator<Item = ConnectorResult>>(iter: I) -> Self {
        Vec::from_iter(iter).into()
    }
}

/// Why an attempt produced no results. Finding nothing is not an error: a
/// connector returns an empty [`Found`] for that.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FireError {
    /// The provider said 429 (or its own quota error).
    #[error("rate-limited by the provider: {reason}")]
    RateLimited {
        retry_after: Option<Duration>,
        reason: String,
    },
    /// The provider refused the credentials (401, 403, "invalid key").
    #[error("credentials refused: {reason}")]
    AuthFailed { reason: String },
    #[error("no answer within {} s", .after.as_secs_f64())]
    Timeout { after: Duration },
    /// 5xx, a refused connection, a reset: worth trying elsewhere.
    #[error("provider error: {reason}")]
    Upstream { reason: String },
    /// The answer could not be understood.
    #[error("unreadable answer: {reason}")]
    Malformed { reason: String },
}

/// One way to serve one or more capabilities.
#[async_trait]
pub trait Connector: Send + Sync + 'static {
    async fn fire(
        &self,
        intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError>;

    /// Which version of the connector answered, for receipts: the build for
    /// coded adapters, the manifest's digest for manifests.
    fn version(&self) -> String {
        concat!("switchyard ", env!("CARGO_PKG_VERSION")).to_owned()
    }
}
