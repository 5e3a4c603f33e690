//! The answer of `GET /api/health`.

use serde::{Deserialize, Serialize};

/// Liveness answer: the server is up and which build it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Health {
    /// Always `"ok"` when the server answers at all.
    pub status: String,
    /// The `switchyard` package version.
    pub version: String,
}

impl Health {
    pub fn ok(version: impl Into<String>) -> Self {
        Self {
            status: "ok".to_owned(),
            version: version.into(),
        }
    }
}
