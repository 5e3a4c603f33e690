//! Accounts: adding users to workspaces, checking passwords, issuing and
//! checking API tokens, per-user pack labels, and the access check every door
//! makes before it reaches a stored thing.
//!
//! Passwords are kept only as argon2id hashes; tokens only as SHA-256 hashes.
//! Neither value is ever logged or returned after it is first shown.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use model::{Role, Viewer};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::store::{Owned, Principal, Removal, StoreError};
use crate::Engine;

/// The fewest characters a password may have.
pub const MIN_PASSWORD_CHARS: usize = 10;
/// What every API token starts with, so a leaked one is easy to recognise.
pub const TOKEN_PREFIX: &str = "sy_";

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

/// How long a set-password link lasts.
pub const PASSWORD_LINK_DAYS: i64 = 7;
/// The page a set-password link opens. The link's secret follows `#`, so
/// it reaches neither a server log nor a `Referer`.
pub const SET_PASSWORD_PATH: &str = "/set-password";
/// The stored hash of an account that has no password yet (invited, link
/// not used): no password matches it.
const NO_PASSWORD: &str = "!";

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

/// Whether a password someone chooses is long enough; the error says how long.
pub fn check_new_password(password: &str) -> Result<(), AccountError> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(AccountError::Invalid(format!(
            "password: use at least {MIN_PASSWORD_CHARS} characters"
        )));
    }
    Ok(())
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::rng().fill_bytes(&mut bytes);
    bytes
}

/// A new random password of 24 URL-safe characters.
pub fn generate_password() -> String {
    URL_SAFE_NO_PAD.encode(random_bytes::<18>())
}

/// A new API token and the hash to store for it.
pub fn generate_token() -> (String, String) {
    let token = format!(
        "{TOKEN_PREFIX}{}",
        URL_SAFE_NO_PAD.encode(random_bytes::<32>())
    );
    let hash = secret_hash(&token);
    (token, hash)
}

/// The SHA-256 of a high-entropy secret (token, session id) as hex: what the
/// database keeps instead of the secret.
pub fn secret_hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// The MAC behind a browser's mark: the user's id keyed by their password
/// hash, which only the server reads and which changes with the password
/// (so a new password forgets every browser).
fn browser_mac(user_id: i64, password_hash: &str) -> Option<Hmac<Sha256>> {
    // HMAC takes keys of every length; the error is only in the signature.
    let mut mac = Hmac::<Sha256>::new_from_slice(password_hash.as_bytes()).ok()?;
    mac.update(format!("switchyard known browser v1:{user_id}").as_bytes());
    Some(mac)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 128 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Hashes a password with argon2id and a random salt (slow on purpose: call
/// through [`hash_password_blocking`] from async code).
fn hash_password(password: &str) -> Result<String, AccountError> {
    let salt = SaltString::encode_b64(&random_bytes::<16>())
        .map_err(|e| AccountError::Invalid(format!("password salt: {e}")))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| AccountError::Invalid(format!("password: {e}")))
}

fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash)
        .map(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
        .unwrap_or(false)
}

async fn hash_password_blocking(password: String) -> Result<String, AccountError> {
    let _turn = HASHING.acquire().await.ok();
    tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|e| AccountError::Invalid(format!("password hashing stopped: {e}")))?
}

/// Password hashes computed at once, in the whole process. Each argon2
/// computation holds its memory cost (19 MiB) while it runs: 200 sign-ins
/// at once held 2.8 GB that the allocator then kept, and a crowd of wrong
/// passwords from many addresses could have exhausted memory. The rest wait
/// their turn.
static HASHING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(HASHING_AT_ONCE);
const HASHING_AT_ONCE: usize = 4;

/// Checks a password against a stored hash (the decoy when there is none,
/// so an unknown account takes as long), on a blocking thread, in turn.
async fn verify_in_turn(password: &str, hash: Option<String>) -> bool {
    let password = password.to_owned();
    let _turn = HASHING.acquire().await.ok();
    tokio::task::spawn_blocking(move || {
        verify_password(&password, hash.as_deref().unwrap_or_else(|| decoy_hash()))
    })
    .await
    .unwrap_or(false)
}

/// A hash of nothing anyone knows, checked when the email is unknown so that
/// an unknown address takes as long to refuse as a wrong password.
fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash_password(&generate_password()).unwrap_or_default())
}

fn last_admin(email: &str, workspace: &str) -> AccountError {
    AccountError::Invalid(format!(
        "{email} is the last admin of {workspace:?}: make someone else admin first"
    ))
}

impl Engine {
    /// Adds a user to a workspace with a role, creating either when missing
    /// (the operator's `user add`). A user given no password who has none
    /// yet gets a one-time set-password link; an existing user given a
    /// password gets it as their new one.
    pub async fn add_user(
        &self,
        email: &str,
        workspace: &str,
        role: Role,
        password: Option<String>,
    ) -> Result<AddedUser, AccountError> {
        let email = normalize_email(email)?;
        let workspace = check_workspace_name(workspace)?;
        if let Some(password) = &password {
            check_new_password(password)?;
        }
        let (workspace_id, created_workspace) = self.store.ensure_workspace(&workspace).await?;
        self.keep_an_admin_if_demoted(workspace_id, &workspace, &email, role)
            .await?;
        let existing = self.store.user_by_email(&email).await?;
        let (user_id, created_user, needs_link) = match existing {
            Some(user) => {
                let needs_link = match password {
                    Some(password) => {
                        self.set_password(user.id, password).await?;
                        false
                    }
                    None => user.password_hash == NO_PASSWORD,
                };
                (user.id, false, needs_link)
            }
            None => {
                let hash = match &password {
                    Some(p) => hash_password_blocking(p.clone()).await?,
                    None => NO_PASSWORD.to_owned(),
                };
                (
                    self.store.create_user(&email, &hash).await?,
                    true,
                    password.is_none(),
                )
            }
        };
        self.set_membership(user_id, workspace_id, &workspace, &email, role)
            .await?;
        let set_password_link = match needs_link {
            true => Some(self.password_link(user_id).await?),
            false => None,
        };
        Ok(AddedUser {
            user_id,
            workspace_id,
            created_user,
            created_workspace,
            set_password_link,
        })
    }

    /// A new one-time link for a user to choose their password with; their
    /// earlier unused links stop working.
    pub async fn password_link(&self, user_id: i64) -> Result<String, StoreError> {
        self.store.retire_password_links(user_id).await?;
        let token = URL_SAFE_NO_PAD.encode(random_bytes::<32>());
        let expires = crate::time::now_ms() + PASSWORD_LINK_DAYS * 24 * 3600 * 1000;
        self.store
            .create_password_link(user_id, &secret_hash(&token), expires)
            .await?;
        Ok(format!("{SET_PASSWORD_PATH}#{token}"))
    }

    /// A set-password link for `email` (the operator's `user link`, for a
    /// forgotten password): the account's password stays until it is used.
    pub async fn password_link_for(&self, email: &str) -> Result<String, AccountError> {
        let email = normalize_email(email)?;
        let user = self
            .store
            .user_by_email(&email)
            .await?
            .ok_or_else(|| AccountError::Invalid(format!("email {email:?}: no such user")))?;
        Ok(self.password_link(user.id).await?)
    }

    /// Uses a set-password link: the person's new password, every session
    /// of theirs ended. A password too short leaves the link unused.
    pub async fn set_password_with_link(
        &self,
        token: &str,
        password: String,
    ) -> Result<i64, AccountError> {
        check_new_password(&password)?;
        let user_id = self
            .store
            .take_password_link(&secret_hash(token.trim()))
            .await?
            .ok_or_else(|| {
                AccountError::Invalid(
                    "this link was used already, has expired or is not one we made: ask an \
                     admin for a new one"
                        .to_owned(),
                )
            })?;
        self.set_password(user_id, password).await?;
        self.store.delete_sessions_of(user_id, None).await?;
        Ok(user_id)
    }

    /// A person changes their own password, proving the current one; their
    /// other sessions end (the one whose id hashes to `keep` stays).
    pub async fn change_password(
        &self,
        user_id: i64,
        current: &str,
        new: String,
        keep: Option<&str>,
    ) -> Result<(), AccountError> {
        check_new_password(&new)?;
        let user = self
            .store
            .user(user_id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("user {user_id}")))?;
        if !verify_in_turn(current, Some(user.password_hash)).await {
            return Err(AccountError::Invalid(
                "current password: it is not this account's password".to_owned(),
            ));
        }
        self.set_password(user_id, new).await?;
        self.store.retire_password_links(user_id).await?;
        self.store.delete_sessions_of(user_id, keep).await?;
        Ok(())
    }

    /// Stores a password its caller has checked (`check_new_password`).
    async fn set_password(&self, user_id: i64, password: String) -> Result<(), AccountError> {
        let hash = hash_password_blocking(password).await?;
        self.store.set_password_hash(user_id, &hash).await?;
        Ok(())
    }

    /// Checks an email and password; the user's id when they match.
    pub async fn check_password(
        &self,
        email: &str,
        password: &str,
    ) -> Result<Option<i64>, StoreError> {
        let user = match normalize_email(email) {
            Ok(email) => self.store.user_by_email(&email).await?,
            Err(_) => None,
        };
        let (id, hash) = match user {
            Some(user) => (Some(user.id), Some(user.password_hash)),
            None => (None, None),
        };
        let matches = verify_in_turn(password, hash).await;
        Ok(id.filter(|_| matches))
    }

    /// What a browser that signed in as `user_id` keeps to show it did (see
    /// [`browser_mac`]); `None` for no such account.
    pub async fn browser_mark(&self, user_id: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .store
            .user(user_id)
            .await?
            .and_then(|u| browser_mac(u.id, &u.password_hash))
            .map(|mac| hex(&mac.finalize().into_bytes())))
    }

    /// Whether `mark` is the one a browser got by signing in as `email`
    /// with the account's current password.
    pub async fn is_known_browser(&self, email: &str, mark: &str) -> Result<bool, StoreError> {
        let Ok(email) = normalize_email(email) else {
            return Ok(false);
        };
        let Some(user) = self.store.user_by_email(&email).await? else {
            return Ok(false);
        };
        let Some(bytes) = unhex(mark) else {
            return Ok(false);
        };
        Ok(browser_mac(user.id, &user.password_hash)
            .is_some_and(|mac| mac.verify_slice(&bytes).is_ok()))
    }

    /// The workspace a user starts in after signing in: the first by name.
    pub async fn default_principal(&self, user_id: i64) -> Result<Option<Principal>, StoreError> {
        let Some(first) = self.store.workspaces_of(user_id).await?.into_iter().next() else {
            return Ok(None);
        };
        self.store.principal(user_id, first.id).await
    }

    /// Issues an API token acting as `email` in `workspace`; returns its id
    /// and its value, which is not kept and cannot be shown again.
    pub async fn create_token(
        &self,
        email: &str,
        workspace: &str,
    ) -> Result<(i64, String), AccountError> {
        let email = normalize_email(email)?;
        let user = self
            .store
            .user_by_email(&email)
            .await?
            .ok_or_else(|| AccountError::Invalid(format!("email {email:?}: no such user")))?;
        let workspace_id = self.store.workspace_id(workspace).await?.ok_or_else(|| {
            AccountError::Invalid(format!("workspace {workspace:?}: no such workspace"))
        })?;
        if self.store.principal(user.id, workspace_id).await?.is_none() {
            return Err(AccountError::Invalid(format!(
                "{email} is not a member of workspace {workspace:?}"
            )));
        }
        let (token, hash) = generate_token();
        let id = self
            .store
            .create_token(user.id, workspace_id, &hash)
            .await?;
        Ok((id, token))
    }

    /// Who an `Authorization: Bearer` value acts as, if anyone.
    pub async fn principal_by_token(&self, token: &str) -> Result<Option<Principal>, StoreError> {
        if !token.starts_with(TOKEN_PREFIX) {
            return Ok(None);
        }
        self.store.principal_by_token(&secret_hash(token)).await
    }

    /// Adds a person to the caller's workspace (admins). A new account gets
    /// no password: the answer carries a one-time link for the person to
    /// choose one. An existing account gets nothing but the membership (an
    /// admin never holds a credential of someone who has one); one still
    /// waiting for its first password gets a fresh link only when it belongs
    /// to no other workspace, so an admin elsewhere cannot claim it.
    pub async fn add_member(
        &self,
        who: &Principal,
        email: &str,
        role: Role,
    ) -> Result<AddedUser, AccountError> {
        crate::ops::require_admin(who)?;
        let normalized = normalize_email(email)?;
        if let Some(user) = self.store.user_by_email(&normalized).await? {
            let elsewhere = self
                .store
                .workspaces_of(user.id)
                .await?
                .iter()
                .any(|w| w.id != who.workspace_id);
            if elsewhere || user.password_hash != NO_PASSWORD {
                let workspace_id = who.workspace_id;
                self.set_membership(
                    user.id,
                    workspace_id,
                    &who.workspace_name,
                    &normalized,
                    role,
                )
                .await?;
                return Ok(AddedUser {
                    user_id: user.id,
                    workspace_id,
                    created_user: false,
                    created_workspace: false,
                    set_password_link: None,
                });
            }
        }
        self.add_user(email, &who.workspace_name, role, None).await
    }

    /// Changes a member's role in the caller's workspace (admins). The last
    /// admin stays an admin.
    pub async fn set_member_role(
        &self,
        who: &Principal,
        user_id: i64,
        role: Role,
    ) -> Result<(), AccountError> {
        crate::ops::require_admin(who)?;
        let member = self.member(who, user_id).await?;
        self.set_membership(
            user_id,
            who.workspace_id,
            &who.workspace_name,
            &member.email,
            role,
        )
        .await
    }

    /// Takes a member out of the caller's workspace (admins): their sessions
    /// and tokens there stop working at once. The last admin stays.
    pub async fn remove_member(&self, who: &Principal, user_id: i64) -> Result<(), AccountError> {
        crate::ops::require_admin(who)?;
        let member = self.member(who, user_id).await?;
        self.remove_from(who.workspace_id, &who.workspace_name, &member)
            .await
    }

    /// Takes `email` out of `workspace` (the operator's `user remove`).
    pub async fn remove_user(&self, email: &str, workspace: &str) -> Result<(), AccountError> {
        let email = normalize_email(email)?;
        let workspace_id = self.store.workspace_id(workspace).await?.ok_or_else(|| {
            AccountError::Invalid(format!("workspace {workspace:?}: no such workspace"))
        })?;
        let member = self
            .store
            .members_of(workspace_id)
            .await?
            .into_iter()
            .find(|m| m.email == email)
            .ok_or_else(|| {
                AccountError::Invalid(format!("{email} is not a member of {workspace:?}"))
            })?;
        self.remove_from(workspace_id, workspace, &member).await
    }

    async fn remove_from(
        &self,
        workspace_id: i64,
        workspace: &str,
        member: &model::Member,
    ) -> Result<(), AccountError> {
        match self
            .store
            .remove_membership(member.user_id, workspace_id)
            .await?
        {
            Removal::Removed => Ok(()),
            Removal::LastAdmin => Err(last_admin(&member.email, workspace)),
            Removal::NotAMember => {
                Err(StoreError::NotFound(format!("member {}", member.user_id)).into())
            }
        }
    }

    /// Gives `user_id` `role` in the workspace, refused when it would
    /// demote the last admin (checked in the same write).
    async fn set_membership(
        &self,
        user_id: i64,
        workspace_id: i64,
        workspace: &str,
        email: &str,
        role: Role,
    ) -> Result<(), AccountError> {
        if self
            .store
            .set_membership(user_id, workspace_id, role)
            .await?
        {
            Ok(())
        } else {
            Err(last_admin(email, workspace))
        }
    }

    async fn member(&self, who: &Principal, user_id: i64) -> Result<model::Member, AccountError> {
        self.store
            .members_of(who.workspace_id)
            .await?
            .into_iter()
            .find(|m| m.user_id == user_id)
            .ok_or_else(|| StoreError::NotFound(format!("member {user_id}")).into())
    }

    /// Adding someone again with a lesser role is a change of role: the last
    /// admin stays an admin. Checked first, so that nothing else changes
    /// (a password) when it is refused; the write checks again.
    async fn keep_an_admin_if_demoted(
        &self,
        workspace_id: i64,
        workspace: &str,
        email: &str,
        role: Role,
    ) -> Result<(), AccountError> {
        if role == Role::Admin {
            return Ok(());
        }
        let members = self.store.members_of(workspace_id).await?;
        let admins = || members.iter().filter(|m| m.role == Role::Admin);
        let demoted = admins().any(|m| m.email == email);
        if demoted && admins().count() <= 1 {
            return Err(last_admin(email, workspace));
        }
        Ok(())
    }

    /// Fails with not found unless `owned` is in the caller's workspace.
    pub async fn authorize(&self, who: &Principal, owned: Owned) -> Result<(), StoreError> {
        self.store.check_owner(who.workspace_id, owned).await
    }

    /// The signed-in person as the pages need them.
    pub async fn viewer(&self, who: &Principal) -> Result<Viewer, StoreError> {
        Ok(Viewer {
            email: who.email.clone(),
            workspace: who.workspace(),
            workspaces: self.store.workspaces_of(who.user_id).await?,
            pack_labels: self.store.pack_labels(who.user_id).await?,
        })
    }

    /// Shows `packs` as `who` sees them: with their own short labels.
    pub async fn relabel(
        &self,
        who: &Principal,
        packs: &mut [model::PackConfig],
    ) -> Result<(), StoreError> {
        let labels = self.store.pack_labels(who.user_id).await?;
        for pack in packs {
            if let Some(label) = labels.get(&pack.pack_id) {
                pack.short_label.clone_from(label);
            }
        }
        Ok(())
    }

    /// Sets or clears (`None` or blank) a user's own label for a pack. The
    /// label must not be one this user already sees on another pack.
    pub async fn set_pack_label(
        &self,
        who: &Principal,
        pack_id: &str,
        label: Option<&str>,
    ) -> Result<(), AccountError> {
        let label = label.map(str::trim).filter(|l| !l.is_empty());
        let labels = self.store.pack_labels(who.user_id).await?;
        {
            let catalog = self.catalog_in(Some(who.workspace_id)).await?;
            let Some(pack) = catalog.pack(pack_id) else {
                return Err(AccountError::Invalid(format!(
                    "pack {pack_id:?}: no such pack"
                )));
            };
            if let Some(label) = label {
                model::account::check_pack_label(label).map_err(AccountError::Invalid)?;
            }
            // What this user would see on the pack afterwards must be theirs alone.
            let shown = label.unwrap_or(pack.short_label.as_str());
            let clash = catalog.packs().iter().find(|p| {
                p.pack_id != pack_id
                    && labels
                        .get(&p.pack_id)
                        .map_or(p.short_label.as_str(), String::as_str)
                        .eq_ignore_ascii_case(shown)
            });
            if let Some(other) = clash {
                return Err(AccountError::Invalid(format!(
                    "label {shown:?} is already what you see for pack {:?}; pick another",
                    other.pack_id
                )));
            }
        }
        self.store
            .set_pack_label(who.user_id, pack_id, label)
            .await?;
        Ok(())
    }

    /// First run: when nobody has an account yet, creates the workspace
    /// `workspace` with an admin `email` and a generated password, and gives
    /// it the record sets stored before accounts existed. Returns the
    /// password to show once, or `None` when accounts already exist.
    pub async fn bootstrap(
        &self,
        email: &str,
        workspace: &str,
    ) -> Result<Option<(AddedUser, String, u64)>, AccountError> {
        if self.store.user_count().await? > 0 {
            return Ok(None);
        }
        let password = generate_password();
        let added = self
            .add_user(email, workspace, Role::Admin, Some(password.clone()))
            .await?;
        let adopted = self
            .store
            .adopt_unowned_record_sets(added.workspace_id)
            .await?;
        Ok(Some((added, password, adopted)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised_and_checked() {
        assert_eq!(
            normalize_email(" Ada@Example.ORG ").unwrap(),
            "ada@example.org"
        );
        for bad in [
            "",
            "ada",
            "@example.org",
            "ada@localhost",
            "a da@example.org",
            "a@b@c.d",
        ] {
            assert!(normalize_email(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn passwords_verify_only_against_their_own_hash() {
        let hash = hash_password("correct horse battery").unwrap();
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(verify_password("correct horse battery", &hash));
        assert!(!verify_password("correct horse battery!", &hash));
        assert!(!verify_password("anything", "not a hash"));
    }

    #[test]
    fn tokens_are_random_prefixed_and_stored_as_hashes() {
        let (a, hash_a) = generate_token();
        let (b, _) = generate_token();
        assert_ne!(a, b);
        assert!(a.starts_with(TOKEN_PREFIX));
        assert_eq!(hash_a, secret_hash(&a));
        assert_eq!(hash_a.len(), 64);
        assert!(!hash_a.contains(&a));
        assert!(generate_password().len() >= 24);
    }

    #[tokio::test]
    async fn users_tokens_and_access_stay_in_their_workspace() {
        for db in crate::store::testing::all().await {
            let engine = crate::store::testing::engine(&db).await;
            let short = engine
                .add_user("a@example.org", "one", Role::Admin, Some("short".into()))
                .await;
            assert!(matches!(short, Err(AccountError::Invalid(m)) if m.contains("password")));

            let ada = engine
                .add_user("Ada@example.org", "one", Role::Admin, None)
                .await
                .unwrap();
            assert!(ada.created_user && ada.created_workspace);
            let link = ada.set_password_link.clone().unwrap();
            let token = link.strip_prefix("/set-password#").unwrap();
            let password = "ada's own long password".to_owned();
            engine
                .set_password_with_link(token, password.clone())
                .await
                .unwrap();
            assert_eq!(
                engine
                    .check_password("ada@EXAMPLE.org", &password)
                    .await
                    .unwrap(),
                Some(ada.user_id)
            );
            assert_eq!(
                engine
                    .check_password("ada@example.org", "wrong password")
                    .await
                    .unwrap(),
                None
            );
            assert_eq!(
                engine
                    .check_password("nobody@example.org", &password)
                    .await
                    .unwrap(),
                None
            );

            let bob = engine
                .add_user(
                    "bob@example.org",
                    "two",
                    Role::Member,
                    Some("bob's long password".into()),
                )
                .await
                .unwrap();
            let set_two = engine
                .store
                .create_record_set(bob.workspace_id, "Two's", "social-profiles", false, &[])
                .await
                .unwrap();
            let ada_in_one = engine
                .default_principal(ada.user_id)
                .await
                .unwrap()
                .unwrap();
            assert!(ada_in_one.is_admin());
            let err = engine
                .authorize(&ada_in_one, Owned::RecordSet(set_two))
                .await
                .unwrap_err();
            assert!(matches!(err, StoreError::NotFound(_)), "{err}");

            let (id, token) = engine.create_token("bob@example.org", "two").await.unwrap();
            let bob_by_token = engine.principal_by_token(&token).await.unwrap().unwrap();
            assert_eq!(bob_by_token.workspace_id, bob.workspace_id);
            assert_eq!(bob_by_token.role, Role::Member);
            engine
                .authorize(&bob_by_token, Owned::RecordSet(set_two))
                .await
                .unwrap();
            assert!(engine.create_token("bob@example.org", "one").await.is_err());
            let used = engine.store.tokens(Some("bob@example.org")).await.unwrap();
            let used = used.iter().find(|t| t.id == id).unwrap().last_used_at;
            assert!(
                used.is_some(),
                "a token used is marked used ({})",
                db.kind()
            );
            engine.principal_by_token(&token).await.unwrap().unwrap();
            let again = engine.store.tokens(Some("bob@example.org")).await.unwrap();
            let again = again.iter().find(|t| t.id == id).unwrap().last_used_at;
            assert_eq!(again, used, "marked at most once a minute");

            assert!(engine.store.revoke_token(id).await.unwrap());
            assert!(
                engine.principal_by_token(&token).await.unwrap().is_none(),
                "{}",
                db.kind()
            );
            assert!(!engine.store.revoke_token(id).await.unwrap());
        }
    }

    fn token_of(link: &str) -> &str {
        link.strip_prefix("/set-password#")
            .expect("a set-password link")
    }

    #[tokio::test]
    async fn an_invitation_sets_a_password_once_and_no_admin_holds_another_s() {
        for db in crate::store::testing::all().await {
            let engine = crate::store::testing::engine(&db).await;
            let ada = engine
                .add_user(
                    "ada@example.org",
                    "one",
                    Role::Admin,
                    Some("ada's long password".into()),
                )
                .await
                .unwrap();
            assert!(ada.set_password_link.is_none());
            let in_one = engine
                .default_principal(ada.user_id)
                .await
                .unwrap()
                .unwrap();

            // A new member has no password until they choose one.
            let carol = engine
                .add_member(&in_one, "carol@example.org", Role::Member)
                .await
                .unwrap();
            let link = carol.set_password_link.clone().unwrap();
            assert_eq!(
                engine
                    .check_password("carol@example.org", NO_PASSWORD)
                    .await
                    .unwrap(),
                None
            );
            assert_eq!(
                engine
                    .check_password("carol@example.org", "")
                    .await
                    .unwrap(),
                None
            );
            // Too short: refused, and the link still works.
            assert!(engine
                .set_password_with_link(token_of(&link), "short".into())
                .await
                .is_err());
            let id = engine
                .set_password_with_link(token_of(&link), "carol's own password".into())
                .await
                .unwrap();
            assert_eq!(id, carol.user_id);
            assert_eq!(
                engine
                    .check_password("carol@example.org", "carol's own password")
                    .await
                    .unwrap(),
                Some(carol.user_id)
            );
            // Once only.
            let again = engine
                .set_password_with_link(token_of(&link), "someone else's password".into())
                .await
                .unwrap_err();
            assert!(again.to_string().contains("used already"), "{again}");

            // An admin of another workspace adding Carol gets no link, and
            // Carol's password stays hers.
            let bob = engine
                .add_user(
                    "bob@example.org",
                    "two",
                    Role::Admin,
                    Some("bob's long password".into()),
                )
                .await
                .unwrap();
            let in_two = engine
                .default_principal(bob.user_id)
                .await
                .unwrap()
                .unwrap();
            let added = engine
                .add_member(&in_two, "Carol@example.org", Role::Member)
                .await
                .unwrap();
            assert!(added.set_password_link.is_none() && !added.created_user);
            assert_eq!(
                engine
                    .check_password("carol@example.org", "carol's own password")
                    .await
                    .unwrap(),
                Some(carol.user_id)
            );

            // Someone invited in one workspace who has not chosen a password:
            // re-adding there gives a fresh link (the old one stops); an admin
            // elsewhere gets none, so cannot claim the account.
            let dan = engine
                .add_member(&in_one, "dan@example.org", Role::Member)
                .await
                .unwrap();
            let first = dan.set_password_link.unwrap();
            let fresh = engine
                .add_member(&in_one, "dan@example.org", Role::Member)
                .await
                .unwrap()
                .set_password_link
                .unwrap();
            assert!(engine
                .set_password_with_link(token_of(&first), "dan's long password".into())
                .await
                .is_err());
            let elsewhere = engine
                .add_member(&in_two, "dan@example.org", Role::Member)
                .await
                .unwrap();
            assert!(elsewhere.set_password_link.is_none());
            assert!(engine
                .set_password_with_link(token_of(&fresh), "dan's long password".into())
                .await
                .is_ok());

            // An expired link is refused.
            let eve = engine
                .add_member(&in_one, "eve@example.org", Role::Member)
                .await
                .unwrap();
            sqlx::query("UPDATE password_links SET expires_at = 0")
                .execute(engine.store.pool())
                .await
                .unwrap();
            let expired = engine
                .set_password_with_link(
                    token_of(&eve.set_password_link.unwrap()),
                    "eve's long password".into(),
                )
                .await
                .unwrap_err();
            assert!(
                expired.to_string().contains("expired"),
                "{expired} ({})",
                db.kind()
            );
        }
    }

    #[tokio::test]
    async fn a_new_password_needs_the_current_one_and_ends_the_other_sessions() {
        for db in crate::store::testing::all().await {
            let engine = crate::store::testing::engine(&db).await;
            let ada = engine
                .add_user(
                    "ada@example.org",
                    "one",
                    Role::Admin,
                    Some("ada's long password".into()),
                )
                .await
                .unwrap();
            for id in ["this", "phone", "laptop"] {
                engine
                    .store
                    .insert_session(id, Some(ada.user_id), "{}", i64::MAX)
                    .await
                    .unwrap();
            }
            engine
                .store
                .insert_session("someone", Some(ada.user_id + 1), "{}", i64::MAX)
                .await
                .unwrap();
            let wrong = engine
                .change_password(
                    ada.user_id,
                    "not it at all",
                    "a brand new password".into(),
                    Some("this"),
                )
                .await
                .unwrap_err();
            assert!(wrong.to_string().starts_with("current password"), "{wrong}");
            engine
                .change_password(
                    ada.user_id,
                    "ada's long password",
                    "a brand new password".into(),
                    Some("this"),
                )
                .await
                .unwrap();
            assert_eq!(
                engine
                    .check_password("ada@example.org", "a brand new password")
                    .await
                    .unwrap(),
                Some(ada.user_id)
            );
            assert_eq!(
                engine
                    .check_password("ada@example.org", "ada's long password")
                    .await
                    .unwrap(),
                None
            );
            for (id, kept) in [
                ("this", true),
                ("phone", false),
                ("laptop", false),
                ("someone", true),
            ] {
                assert_eq!(
                    engine.store.load_session(id).await.unwrap().is_some(),
                    kept,
                    "{id} ({})",
                    db.kind()
                );
            }
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn two_admins_demoting_or_removing_each_other_at_once_leave_one() {
        for db in crate::store::testing::all().await {
            let engine = crate::store::testing::engine(&db).await;
            for round in 0..10 {
                let workspace = format!("race{round}");
                let mut who = Vec::new();
                for email in ["ada@example.org", "bo@example.org"] {
                    let added = engine
                        .add_user(email, &workspace, Role::Admin, None)
                        .await
                        .unwrap();
                    who.push(
                        engine
                            .store
                            .principal(added.user_id, added.workspace_id)
                            .await
                            .unwrap()
                            .unwrap(),
                    );
                }
                let (ada, bo) = (&who[0], &who[1]);
                // Even rounds demote, odd ones remove: each admin the other.
                let (a, b) = if round % 2 == 0 {
                    tokio::join!(
                        engine.set_member_role(ada, bo.user_id, Role::Member),
                        engine.set_member_role(bo, ada.user_id, Role::Member),
                    )
                } else {
                    tokio::join!(
                        engine.remove_member(ada, bo.user_id),
                        engine.remove_member(bo, ada.user_id),
                    )
                };
                let admins = engine
                    .store
                    .members_of(ada.workspace_id)
                    .await
                    .unwrap()
                    .into_iter()
                    .filter(|m| m.role == Role::Admin)
                    .count();
                assert_eq!(admins, 1, "{} round {round}: {a:?} {b:?}", db.kind());
                let refused = [&a, &b]
                    .iter()
                    .filter(
                        |r| matches!(r, Err(AccountError::Invalid(m)) if m.contains("last admin")),
                    )
                    .count();
                assert_eq!(refused, 1, "{} round {round}: {a:?} {b:?}", db.kind());
            }
        }
    }

    #[tokio::test]
    async fn adding_the_last_admin_again_as_a_member_does_not_demote_them() {
        let db = crate::store::testing::sqlite();
        let engine = crate::store::testing::engine(&db).await;
        let ada = engine
            .add_user("ada@example.org", "one", Role::Admin, None)
            .await
            .unwrap();
        let who = engine
            .default_principal(ada.user_id)
            .await
            .unwrap()
            .unwrap();
        let err = engine
            .add_member(&who, "ada@example.org", Role::Member)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("last admin"), "{err}");
        let members = engine.store.members_of(who.workspace_id).await.unwrap();
        assert_eq!(members[0].role, Role::Admin, "still an admin");
        // With a second admin, the first may become a member.
        engine
            .add_member(&who, "bo@example.org", Role::Admin)
            .await
            .unwrap();
        engine
            .add_member(&who, "ada@example.org", Role::Member)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn pack_labels_are_per_user_and_may_not_collide() {
        let db = crate::store::testing::sqlite();
        let engine = crate::store::testing::engine(&db).await;
        let ada = engine
            .add_user("ada@example.org", "one", Role::Member, None)
            .await
            .unwrap();
        let who = engine
            .default_principal(ada.user_id)
            .await
            .unwrap()
            .unwrap();
        let (first, second) = {
            let catalog = engine.catalog();
            let packs = catalog.packs();
            (packs[0].clone(), packs[1].clone())
        };
        engine
            .set_pack_label(&who, &first.pack_id, Some("zz"))
            .await
            .unwrap();
        assert_eq!(
            engine
                .viewer(&who)
                .await
                .unwrap()
                .label_of(&first.pack_id, "x"),
            "zz"
        );
        let clash = engine
            .set_pack_label(&who, &first.pack_id, Some(&second.short_label))
            .await
            .unwrap_err();
        assert!(clash.to_string().contains(&second.pack_id), "{clash}");
        // The pack's own label is free again once this user relabelled it.
        engine
            .set_pack_label(&who, &second.pack_id, Some(&first.short_label))
            .await
            .unwrap();
        engine
            .set_pack_label(&who, &first.pack_id, None)
            .await
            .unwrap_err();
        engine
            .set_pack_label(&who, &second.pack_id, Some(" "))
            .await
            .unwrap();
        engine
            .set_pack_label(&who, &first.pack_id, None)
            .await
            .unwrap();
        assert!(engine.viewer(&who).await.unwrap().pack_labels.is_empty());
    }
}
