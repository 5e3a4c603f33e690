//! Packs and bundles as one workspace has them: the shipped catalogue with
//! the workspace's own laid over it. Admins create and change packs (intent,
//! short label, query, chain order) and bundles (which chips, in which
//! order), so a new capability gets its own chip without a code change; the
//! change reaches every open view of the workspace at once.

use crate::store::StoreError;

/// Why a pack or bundle was not saved or removed.
#[derive(Debug, thiserror::Error)]
pub enum CatalogEditError {
    /// The change would leave the catalogue wrong; says where and why.
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    NotAdmin(#[from] crate::ops::NotAdmin),
}
