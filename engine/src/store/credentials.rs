//! How people prove who they are, in the database: API tokens (kept as
//! hashes), browser sessions and set-password links.

use super::accounts::PRINCIPAL;
use super::{Store, StoreError};
use crate::tenancy::Principal;

/// An API token as listed (never its value).
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct TokenInfo {
    pub id: i64,
    pub email: String,
    pub workspace: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// A live token's holder, and when the token was last used.
#[derive(sqlx::FromRow)]
struct TokenHolder {
    #[sqlx(flatten)]
    principal: Principal,
    last_used_at: Option<i64>,
}

impl Store {
    /// Stores a new API token's hash; returns its id.
    pub async fn create_token(
        &self,
        user_id: i64,
        workspace_id: i64,
        token_hash: &str,
    ) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "INSERT INTO api_tokens (user_id, workspace_id, token_hash, created_at) \
             VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(user_id)
        .bind(workspace_id)
        .bind(token_hash)
        .bind(self.now_ms())
        .fetch_one(self.pool())
        .await?)
    }

    /// Who a token acts as: nobody when it is unknown, revoked, or its user
    /// has left the workspace. Marks it used.
    pub async fn principal_by_token(
        &self,
        token_hash: &str,
    ) -> Result<Option<Principal>, StoreError> {
        let row: Option<TokenHolder> = sqlx::query_as(&format!(
            "SELECT p.*, t.last_used_at FROM ({PRINCIPAL}) p JOIN api_tokens t \
             ON t.user_id = p.user_id AND t.workspace_id = p.workspace_id \
             WHERE t.token_hash = $1 AND t.revoked_at IS NULL"
        ))
        .bind(token_hash)
        .fetch_optional(self.pool())
        .await?;
        let Some(TokenHolder {
            principal,
            last_used_at: last_used,
        }) = row
        else {
            return Ok(None);
        };
        // At most one write a minute per token, not one per request: a
        // client calling hundreds of times a second costs one read each.
        let now = self.now_ms();
        if last_used.is_none_or(|at| at < now - 60_000) {
            sqlx::query(
                "UPDATE api_tokens SET last_used_at = $1 WHERE token_hash = $2 \
                 AND (last_used_at IS NULL OR last_used_at < $3)",
            )
            .bind(now)
            .bind(token_hash)
            .bind(now - 60_000)
            .execute(self.pool())
            .await?;
        }
        Ok(Some(principal))
    }

    /// Of these token hashes, the live ones whose holder is still a member,
    /// with who they act as; marks them used (at most once a minute each).
    /// For the periodic check of every open stream at once.
    pub async fn live_token_holders(
        &self,
        token_hashes: &[&str],
    ) -> Result<Vec<(String, i64, i64)>, StoreError> {
        let now = self.now_ms();
        let mut live = Vec::new();
        for chunk in token_hashes.chunks(500) {
            let sql = format!(
                "SELECT t.token_hash, t.user_id, t.workspace_id FROM api_tokens t \
                 JOIN memberships m ON m.user_id = t.user_id AND m.workspace_id = t.workspace_id \
                 WHERE t.revoked_at IS NULL AND t.token_hash IN ({})",
                super::placeholders(chunk.len())
            );
            let mut holders = sqlx::query_as::<_, (String, i64, i64)>(&sql);
            for hash in chunk {
                holders = holders.bind(*hash);
            }
            live.extend(holders.fetch_all(self.pool()).await?);
            let sql = format!(
                "UPDATE api_tokens SET last_used_at = $1 WHERE revoked_at IS NULL \
                 AND (last_used_at IS NULL OR last_used_at < $2) AND token_hash IN ({})",
                super::placeholders_after(2, chunk.len())
            );
            let mut used = sqlx::query(&sql).bind(now).bind(now - 60_000);
            for hash in chunk {
                used = used.bind(*hash);
            }
            used.execute(self.pool()).await?;
        }
        Ok(live)
    }

    /// Of these sessions (by the hash of their id), the ones still stored
    /// and not expired.
    pub async fn live_sessions(&self, id_hashes: &[&str]) -> Result<Vec<String>, StoreError> {
        let now = self.now_ms();
        let mut live = Vec::new();
        for chunk in id_hashes.chunks(500) {
            let sql = format!(
                "SELECT id_hash FROM sessions WHERE expires_at > $1 AND id_hash IN ({})",
                super::placeholders_after(1, chunk.len())
            );
            let mut query = sqlx::query_scalar::<_, String>(&sql).bind(now);
            for hash in chunk {
                query = query.bind(*hash);
            }
            live.extend(query.fetch_all(self.pool()).await?);
        }
        Ok(live)
    }

    /// Revokes a token by id; `false` when there is no such live token.
    pub async fn revoke_token(&self, id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
        )
        .bind(self.now_ms())
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Revokes a token by the hash of its value; returns its id if it was live.
    pub async fn revoke_token_by_hash(&self, token_hash: &str) -> Result<Option<i64>, StoreError> {
        let id: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL",
        )
        .bind(token_hash)
        .fetch_optional(self.pool())
        .await?;
        if let Some(id) = id {
            self.revoke_token(id).await?;
        }
        Ok(id)
    }

    /// Every token, or those of one user, newest first.
    pub async fn tokens(&self, email: Option<&str>) -> Result<Vec<TokenInfo>, StoreError> {
        let sql = "SELECT t.id, u.email, w.name AS workspace, t.created_at, t.last_used_at, \
             t.revoked_at FROM api_tokens t JOIN users u ON u.id = t.user_id \
             JOIN workspaces w ON w.id = t.workspace_id";
        Ok(match email {
            Some(email) => {
                sqlx::query_as(&format!("{sql} WHERE u.email = $1 ORDER BY t.id DESC"))
                    .bind(email)
                    .fetch_all(self.pool())
                    .await?
            }
            None => {
                sqlx::query_as(&format!("{sql} ORDER BY t.id DESC"))
                    .fetch_all(self.pool())
                    .await?
            }
        })
    }

    /// A live session's data by the hash of its id.
    pub async fn load_session(&self, id_hash: &str) -> Result<Option<(String, i64)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT data, expires_at FROM sessions WHERE id_hash = $1 AND expires_at > $2",
        )
        .bind(id_hash)
        .bind(self.now_ms())
        .fetch_optional(self.pool())
        .await?)
    }

    /// Stores a new session of `user_id` (if signed in yet); `false` when
    /// the id is taken.
    pub async fn insert_session(
        &self,
        id_hash: &str,
        user_id: Option<i64>,
        data: &str,
        expires_at: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "INSERT INTO sessions (id_hash, user_id, data, expires_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id_hash) DO NOTHING",
        )
        .bind(id_hash)
        .bind(user_id)
        .bind(data)
        .bind(expires_at)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Saves a live session's changes; `false` when it is no longer there
    /// (signed out, ended by a new password or a removal, or expired while
    /// the request ran): a request that loaded it before never brings it
    /// back.
    pub async fn save_session(
        &self,
        id_hash: &str,
        user_id: Option<i64>,
        data: &str,
        expires_at: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE sessions SET user_id = $2, data = $3, expires_at = $4 \
             WHERE id_hash = $1 AND expires_at > $5",
        )
        .bind(id_hash)
        .bind(user_id)
        .bind(data)
        .bind(expires_at)
        .bind(self.now_ms())
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Ends every session of a user but the one whose id hashes to `keep`;
    /// returns how many ended.
    pub async fn delete_sessions_of(
        &self,
        user_id: i64,
        keep: Option<&str>,
    ) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND id_hash <> $2")
            .bind(user_id)
            .bind(keep.unwrap_or(""))
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// Keeps a set-password link of `user_id` (by the hash of its secret).
    pub async fn create_password_link(
        &self,
        user_id: i64,
        token_hash: &str,
        expires_at: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO password_links (token_hash, user_id, created_at, expires_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(token_hash)
        .bind(user_id)
        .bind(self.now_ms())
        .bind(expires_at)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Uses a live set-password link, once: the user it is for, or `None`
    /// when it is unknown, used or expired. Two uses at once: one wins.
    pub async fn take_password_link(&self, token_hash: &str) -> Result<Option<i64>, StoreError> {
        let now = self.now_ms();
        Ok(sqlx::query_scalar(
            "UPDATE password_links SET used_at = $1 \
             WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1 RETURNING user_id",
        )
        .bind(now)
        .bind(token_hash)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Makes a user's unused links worthless (a new one replaces them).
    pub async fn retire_password_links(&self, user_id: i64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE password_links SET used_at = $1 WHERE user_id = $2 AND used_at IS NULL",
        )
        .bind(self.now_ms())
        .bind(user_id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn delete_session(&self, id_hash: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sessions WHERE id_hash = $1")
            .bind(id_hash)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Forgets expired sessions; returns how many.
    pub async fn delete_expired_sessions(&self) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM sessions WHERE expires_at <= $1")
            .bind(self.now_ms())
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }
}
