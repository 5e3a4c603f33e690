//! Credentials: how people prove who they are. Passwords (argon2id, hashed
//! a few at a time off the runtime, a decoy for unknown addresses),
//! set-password links, known-browser marks and API tokens.
//!
//! Passwords are kept only as argon2id hashes; tokens and links only as
//! SHA-256 hashes. No such value is ever logged or returned after it is
//! first shown.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};

use super::accounts::{normalize_email, AccountError};
use crate::ops::OpError;
use crate::store::{Principal, Store, StoreError, TokenInfo};
use crate::Engine;

/// The fewest characters a password may have.
pub const MIN_PASSWORD_CHARS: usize = 10;
/// What every API token starts with, so a leaked one is easy to recognise.
pub const TOKEN_PREFIX: &str = "sy_";

/// How long a set-password link lasts.
pub const PASSWORD_LINK_DAYS: i64 = 7;
/// The page a set-password link opens. The link's secret follows `#`, so
/// it reaches neither a server log nor a `Referer`.
pub const SET_PASSWORD_PATH: &str = "/set-password";
/// The stored hash of an account that has no password yet (invited, link
/// not used): no password matches it.
pub(super) const NO_PASSWORD: &str = "!";

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

pub(super) async fn hash_password_blocking(password: String) -> Result<String, AccountError> {
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

impl Engine {
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
    pub async fn password_link_for(&self, email: &str) -> Result<String, OpError> {
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
    ) -> Result<i64, OpError> {
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
    ) -> Result<(), OpError> {
        check_new_password(&new)?;
        let user = self
            .store
            .user(user_id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("user {user_id}")))?;
        if !verify_in_turn(current, Some(user.password_hash)).await {
            return Err(AccountError::Invalid(
                "current password: it is not this account's password".to_owned(),
            )
            .into());
        }
        self.set_password(user_id, new).await?;
        self.store.retire_password_links(user_id).await?;
        self.store.delete_sessions_of(user_id, keep).await?;
        Ok(())
    }

    /// Stores a password its caller has checked (`check_new_password`).
    pub(super) async fn set_password(
        &self,
        user_id: i64,
        password: String,
    ) -> Result<(), AccountError> {
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
    ) -> Result<(i64, String), OpError> {
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
            ))
            .into());
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
}

/// Browser sessions as the server's session layer keeps them: one row per
/// session, by the hash of its id, with its data and expiry.
#[derive(Clone, Debug)]
pub struct Sessions(Store);

impl Sessions {
    /// Stores a new session; `false` when its id is taken.
    pub async fn insert(
        &self,
        id_hash: &str,
        user_id: Option<i64>,
        data: &str,
        expires_at: i64,
    ) -> Result<bool, StoreError> {
        self.0
            .insert_session(id_hash, user_id, data, expires_at)
            .await
    }

    /// Saves a session that exists; `false` when it ended meanwhile.
    pub async fn save(
        &self,
        id_hash: &str,
        user_id: Option<i64>,
        data: &str,
        expires_at: i64,
    ) -> Result<bool, StoreError> {
        self.0
            .save_session(id_hash, user_id, data, expires_at)
            .await
    }

    /// A session's data and expiry, if it is stored.
    pub async fn load(&self, id_hash: &str) -> Result<Option<(String, i64)>, StoreError> {
        self.0.load_session(id_hash).await
    }

    pub async fn delete(&self, id_hash: &str) -> Result<(), StoreError> {
        self.0.delete_session(id_hash).await
    }

    /// Forgets expired sessions; how many.
    pub async fn delete_expired(&self) -> Result<u64, StoreError> {
        self.0.delete_expired_sessions().await
    }
}

impl Engine {
    /// Where browser sessions are kept.
    pub fn sessions(&self) -> Sessions {
        Sessions(self.store.clone())
    }

    /// Revokes a token by its id (the operator's command); whether it was
    /// live.
    pub async fn revoke_token(&self, id: i64) -> Result<bool, StoreError> {
        self.store.revoke_token(id).await
    }

    /// Revokes the token with this value (the operator's command); its id
    /// when it was live.
    pub async fn revoke_token_value(&self, token: &str) -> Result<Option<i64>, StoreError> {
        self.store.revoke_token_by_hash(&secret_hash(token)).await
    }

    /// Who a person is in a workspace now: `None` once they are no longer
    /// a member (checked on every request a session makes).
    pub async fn principal(
        &self,
        user_id: i64,
        workspace_id: i64,
    ) -> Result<Option<Principal>, StoreError> {
        self.store.principal(user_id, workspace_id).await
    }

    /// Every token (never its value), or one person's (the operator's
    /// command).
    pub async fn tokens(&self, email: Option<&str>) -> Result<Vec<TokenInfo>, StoreError> {
        self.store.tokens(email).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
