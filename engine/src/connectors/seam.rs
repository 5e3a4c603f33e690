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
///
/// Each kind says whose trouble it is ([`FireError::is_the_requests_own`]):
/// a rate limit, a refused key, a timeout or a provider's failure belong to
/// whoever owns the key (the workspace whose key it is, or every workspace
/// using the server's key), and change the connector's status for them; an
/// unreadable answer or a refused query belong to the one request that
/// met them, and change nothing for anyone else.
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
    /// The answer could not be understood (what one query made of it, as
    /// far as anyone can tell: the request's own).
    #[error("unreadable answer: {reason}")]
    Malformed { reason: String },
    /// This request's own trouble, not the connector's nor its key's: the
    /// provider refused this query (a 4xx about its input), or the site
    /// the request reads (the crawler's target) answered badly.
    #[error("{reason}")]
    Request { reason: String },
}

/// The longest a provider's `Retry-After` is believed: past it, a provider
/// (or a crawled site) asking for years would take a shared connector away
/// for good.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

impl FireError {
    /// Whether this failure is the one request's own (see the type's note):
    /// it changes no connector status, streak or suspension.
    pub fn is_the_requests_own(&self) -> bool {
        matches!(
            self,
            FireError::Malformed { .. } | FireError::Request { .. }
        )
    }

    /// The same failure as the request's own: what a site the request
    /// reads answered (the crawler's target) is never the connector's.
    pub fn into_the_requests_own(self) -> FireError {
        match self {
            FireError::Request { .. } => self,
            other => FireError::Request {
                reason: other.to_string(),
            },
        }
    }

    /// What happened, in our words, for a status every workspace using
    /// the key may see: never the provider's text, which may echo another
    /// member's query. `http_status` is the provider's last answer's, when
    /// one came.
    pub fn in_our_words(&self, http_status: Option<u16>) -> String {
        let what = match self {
            FireError::RateLimited { .. } => "the provider asked to slow down".to_owned(),
            FireError::AuthFailed { .. } => "the provider refused the key".to_owned(),
            FireError::Timeout { after } => {
                format!("the provider gave no answer within {} s", after.as_secs())
            }
            FireError::Upstream { .. } => "the provider failed or could not be reached".to_owned(),
            FireError::Malformed { .. } => "the provider's answer could not be read".to_owned(),
            FireError::Request { .. } => "the provider refused a query".to_owned(),
        };
        match http_status {
            Some(code) if !matches!(self, FireError::Timeout { .. }) => {
                format!("{what} (HTTP {code})")
            }
            _ => what,
        }
    }
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
