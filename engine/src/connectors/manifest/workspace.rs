//! Manifests a workspace's admins add from the browser or the API: checked
//! whole, test-fired before saving, kept in the database per workspace and
//! registered at once as connectors only that workspace sees. Saved manifests
//! register again at every start.

use std::time::{Duration, Instant};

use model::{ConnectorSource, FireOutcome, TestReport, TestResult};

use super::{Format, Manifest, ManifestError};
use crate::connectors::registry::RegistryError;
use crate::connectors::seam::{FireError, FireOpts};
use crate::store::StoreError;

/// The longest manifest accepted, in bytes.
pub const MAX_MANIFEST: usize = 64 * 1024;

/// The longest a test fire may take, every page included.
const TEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Fires a connector once outside any chain, within [`TEST_TIMEOUT`].
pub(crate) async fn probe(
    connector: &dyn crate::connectors::seam::Connector,
    intent: &model::Capability,
    query: &str,
    opts: &FireOpts,
) -> Result<crate::connectors::seam::Found, FireError> {
    tokio::time::timeout(TEST_TIMEOUT, connector.fire(intent, query, opts))
        .await
        .unwrap_or(Err(FireError::Timeout {
            after: TEST_TIMEOUT,
        }))
}

/// What a probe found, and how the answer is classified.
pub(crate) fn report(
    fired: Result<crate::connectors::seam::Found, FireError>,
    started: Instant,
) -> TestReport {
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match fired {
        Ok(found) => TestReport {
            problems: Vec::new(),
            outcome: Some(if found.results.is_empty() {
                FireOutcome::NotFound
            } else {
                FireOutcome::Found
            }),
            // A partial answer still answered: it says what it missed.
            error: found.partial,
            results: found
                .results
                .into_iter()
                .map(|r| TestResult {
                    url: r.url,
                    title: r.title,
                    snippet: r.snippet,
                })
                .collect(),
            elapsed_ms,
        },
        Err(e) => TestReport {
            problems: Vec::new(),
            outcome: Some(match e {
                FireError::RateLimited { .. } => FireOutcome::RateLimited,
                _ => FireOutcome::Error,
            }),
            error: Some(e.to_string()),
            results: Vec::new(),
            elapsed_ms,
        },
    }
}

/// Why a manifest was not saved or removed.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error(transparent)]
    Invalid(#[from] ManifestError),
    #[error("id {id:?} is already taken by {by}: choose another id")]
    Taken { id: String, by: String },
    #[error("this workspace has no manifest connector {0:?}")]
    NotFound(String),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    NotAdmin(#[from] crate::ops::NotAdmin),
}

pub(crate) fn parse(text: &str, format: Format) -> Result<Manifest, ManifestError> {
    if text.len() > MAX_MANIFEST {
        return Err(ManifestError(vec![model::Problem {
            field: "manifest".to_owned(),
            message: format!("is {} bytes; the most is {MAX_MANIFEST}", text.len()),
        }]));
    }
    Manifest::parse(text, format)
}

/// Who holds an id, as a workspace may be told.
pub(crate) fn taken_by(source: &ConnectorSource, workspace_id: i64) -> String {
    match source {
        ConnectorSource::Workspace { workspace_id: w } if *w != workspace_id => {
            "another workspace's connector".to_owned()
        }
        other => other.describe(),
    }
}
