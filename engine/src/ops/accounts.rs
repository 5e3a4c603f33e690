//! Account operations: adding people to the caller's workspace and
//! changing their roles (never leaving a workspace without an admin),
//! per-person pack labels, the access check every door makes before it
//! reaches a stored thing, and the operator's commands (a user added or
//! removed by email, the first admin).

use model::{Role, Viewer};

use crate::ops::OpError;
use crate::store::{Owned, Removal, StoreError};
use crate::tenancy::accounts::{
    check_workspace_name, last_admin, normalize_email, AccountError, AddedUser,
};
use crate::tenancy::credentials::{
    check_new_password, generate_password, hash_password_blocking, NO_PASSWORD,
};
use crate::tenancy::Principal;
use crate::Engine;

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
    ) -> Result<AddedUser, OpError> {
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
    ) -> Result<AddedUser, OpError> {
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
    ) -> Result<(), OpError> {
        crate::ops::require_admin(who)?;
        let member = self.member(who, user_id).await?;
        Ok(self
            .set_membership(
                user_id,
                who.workspace_id,
                &who.workspace_name,
                &member.email,
                role,
            )
            .await?)
    }

    /// Takes a member out of the caller's workspace (admins): their sessions
    /// and tokens there stop working at once. The last admin stays.
    pub async fn remove_member(&self, who: &Principal, user_id: i64) -> Result<(), OpError> {
        crate::ops::require_admin(who)?;
        let member = self.member(who, user_id).await?;
        Ok(self
            .remove_from(who.workspace_id, &who.workspace_name, &member)
            .await?)
    }

    /// Takes `email` out of `workspace` (the operator's `user remove`).
    pub async fn remove_user(&self, email: &str, workspace: &str) -> Result<(), OpError> {
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
        Ok(self.remove_from(workspace_id, workspace, &member).await?)
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
    pub async fn authorize(&self, who: &Principal, owned: Owned) -> Result<(), OpError> {
        Ok(self.store.check_owner(who.workspace_id, owned).await?)
    }

    /// The signed-in person as the pages need them.
    pub async fn viewer(&self, who: &Principal) -> Result<Viewer, OpError> {
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
    ) -> Result<(), OpError> {
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
    ) -> Result<(), OpError> {
        let label = label.map(str::trim).filter(|l| !l.is_empty());
        let labels = self.store.pack_labels(who.user_id).await?;
        {
            let catalog = self.catalog_in(Some(who.workspace_id)).await?;
            let Some(pack) = catalog.pack(pack_id) else {
                return Err(
                    AccountError::Invalid(format!("pack {pack_id:?}: no such pack")).into(),
                );
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
                ))
                .into());
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
    ) -> Result<Option<(AddedUser, String, u64)>, OpError> {
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

    #[tokio::test]
    async fn users_tokens_and_access_stay_in_their_workspace() {
        for db in crate::store::testing::all().await {
            let engine = crate::store::testing::engine(&db).await;
            let short = engine
                .add_user("a@example.org", "one", Role::Admin, Some("short".into()))
                .await;
            assert!(matches!(short, Err(OpError::Invalid(m)) if m.contains("password")));

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
            assert!(matches!(err, OpError::NotFound(_)), "{err}");

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
                    .filter(|r| matches!(r, Err(OpError::Invalid(m)) if m.contains("last admin")))
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
