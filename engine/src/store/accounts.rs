//! Accounts in the database: workspaces, users, memberships, per-user pack
//! labels, and which workspace owns a stored thing (how people prove who
//! they are is in `credentials`).

use std::collections::BTreeMap;

use model::{Role, WorkspaceRef};

use super::{Store, StoreError};
use crate::tenancy::Principal;

/// What taking someone out of a workspace did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    Removed,
    NotAMember,
    /// They are its last admin, and stay.
    LastAdmin,
}

/// A stored user with the hash to check a password against.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct UserRow {
    pub id: i64,
    pub email: String,
    pub password_hash: String,
}

/// A stored thing whose workspace decides who may reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owned {
    RecordSet(i64),
    Record(i64),
    Item(i64),
    Fire(i64),
    Job(i64),
    Call(i64),
}

impl Owned {
    fn describe(self) -> String {
        match self {
            Owned::RecordSet(id) => format!("record set {id}"),
            Owned::Record(id) => format!("record {id}"),
            Owned::Item(id) => format!("item {id}"),
            Owned::Fire(id) => format!("fire {id}"),
            Owned::Job(id) => format!("job {id}"),
            Owned::Call(id) => format!("call {id}"),
        }
    }

    fn owner_query(self) -> (&'static str, i64) {
        match self {
            Owned::Call(id) => ("SELECT workspace_id FROM calls WHERE id = $1", id),
            // A set still being imported is nobody's yet.
            Owned::RecordSet(id) => (
                "SELECT workspace_id FROM record_sets WHERE id = $1 AND importing_since IS NULL",
                id,
            ),
            Owned::Record(id) => (
                "SELECT s.workspace_id FROM records r JOIN record_sets s \
                 ON s.id = r.record_set_id WHERE r.id = $1 AND s.importing_since IS NULL",
                id,
            ),
            Owned::Item(id) => (
                "SELECT s.workspace_id FROM items i JOIN records r ON r.id = i.record_id \
                 JOIN record_sets s ON s.id = r.record_set_id WHERE i.id = $1",
                id,
            ),
            Owned::Fire(id) => (
                "SELECT s.workspace_id FROM fires f JOIN records r ON r.id = f.record_id \
                 JOIN record_sets s ON s.id = r.record_set_id WHERE f.id = $1",
                id,
            ),
            Owned::Job(id) => (
                "SELECT s.workspace_id FROM jobs j \
                 JOIN record_sets s ON s.id = j.record_set_id WHERE j.id = $1",
                id,
            ),
        }
    }
}

pub(super) const PRINCIPAL: &str = "SELECT u.id AS user_id, u.email, w.id AS workspace_id, \
     w.name AS workspace_name, m.role \
     FROM memberships m JOIN users u ON u.id = m.user_id \
     JOIN workspaces w ON w.id = m.workspace_id";

impl Store {
    /// The workspace named `name`, created when missing; `true` when created.
    pub async fn ensure_workspace(&self, name: &str) -> Result<(i64, bool), StoreError> {
        if let Some(id) = self.workspace_id(name).await? {
            return Ok((id, false));
        }
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO workspaces (name, created_at) VALUES ($1, $2) RETURNING id",
        )
        .bind(name)
        .bind(self.now_ms())
        .fetch_one(self.pool())
        .await?;
        Ok((id, true))
    }

    /// Every workspace's id.
    pub async fn workspace_ids(&self) -> Result<Vec<i64>, StoreError> {
        Ok(sqlx::query_scalar("SELECT id FROM workspaces ORDER BY id")
            .fetch_all(self.pool())
            .await?)
    }

    pub async fn workspace_id(&self, name: &str) -> Result<Option<i64>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT id FROM workspaces WHERE name = $1")
                .bind(name)
                .fetch_optional(self.pool())
                .await?,
        )
    }

    pub async fn user_count(&self) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM users")
            .fetch_one(self.pool())
            .await?)
    }

    /// A user by (lower-cased) email.
    pub async fn user_by_email(&self, email: &str) -> Result<Option<UserRow>, StoreError> {
        Ok(
            sqlx::query_as("SELECT id, email, password_hash FROM users WHERE email = $1")
                .bind(email)
                .fetch_optional(self.pool())
                .await?,
        )
    }

    /// A user by id.
    pub async fn user(&self, user_id: i64) -> Result<Option<UserRow>, StoreError> {
        Ok(
            sqlx::query_as("SELECT id, email, password_hash FROM users WHERE id = $1")
                .bind(user_id)
                .fetch_optional(self.pool())
                .await?,
        )
    }

    pub async fn create_user(&self, email: &str, password_hash: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "INSERT INTO users (email, password_hash, created_at) VALUES ($1, $2, $3) RETURNING id",
        )
        .bind(email)
        .bind(password_hash)
        .bind(self.now_ms())
        .fetch_one(self.pool())
        .await?)
    }

    pub async fn set_password_hash(&self, user_id: i64, hash: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE users SET password_hash = $1 WHERE id = $2")
            .bind(hash)
            .bind(user_id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Makes `user_id` a member of `workspace_id` with `role`, unless it
    /// demotes the workspace's last admin: `false` then, and nothing
    /// changes. The check and the change are one statement, after a lock
    /// on the workspace (PostgreSQL; SQLite has one writer): two admins
    /// demoting each other at once leave one.
    pub async fn set_membership(
        &self,
        user_id: i64,
        workspace_id: i64,
        role: Role,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool().begin().await?;
        self.lock_workspace(&mut tx, workspace_id).await?;
        let done = sqlx::query(
            "INSERT INTO memberships (user_id, workspace_id, role, created_at) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (user_id, workspace_id) DO UPDATE SET role = excluded.role \
             WHERE excluded.role = 'admin' OR memberships.role <> 'admin' OR EXISTS ( \
               SELECT 1 FROM memberships o WHERE o.workspace_id = $2 \
               AND o.role = 'admin' AND o.user_id <> $1)",
        )
        .bind(user_id)
        .bind(workspace_id)
        .bind(role.name())
        .bind(self.now_ms())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    /// Takes `user_id` out of `workspace_id`, unless they are its last
    /// admin; like [`Store::set_membership`], at once.
    pub async fn remove_membership(
        &self,
        user_id: i64,
        workspace_id: i64,
    ) -> Result<Removal, StoreError> {
        let mut tx = self.pool().begin().await?;
        self.lock_workspace(&mut tx, workspace_id).await?;
        let done = sqlx::query(
            "DELETE FROM memberships WHERE user_id = $1 AND workspace_id = $2 \
             AND (role <> 'admin' OR EXISTS ( \
               SELECT 1 FROM memberships o WHERE o.workspace_id = $2 \
               AND o.role = 'admin' AND o.user_id <> $1))",
        )
        .bind(user_id)
        .bind(workspace_id)
        .execute(&mut *tx)
        .await?;
        let removal = if done.rows_affected() > 0 {
            // What they kept for themselves there goes with them.
            sqlx::query("DELETE FROM personal_chains WHERE user_id = $1 AND workspace_id = $2")
                .bind(user_id)
                .bind(workspace_id)
                .execute(&mut *tx)
                .await?;
            Removal::Removed
        } else {
            let still: Option<i64> = sqlx::query_scalar(
                "SELECT user_id FROM memberships WHERE user_id = $1 AND workspace_id = $2",
            )
            .bind(user_id)
            .bind(workspace_id)
            .fetch_optional(&mut *tx)
            .await?;
            match still {
                Some(_) => Removal::LastAdmin,
                None => Removal::NotAMember,
            }
        };
        tx.commit().await?;
        if removal == Removal::Removed {
            self.settings_changed(workspace_id);
        }
        Ok(removal)
    }

    /// Holds the workspace's row until the transaction ends, so changes of
    /// its admins are made one after the other (PostgreSQL; SQLite's one
    /// writer does that already).
    async fn lock_workspace(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        workspace_id: i64,
    ) -> Result<(), StoreError> {
        if self.backend() == super::Backend::Postgres {
            sqlx::query("SELECT id FROM workspaces WHERE id = $1 FOR UPDATE")
                .bind(workspace_id)
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// A workspace's members, by email.
    pub async fn members_of(&self, workspace_id: i64) -> Result<Vec<model::Member>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT u.id AS user_id, u.email, m.role, m.created_at AS since FROM memberships m \
             JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 ORDER BY u.email",
        )
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// The workspaces `user_id` belongs to, by name.
    pub async fn workspaces_of(&self, user_id: i64) -> Result<Vec<WorkspaceRef>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT w.id, w.name, m.role FROM memberships m \
             JOIN workspaces w ON w.id = m.workspace_id WHERE m.user_id = $1 ORDER BY w.name",
        )
        .bind(user_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// The (user, workspace) memberships of these people.
    pub async fn memberships_of(&self, user_ids: &[i64]) -> Result<Vec<(i64, i64)>, StoreError> {
        let mut found = Vec::new();
        for chunk in user_ids.chunks(500) {
            let sql = format!(
                "SELECT user_id, workspace_id FROM memberships WHERE user_id IN ({})",
                super::placeholders(chunk.len())
            );
            let mut query = sqlx::query_as::<_, (i64, i64)>(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            found.extend(query.fetch_all(self.pool()).await?);
        }
        Ok(found)
    }

    /// `user_id` acting in `workspace_id`, if they are (still) a member.
    pub async fn principal(
        &self,
        user_id: i64,
        workspace_id: i64,
    ) -> Result<Option<Principal>, StoreError> {
        Ok(sqlx::query_as(&format!(
            "{PRINCIPAL} WHERE m.user_id = $1 AND m.workspace_id = $2"
        ))
        .bind(user_id)
        .bind(workspace_id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// The workspace owning a stored thing, or not found.
    pub async fn workspace_of(&self, owned: Owned) -> Result<i64, StoreError> {
        let (sql, id) = owned.owner_query();
        let workspace: Option<Option<i64>> = sqlx::query_scalar(sql)
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        workspace
            .flatten()
            .ok_or_else(|| StoreError::NotFound(owned.describe()))
    }

    /// Fails with not found unless `owned` belongs to `workspace_id`: another
    /// workspace's things do not exist for this caller.
    pub async fn check_owner(&self, workspace_id: i64, owned: Owned) -> Result<(), StoreError> {
        if self.workspace_of(owned).await? == workspace_id {
            Ok(())
        } else {
            Err(StoreError::NotFound(owned.describe()))
        }
    }

    /// Gives record sets stored before accounts existed to `workspace_id`.
    pub async fn adopt_unowned_record_sets(&self, workspace_id: i64) -> Result<u64, StoreError> {
        let done =
            sqlx::query("UPDATE record_sets SET workspace_id = $1 WHERE workspace_id IS NULL")
                .bind(workspace_id)
                .execute(self.pool())
                .await?;
        Ok(done.rows_affected())
    }

    /// A user's own pack labels.
    pub async fn pack_labels(&self, user_id: i64) -> Result<BTreeMap<String, String>, StoreError> {
        let labels: Vec<(String, String)> =
            sqlx::query_as("SELECT pack_id, label FROM user_pack_labels WHERE user_id = $1")
                .bind(user_id)
                .fetch_all(self.pool())
                .await?;
        Ok(labels.into_iter().collect())
    }

    /// Sets (or with `None` clears) a user's label for a pack.
    pub async fn set_pack_label(
        &self,
        user_id: i64,
        pack_id: &str,
        label: Option<&str>,
    ) -> Result<(), StoreError> {
        match label {
            Some(label) => {
                sqlx::query(
                    "INSERT INTO user_pack_labels (user_id, pack_id, label) VALUES ($1, $2, $3) \
                     ON CONFLICT (user_id, pack_id) DO UPDATE SET label = excluded.label",
                )
                .bind(user_id)
                .bind(pack_id)
                .bind(label)
                .execute(self.pool())
                .await?;
            }
            None => {
                sqlx::query("DELETE FROM user_pack_labels WHERE user_id = $1 AND pack_id = $2")
                    .bind(user_id)
                    .bind(pack_id)
                    .execute(self.pool())
                    .await?;
            }
        }
        Ok(())
    }
}
