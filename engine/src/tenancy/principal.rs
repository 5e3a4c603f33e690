//! The caller: who is acting, in which workspace, with which role. Every
//! operation takes one and checks it before it reaches data.

use model::{Role, WorkspaceRef};

/// Who is acting and where: a user in one of their workspaces, with the role
/// they hold there. Every request that reaches data carries one.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Principal {
    pub user_id: i64,
    pub email: String,
    pub workspace_id: i64,
    pub workspace_name: String,
    #[sqlx(try_from = "String")]
    pub role: Role,
}

impl Principal {
    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }

    pub fn workspace(&self) -> WorkspaceRef {
        WorkspaceRef {
            id: self.workspace_id,
            name: self.workspace_name.clone(),
            role: self.role,
        }
    }
}
