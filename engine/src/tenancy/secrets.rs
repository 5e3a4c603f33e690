//! Workspace secrets: API keys an admin sets for their workspace in the
//! browser. Values are sealed with AES-256-GCM under one key from the
//! server's environment (`SWITCHYARD_SECRETS_KEY`), bound to their workspace
//! and name, and opened only to fire a connector that declared it needs
//! them. Nothing here returns a value to a caller outside the engine.

use std::collections::BTreeMap;
use std::sync::Arc;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;

use crate::connectors::seam::Secrets;
use crate::store::{Store, StoreError};

/// The environment variable holding the sealing key.
pub const KEY_VAR: &str = "SWITCHYARD_SECRETS_KEY";

/// The longest secret value accepted.
pub const MAX_VALUE: usize = 4096;

const NONCE_LEN: usize = 12;

/// Why a secret could not be set, cleared or opened.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("workspace secrets are off: the server needs {KEY_VAR} (32 random bytes in base64, e.g. from `openssl rand -base64 32`) in its environment")]
    NoKey,
    #[error("{KEY_VAR} is not a key: expected 32 bytes in base64 (44 characters)")]
    BadKey,
    #[error("{0}")]
    Invalid(String),
    #[error("secret {0} is not set")]
    NotSet(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    NotAdmin(#[from] crate::ops::NotAdmin),
}

/// Seals and opens secret values. Cheap to clone; Debug shows nothing.
#[derive(Clone)]
pub struct Sealer {
    cipher: Arc<Aes256Gcm>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

fn binding(workspace_id: i64, name: &str) -> String {
    format!("switchyard secret {workspace_id}/{name}")
}

impl Sealer {
    /// A sealer from the key's text: 32 bytes in base64.
    pub fn from_key_text(text: &str) -> Result<Self, SecretsError> {
        let bytes = B64.decode(text.trim()).map_err(|_| SecretsError::BadKey)?;
        let cipher = Aes256Gcm::new_from_slice(&bytes).map_err(|_| SecretsError::BadKey)?;
        Ok(Self {
            cipher: Arc::new(cipher),
        })
    }

    /// The sealer from `SWITCHYARD_SECRETS_KEY`; `None` when it is unset.
    pub fn from_env() -> Result<Option<Self>, SecretsError> {
        match std::env::var(KEY_VAR) {
            Ok(text) if !text.trim().is_empty() => Self::from_key_text(&text).map(Some),
            _ => Ok(None),
        }
    }

    /// Seals a value for one workspace and name: base64 of nonce and
    /// ciphertext. A sealed value moved to another row does not open.
    pub fn seal(&self, workspace_id: i64, name: &str, value: &str) -> Result<String, SecretsError> {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let aad = binding(workspace_id, name);
        let sealed = self
            .cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: value.as_bytes(),
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| SecretsError::Invalid("the value could not be sealed".to_owned()))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(B64.encode(out))
    }

    /// Opens a sealed value; `None` when it does not open with this key
    /// for this workspace and name.
    pub fn open(&self, workspace_id: i64, name: &str, sealed: &str) -> Option<String> {
        let bytes = B64.decode(sealed).ok()?;
        if bytes.len() <= NONCE_LEN {
            return None;
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let aad = binding(workspace_id, name);
        let plain = self
            .cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: aad.as_bytes(),
                },
            )
            .ok()?;
        String::from_utf8(plain).ok()
    }
}

pub(crate) fn check_value(value: &str) -> Result<&str, SecretsError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(SecretsError::Invalid(
            "the value is empty: to remove a secret, clear it".to_owned(),
        ));
    }
    if value.len() > MAX_VALUE {
        return Err(SecretsError::Invalid(format!(
            "the value is longer than {MAX_VALUE} bytes"
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(SecretsError::Invalid(
            "the value holds a line break or another control character".to_owned(),
        ));
    }
    Ok(value)
}

/// Opens a workspace's secrets; one that does not open (the key changed) is
/// left out and named in the log, never shown.
pub async fn open_all(
    store: &Store,
    sealer: Option<&Sealer>,
    workspace_id: i64,
) -> Result<Secrets, StoreError> {
    let sealed = store.sealed_secrets(workspace_id).await?;
    if sealed.is_empty() {
        return Ok(Secrets::default());
    }
    let Some(sealer) = sealer else {
        tracing::warn!(
            workspace = workspace_id,
            "This workspace has secrets but {KEY_VAR} is not set; they are not used."
        );
        return Ok(Secrets::default());
    };
    let mut open = BTreeMap::new();
    for (name, value) in sealed {
        match sealer.open(workspace_id, &name, &value) {
            Some(v) => {
                open.insert(name, v);
            }
            None => tracing::warn!(
                workspace = workspace_id,
                secret = %name,
                "A workspace secret does not open with {KEY_VAR}; set it again."
            ),
        }
    }
    Ok(Secrets::new(open))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer() -> Sealer {
        Sealer::from_key_text(&B64.encode([7u8; 32])).unwrap()
    }

    #[test]
    fn a_sealed_value_opens_only_for_its_workspace_and_name() {
        let s = sealer();
        let sealed = s.seal(1, "EXA_API_KEY", "exa-secret-value").unwrap();
        assert!(!sealed.contains("exa-secret-value"));
        assert_eq!(
            s.open(1, "EXA_API_KEY", &sealed).as_deref(),
            Some("exa-secret-value")
        );
        assert_eq!(s.open(2, "EXA_API_KEY", &sealed), None);
        assert_eq!(s.open(1, "OTHER_KEY", &sealed), None);
        let other = Sealer::from_key_text(&B64.encode([8u8; 32])).unwrap();
        assert_eq!(other.open(1, "EXA_API_KEY", &sealed), None);
        assert_eq!(s.open(1, "EXA_API_KEY", "not base64!"), None);
        assert_eq!(s.open(1, "EXA_API_KEY", &B64.encode([1u8; 5])), None);
    }

    #[test]
    fn the_same_value_seals_differently_each_time() {
        let s = sealer();
        assert_ne!(s.seal(1, "K", "v").unwrap(), s.seal(1, "K", "v").unwrap());
    }

    #[test]
    fn a_key_must_be_32_bytes_of_base64() {
        assert!(matches!(
            Sealer::from_key_text("short"),
            Err(SecretsError::BadKey)
        ));
        assert!(matches!(
            Sealer::from_key_text(&B64.encode([1u8; 16])),
            Err(SecretsError::BadKey)
        ));
        assert!(format!("{:?}", sealer()).contains(".."));
    }

    #[test]
    fn values_are_checked() {
        assert!(check_value("  ").is_err());
        assert!(check_value("a\nb").is_err());
        assert!(check_value(&"x".repeat(MAX_VALUE + 1)).is_err());
        assert_eq!(check_value(" key ").unwrap(), "key");
    }

    #[test]
    fn secrets_debug_shows_names_only() {
        let s = Secrets::new(BTreeMap::from([("K".to_owned(), "v4lue".to_owned())]));
        let shown = format!("{s:?}");
        assert!(shown.contains('K') && !shown.contains("v4lue"));
    }
}
