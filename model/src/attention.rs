//! Operator attention: a connector a workspace's admins must act on (a key
//! the provider refused, errors that keep it suspended), what happened and
//! what to do, in words.

use serde::{Deserialize, Serialize};

/// Why a connector needs an admin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum AttentionKind {
    /// The provider refused the key: nothing fires until someone acts.
    KeyRefused,
    /// Errors have kept it suspended longer than the server's threshold.
    LongSuspension,
}

impl AttentionKind {
    /// `key-refused` or `long-suspension`.
    pub fn name(self) -> &'static str {
        match self {
            AttentionKind::KeyRefused => "key-refused",
            AttentionKind::LongSuspension => "long-suspension",
        }
    }
}

/// One thing an admin should act on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Attention {
    pub connector_id: String,
    pub display_name: String,
    pub kind: AttentionKind,
    /// Whose key met it: the workspace's own (`true`) or the server's.
    pub own_key: bool,
    /// When it began (Unix ms): the refusal, or the streak's first
    /// suspension.
    pub since: i64,
    /// What happened, in a sentence without a time (the reader shows
    /// `since` in their own time zone).
    pub what: String,
    /// What to do about it.
    pub to_do: String,
}
