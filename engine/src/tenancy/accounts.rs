//! Accounts' rules: what an email address and a workspace name must be,
//! what adding a person answers, and why an account change is refused. The
//! operations themselves (adding, roles, labels, the access check) are
//! `ops::accounts`; how people prove who they are is `credentials`.

use crate::store::StoreError;

/// Why an account operation did nothing.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// Bad input; the message names the field.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    NotAdmin(#[from] crate::ops::NotAdmin),
}

/// What `add_user` or `add_member` did.
#[derive(Debug)]
pub struct AddedUser {
    pub user_id: i64,
    pub workspace_id: i64,
    pub created_user: bool,
    pub created_workspace: bool,
    /// A one-time link (path and secret) for the person to choose their
    /// password with, when they have none yet: show it once, to hand over.
    pub set_password_link: Option<String>,
}

/// Lower-cases and checks an email address.
pub fn normalize_email(email: &str) -> Result<String, AccountError> {
    let email = email.trim().to_lowercase();
    let valid = email.len() <= 254
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && email.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && host.contains('.') && !host.contains('@')
        });
    if valid {
        Ok(email)
    } else {
        Err(AccountError::Invalid(format!(
            "email {email:?}: expected an address like name@example.org"
        )))
    }
}

/// Checks a workspace name: 1 to 64 characters, no control characters.
pub fn check_workspace_name(name: &str) -> Result<String, AccountError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(AccountError::Invalid(format!(
            "workspace {name:?}: use 1 to 64 printable characters"
        )));
    }
    Ok(name.to_owned())
}

pub(crate) fn last_admin(email: &str, workspace: &str) -> AccountError {
    AccountError::Invalid(format!(
        "{email} is the last admin of {workspace:?}: make someone else admin first"
    ))
}
