//! Credential operations: how a caller proves who they are. Sign-in
//! (passwords checked a few at a time, a decoy for unknown addresses),
//! set-password links, known-browser marks, API tokens, sessions, and the
//! operator's token commands.

use std::collections::HashSet;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::Mac;

use crate::ops::OpError;
use crate::store::{StoreError, TokenInfo};
use crate::tenancy::accounts::{normalize_email, AccountError};
use crate::tenancy::credentials::{
    browser_mac, check_new_password, generate_token, hash_password_blocking, hex, random_bytes,
    secret_hash, unhex, verify_in_turn, Held, Proof, Sessions, PASSWORD_LINK_DAYS,
    SET_PASSWORD_PATH, TOKEN_PREFIX,
};
use crate::tenancy::Principal;
use crate::Engine;

impl Engine {
    /// A new one-time link for a user to choose their password with; their
    /// earlier unused links stop working.
    pub async fn password_link(&self, user_id: i64) -> Result<String, StoreError> {
        self.store.retire_password_links(user_id).await?;
        let token = URL_SAFE_NO_PAD.encode(random_bytes::<32>());
        let expires = self.store.now_ms() + PASSWORD_LINK_DAYS * 24 * 3600 * 1000;
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
    pub(crate) async fn set_password(
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

    /// Which of these still hold, in their order: each token neither
    /// revoked nor its holder's membership removed, each session neither
    /// signed out, ended by a new password nor expired, and its person
    /// still a member of its workspace. Three queries, however many there
    /// are (the periodic check of every open stream in a process).
    pub async fn still_held(&self, held: &[Held]) -> Result<Vec<bool>, StoreError> {
        let token_hash = |proof: &Proof| match proof {
            Proof::Token(value) if value.starts_with(TOKEN_PREFIX) => Some(secret_hash(value)),
            _ => None,
        };
        let hashes: Vec<Option<String>> = held.iter().map(|h| token_hash(&h.proof)).collect();
        let asked: Vec<&str> = hashes.iter().flatten().map(String::as_str).collect();
        let tokens: HashSet<(String, i64, i64)> = if asked.is_empty() {
            HashSet::new()
        } else {
            self.store
                .live_token_holders(&asked)
                .await?
                .into_iter()
                .collect()
        };
        let sessions: Vec<&str> = held
            .iter()
            .filter_map(|h| match &h.proof {
                Proof::Session(id_hash) => Some(id_hash.as_str()),
                Proof::Token(_) => None,
            })
            .collect();
        let (live_sessions, members): (HashSet<String>, HashSet<(i64, i64)>) =
            if sessions.is_empty() {
                Default::default()
            } else {
                let mut people: Vec<i64> = held
                    .iter()
                    .filter(|h| matches!(h.proof, Proof::Session(_)))
                    .map(|h| h.user_id)
                    .collect();
                people.sort_unstable();
                people.dedup();
                (
                    self.store
                        .live_sessions(&sessions)
                        .await?
                        .into_iter()
                        .collect(),
                    self.store
                        .memberships_of(&people)
                        .await?
                        .into_iter()
                        .collect(),
                )
            };
        Ok(held
            .iter()
            .zip(hashes)
            .map(|(h, hash)| match (&h.proof, hash) {
                (Proof::Token(_), Some(hash)) => {
                    tokens.contains(&(hash, h.user_id, h.workspace_id))
                }
                (Proof::Token(_), None) => false,
                (Proof::Session(id_hash), _) => {
                    live_sessions.contains(id_hash)
                        && members.contains(&(h.user_id, h.workspace_id))
                }
            })
            .collect())
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
