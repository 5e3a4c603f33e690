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

use crate::store::{Owned, Principal, StoreError};
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
}

/// What `add_user` did.
#[derive(Debug)]
pub struct AddedUser {
    pub user_id: i64,
    pub workspace_id: i64,
    pub created_user: bool,
    pub created_workspace: bool,
    /// The password made up for a new user who was given none: show it once.
    pub generated_password: Option<String>,
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

fn check_password(password: &str) -> Result<(), AccountError> {
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
    tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|e| AccountError::Invalid(format!("password hashing stopped: {e}")))?
}

/// A hash of nothing anyone knows, checked when the email is unknown so that
/// an unknown address takes as long to refuse as a wrong password.
fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash_password(&generate_password()).unwrap_or_default())
}

impl Engine {
    /// Adds a user to a workspace with a role, creating either when missing.
    /// A new user without a password gets a generated one (returned once);
    /// an existing user given a password gets it as their new one.
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
            check_password(password)?;
        }
        let (workspace_id, created_workspace) = self.store.ensure_workspace(&workspace).await?;
        if role != Role::Admin {
            // Adding someone again with a lesser role is a change of role:
            // the last admin stays an admin.
            let current = self
                .store
                .members_of(workspace_id)
                .await?
                .into_iter()
                .find(|m| m.email == email);
            if let Some(member) = current.filter(|m| m.role == Role::Admin) {
                self.keep_an_admin(workspace_id, &workspace, &member)
                    .await?;
            }
        }
        let existing = self.store.user_by_email(&email).await?;
        let (user_id, created_user, generated_password) = match existing {
            Some(user) => {
                if let Some(password) = password {
                    let hash = hash_password_blocking(password).await?;
                    self.store.set_password_hash(user.id, &hash).await?;
                }
                (user.id, false, None)
            }
            None => {
                let (password, generated) = match password {
                    Some(p) => (p, None),
                    None => {
                        let p = generate_password();
                        (p.clone(), Some(p))
                    }
                };
                let hash = hash_password_blocking(password).await?;
                (
                    self.store.create_user(&email, &hash).await?,
                    true,
                    generated,
                )
            }
        };
        self.store
            .set_membership(user_id, workspace_id, role)
            .await?;
        Ok(AddedUser {
            user_id,
            workspace_id,
            created_user,
            created_workspace,
            generated_password,
        })
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
            Some(user) => (Some(user.id), user.password_hash),
            None => (None, decoy_hash().to_owned()),
        };
        let password = password.to_owned();
        let matches = tokio::task::spawn_blocking(move || verify_password(&password, &hash))
            .await
            .unwrap_or(false);
        Ok(id.filter(|_| matches))
    }

    /// What a browser that signed in as `email` keeps to show it did (see
    /// [`browser_mark`]); `None` for no such account.
    pub async fn browser_mark(&self, email: &str) -> Result<Option<String>, StoreError> {
        let Ok(email) = normalize_email(email) else {
            return Ok(None);
        };
        Ok(self
            .store
            .user_by_email(&email)
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

    /// Adds a person to the caller's workspace (admins); a new user gets a
    /// generated password, returned once for the admin to hand over.
    pub async fn add_member(
        &self,
        who: &Principal,
        email: &str,
        role: Role,
    ) -> Result<AddedUser, AccountError> {
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
        let member = self.member(who, user_id).await?;
        if member.role == Role::Admin && role != Role::Admin {
            self.keep_an_admin(who.workspace_id, &who.workspace_name, &member)
                .await?;
        }
        self.store
            .set_membership(user_id, who.workspace_id, role)
            .await?;
        Ok(())
    }

    /// Takes a member out of the caller's workspace (admins): their sessions
    /// and tokens there stop working at once. The last admin stays.
    pub async fn remove_member(&self, who: &Principal, user_id: i64) -> Result<(), AccountError> {
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
        if member.role == Role::Admin {
            self.keep_an_admin(workspace_id, workspace, member).await?;
        }
        self.store
            .remove_membership(member.user_id, workspace_id)
            .await?;
        Ok(())
    }

    async fn member(&self, who: &Principal, user_id: i64) -> Result<model::Member, AccountError> {
        self.store
            .members_of(who.workspace_id)
            .await?
            .into_iter()
            .find(|m| m.user_id == user_id)
            .ok_or_else(|| StoreError::NotFound(format!("member {user_id}")).into())
    }

    async fn keep_an_admin(
        &self,
        workspace_id: i64,
        workspace: &str,
        leaving: &model::Member,
    ) -> Result<(), AccountError> {
        let admins = self
            .store
            .members_of(workspace_id)
            .await?
            .into_iter()
            .filter(|m| m.role == Role::Admin)
            .count();
        if admins <= 1 {
            return Err(AccountError::Invalid(format!(
                "{} is the last admin of {workspace:?}: make someone else admin first",
                leaving.email
            )));
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
    ) -> Result<Option<(AddedUser, u64)>, AccountError> {
        if self.store.user_count().await? > 0 {
            return Ok(None);
        }
        let added = self.add_user(email, workspace, Role::Admin, None).await?;
        let adopted = self
            .store
            .adopt_unowned_record_sets(added.workspace_id)
            .await?;
        Ok(Some((added, adopted)))
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
            let password = ada.generated_password.clone().unwrap();
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

            assert!(engine.store.revoke_token(id).await.unwrap());
            assert!(
                engine.principal_by_token(&token).await.unwrap().is_none(),
                "{}",
                db.kind()
            );
            assert!(!engine.store.revoke_token(id).await.unwrap());
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
