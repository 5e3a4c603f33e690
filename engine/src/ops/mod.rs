//! The operations layer: the one door of the engine. Everything REST, MCP,
//! the CLI and the pages' server functions do is a method here, by area
//! (accounts, attention, calls, catalog, connectors, credentials, jobs,
//! manifests, personal chains, records, refresh, secrets, sets, spend, workspace). An
//! operation takes the caller, checks what they may touch, validates its
//! input and answers [`OpError`], which each door maps to its own form (the
//! REST door's `ApiError` adds only what HTTP has). The few that take no
//! caller say whose they are: the operator's commands (who has the
//! database is the operator) and sign-in (which is how a caller comes to
//! be). What a process does before it serves is `crate::process`.

mod accounts;
mod attention;
mod bulk;
mod calls;
mod catalog;
mod coalesce;
mod connectors;
mod credentials;
mod glance;
mod jobs;
mod manifests;
mod personal_chains;
mod records;
mod refresh;
mod secrets;
mod sets;
mod sign_in_limits;
mod slots;
mod spend;
mod verbs;
mod workspace;

pub use calls::{
    CallConfig, CallsInFlight, DEFAULT_MAX_RESULTS, MAX_CALLS_IN_FLIGHT,
    MAX_CALLS_IN_FLIGHT_PER_PERSON, MAX_QUERY_CHARS, MAX_RESULTS,
};
pub use coalesce::Coalesced;
pub use jobs::MAX_FANOUTS_RUNNING;
pub use personal_chains::MAX_PERSONAL_CHAIN;
pub use records::FireChoice;
pub use slots::{Slot, Slots, Turnstiles};

use model::Item;

use crate::connectors::registry::RegistryError;
use crate::execution::dispatch::DispatchError;
use crate::store::{StoreError, TriageError};
use crate::tenancy::Principal;

/// Why an operation did nothing. The message is for the person asking; an
/// [`OpError::Internal`] source is for the log only.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// Bad input; the message names the field.
    #[error("{0}")]
    Invalid(String),
    /// The caller's role does not allow it.
    #[error("{0}")]
    Forbidden(String),
    /// Nothing by that name in the caller's workspace (what another
    /// workspace owns is not found either).
    #[error("{0}")]
    NotFound(String),
    /// Someone acted first, or the thing is not in a state for this;
    /// `current` is the item as it is now when there is one.
    #[error("{detail}")]
    Conflict {
        detail: String,
        current: Option<Box<Item>>,
    },
    /// Input that reads but does not check (a manifest): every mistake,
    /// each named by its field.
    #[error("{detail}")]
    Unchecked {
        detail: String,
        problems: Vec<model::Problem>,
    },
    /// Over a size or count limit.
    #[error("{0}")]
    TooLarge(String),
    /// A cap or limit stops it for now; `detail` names the limit, and it
    /// is worth asking again after `retry_after`.
    #[error("{detail}")]
    Limited {
        detail: String,
        retry_after: std::time::Duration,
    },
    /// A record's daily cap stopped a priced call and nothing else fired:
    /// asking again with `spend_more` lets the call past the cap.
    #[error("{} To spend it, fire again with spend_more.", .0.ask())]
    SpendMore(Box<model::SpendQuestion>),
    /// The database does not answer (stopped, unreachable, or a SQLite
    /// file held by another writer for too long): nothing was done, and it
    /// is worth asking again in a few seconds. It holds the cause, for the
    /// log only.
    #[error("the database does not answer; nothing was changed: try again in a few seconds")]
    Unavailable(String),
    /// Something failed inside.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl OpError {
    /// A stable one-word name of the kind, as the REST door's `error` field
    /// and the pages read it.
    pub fn kind(&self) -> &'static str {
        match self {
            OpError::Invalid(_) => "bad_request",
            OpError::Forbidden(_) => "forbidden",
            OpError::NotFound(_) => "not_found",
            OpError::Conflict { .. } => "conflict",
            OpError::Unchecked { .. } => "invalid",
            OpError::TooLarge(_) => "too_large",
            OpError::Limited { .. } => "rate_limited",
            OpError::SpendMore(_) => "spend_more",
            OpError::Unavailable(_) => "unavailable",
            OpError::Internal(_) => "internal",
        }
    }

    /// The HTTP status this kind of failure answers on a door that has one.
    pub fn status(&self) -> u16 {
        match self {
            OpError::Invalid(_) => 400,
            OpError::Forbidden(_) => 403,
            OpError::NotFound(_) => 404,
            OpError::Conflict { .. } => 409,
            OpError::Unchecked { .. } => 422,
            OpError::TooLarge(_) => 413,
            OpError::Limited { .. } => 429,
            OpError::SpendMore(_) => 402,
            OpError::Unavailable(_) => 503,
            OpError::Internal(_) => 500,
        }
    }
}

/// The caller is a member, and the operation is an admin's.
#[derive(Debug, thiserror::Error)]
#[error("only an admin of workspace {workspace:?} may do this")]
pub struct NotAdmin {
    pub workspace: String,
}

/// Fails unless `who` is an admin of their workspace. Every operation that
/// changes a workspace's connectors, manifests, secrets, catalogue or
/// members starts with it, whichever door it came through.
pub fn require_admin(who: &Principal) -> Result<(), NotAdmin> {
    if who.is_admin() {
        Ok(())
    } else {
        Err(NotAdmin {
            workspace: who.workspace_name.clone(),
        })
    }
}

impl From<NotAdmin> for OpError {
    fn from(e: NotAdmin) -> Self {
        OpError::Forbidden(e.to_string())
    }
}

impl From<StoreError> for OpError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => OpError::NotFound(format!("{what} does not exist")),
            away if away.is_unavailable() => OpError::Unavailable(away.to_string()),
            other => OpError::Internal(other.into()),
        }
    }
}

impl From<DispatchError> for OpError {
    fn from(e: DispatchError) -> Self {
        match e {
            DispatchError::UnknownPack(pack) => OpError::Invalid(format!("pack: no pack {pack:?}")),
            DispatchError::Store(e) => e.into(),
            stopped @ DispatchError::Stopped => OpError::Internal(stopped.into()),
        }
    }
}

impl From<RegistryError> for OpError {
    fn from(e: RegistryError) -> Self {
        match e {
            RegistryError::Unknown(_) => OpError::NotFound(e.to_string()),
            other => OpError::Invalid(other.to_string()),
        }
    }
}

impl From<TriageError> for OpError {
    fn from(e: TriageError) -> Self {
        let detail = e.to_string();
        match e {
            TriageError::Conflict { current, .. } => OpError::Conflict {
                detail,
                current: Some(current),
            },
            TriageError::NothingToUndo(_) => OpError::Conflict {
                detail,
                current: None,
            },
            TriageError::Store(e) => e.into(),
        }
    }
}

impl From<crate::tenancy::accounts::AccountError> for OpError {
    fn from(e: crate::tenancy::accounts::AccountError) -> Self {
        use crate::tenancy::accounts::AccountError;
        match e {
            AccountError::Invalid(m) => OpError::Invalid(m),
            AccountError::Store(e) => e.into(),
            AccountError::NotAdmin(e) => e.into(),
        }
    }
}

impl From<crate::tenancy::secrets::SecretsError> for OpError {
    fn from(e: crate::tenancy::secrets::SecretsError) -> Self {
        use crate::tenancy::secrets::SecretsError;
        match e {
            SecretsError::Invalid(m) => OpError::Invalid(format!("value: {m}")),
            SecretsError::NotSet(_) => OpError::NotFound(e.to_string()),
            SecretsError::NoKey | SecretsError::BadKey => OpError::Conflict {
                detail: e.to_string(),
                current: None,
            },
            SecretsError::Store(e) => e.into(),
            SecretsError::NotAdmin(e) => e.into(),
        }
    }
}

impl From<crate::packs::workspace::CatalogEditError> for OpError {
    fn from(e: crate::packs::workspace::CatalogEditError) -> Self {
        use crate::packs::workspace::CatalogEditError;
        match e {
            CatalogEditError::Invalid(m) => OpError::Invalid(m),
            CatalogEditError::NotFound(m) => OpError::NotFound(m),
            CatalogEditError::Store(e) => e.into(),
            CatalogEditError::NotAdmin(e) => e.into(),
        }
    }
}

impl From<crate::connectors::manifest::SaveError> for OpError {
    fn from(e: crate::connectors::manifest::SaveError) -> Self {
        use crate::connectors::manifest::SaveError;
        match e {
            SaveError::Invalid(invalid) => OpError::Unchecked {
                detail: format!("the manifest does not check: {invalid}"),
                problems: invalid.0,
            },
            SaveError::Taken { .. } => OpError::Conflict {
                detail: e.to_string(),
                current: None,
            },
            SaveError::NotFound(_) => OpError::NotFound(e.to_string()),
            SaveError::Registry(e) => e.into(),
            SaveError::Store(e) => e.into(),
            SaveError::NotAdmin(e) => e.into(),
        }
    }
}
