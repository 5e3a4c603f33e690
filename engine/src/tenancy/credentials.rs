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

use super::accounts::AccountError;
use crate::store::{Store, StoreError};

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
pub(crate) const NO_PASSWORD: &str = "!";

/// Whether a password someone chooses is long enough; the error says how long.
pub fn check_new_password(password: &str) -> Result<(), AccountError> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(AccountError::Invalid(format!(
            "password: use at least {MIN_PASSWORD_CHARS} characters"
        )));
    }
    Ok(())
}

pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
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
pub(crate) fn browser_mac(user_id: i64, password_hash: &str) -> Option<Hmac<Sha256>> {
    // HMAC takes keys of every length; the error is only in the signature.
    let mut mac = Hmac::<Sha256>::new_from_slice(password_hash.as_bytes()).ok()?;
    mac.update(format!("switchyard known browser v1:{user_id}").as_bytes());
    Some(mac)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
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

pub(crate) async fn hash_password_blocking(password: String) -> Result<String, AccountError> {
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
pub(crate) async fn verify_in_turn(password: &str, hash: Option<String>) -> bool {
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

/// What a long-lived answer (an event stream, a listening agent) proved
/// itself with, and as whom: checked again while it stays open.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Held {
    pub proof: Proof,
    pub user_id: i64,
    pub workspace_id: i64,
}

/// A token (its value) or a browser session (the hash of its id).
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Proof {
    Token(String),
    Session(String),
}

impl std::fmt::Debug for Proof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Proof::Token(_) => "Token(***)",
            Proof::Session(_) => "Session(***)",
        })
    }
}

/// Browser sessions as the server's session layer keeps them: one row per
/// session, by the hash of its id, with its data and expiry.
#[derive(Clone, Debug)]
pub struct Sessions(pub(crate) Store);

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
