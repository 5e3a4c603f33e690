//! Accounts as the browser sees them: roles, workspaces, the signed-in viewer
//! and who else is looking at a record set.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a member may do in a workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Manages connectors, packs, members and secrets, and does what members do.
    Admin,
    /// Imports, fires and triages.
    Member,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Member => "member",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl TryFrom<String> for Role {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "admin" => Ok(Role::Admin),
            "member" => Ok(Role::Member),
            other => Err(format!("no role {other:?} (expected admin or member)")),
        }
    }
}

/// A workspace one user belongs to, with their role there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct WorkspaceRef {
    pub id: i64,
    pub name: String,
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub role: Role,
}

/// One member of a workspace, as its member list shows them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct Member {
    pub user_id: i64,
    pub email: String,
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub role: Role,
    /// When they joined the workspace, Unix milliseconds.
    pub since: i64,
}

/// The signed-in person as the pages need them: who, where, what they may do,
/// and their own pack labels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Viewer {
    pub email: String,
    /// The workspace this session acts in.
    pub workspace: WorkspaceRef,
    /// Every workspace the user belongs to, for the switcher.
    pub workspaces: Vec<WorkspaceRef>,
    /// Pack id to this user's short label, replacing the pack's own.
    pub pack_labels: BTreeMap<String, String>,
}

impl Viewer {
    pub fn is_admin(&self) -> bool {
        self.workspace.role == Role::Admin
    }

    /// The short label this user sees for a pack.
    pub fn label_of<'a>(&'a self, pack_id: &str, default: &'a str) -> &'a str {
        self.pack_labels
            .get(pack_id)
            .map_or(default, String::as_str)
    }
}

/// The most characters a user's pack label may have.
pub const MAX_PACK_LABEL_CHARS: usize = 3;

/// Checks a user's own short label for a pack: 1 to 3 characters without
/// spaces or markup, like a pack's own label.
pub fn check_pack_label(label: &str) -> Result<(), String> {
    let n = label.chars().count();
    if n == 0 || n > MAX_PACK_LABEL_CHARS {
        return Err(format!(
            "label {label:?}: use 1 to {MAX_PACK_LABEL_CHARS} characters"
        ));
    }
    if label
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || "<>&\"'".contains(c))
    {
        return Err(format!(
            "label {label:?}: no spaces, control characters or < > & \" '"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_round_trip_and_unknown_ones_are_named() {
        for role in [Role::Admin, Role::Member] {
            assert_eq!(role.name().parse::<Role>(), Ok(role));
        }
        assert!("owner".parse::<Role>().unwrap_err().contains("owner"));
    }

    #[test]
    fn pack_labels_are_short_and_plain() {
        assert!(check_pack_label("fb").is_ok());
        assert!(check_pack_label("").is_err());
        assert!(check_pack_label("abcd").is_err());
        assert!(check_pack_label("wp2").is_ok());
        assert!(check_pack_label("a b").is_err());
        assert!(check_pack_label("<i>").is_err());
    }
}
