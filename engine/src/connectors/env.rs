//! Reading connector settings and keys at fire time, so a rotated key is
//! used at once: the firing workspace's secret first, then the server's
//! environment. Values never leave the adapter that asked.

use crate::connectors::seam::{FireError, FireOpts};

/// A required setting, or an error naming it (never its value).
pub fn required(name: &str, opts: &FireOpts) -> Result<String, FireError> {
    optional(name, opts).ok_or_else(|| FireError::AuthFailed {
        reason: format!("{name} is not set"),
    })
}

/// An optional setting: the workspace's secret, else the variable.
pub fn optional(name: &str, opts: &FireOpts) -> Option<String> {
    opts.secrets
        .get(name)
        .map(str::to_owned)
        .or_else(|| std::env::var(name).ok())
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// A key: the firing workspace's own secret, else one given at
/// construction (it stands for the server's environment in tests), else
/// the variable read now.
pub fn key(given: &Option<String>, name: &str, opts: &FireOpts) -> Result<String, FireError> {
    let own = opts
        .secrets
        .get(name)
        .map(str::trim)
        .filter(|v| !v.is_empty());
    match (own, given) {
        (Some(own), _) => Ok(own.to_owned()),
        (None, Some(k)) => Ok(k.clone()),
        (None, None) => required(name, opts),
    }
}
