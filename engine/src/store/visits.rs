//! When each person last looked at a record set (`set_visits`), so what was
//! found since their previous visit shows as new to them and not to someone
//! who has seen it. A visit lasts while they come back within
//! [`VISIT_GAP`].

use super::{Store, StoreError};

/// A person back within this long is still on the same visit.
pub const VISIT_GAP: i64 = 30 * 60 * 1_000;

impl Store {
    /// Notes that `user_id` looks at a set at `now`, and answers when their
    /// previous visit ended (`None` on the first).
    pub async fn visit_set(
        &self,
        user_id: i64,
        record_set_id: i64,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        let since: Option<Option<i64>> = sqlx::query_scalar(
            "INSERT INTO set_visits (user_id, record_set_id, seen_at, since) \
             VALUES ($1, $2, $3, NULL) \
             ON CONFLICT (user_id, record_set_id) DO UPDATE SET \
             since = CASE WHEN $3 - set_visits.seen_at > $4 THEN set_visits.seen_at \
             ELSE set_visits.since END, seen_at = $3 \
             RETURNING since",
        )
        .bind(user_id)
        .bind(record_set_id)
        .bind(now)
        .bind(VISIT_GAP)
        .fetch_optional(self.pool())
        .await?;
        Ok(since.flatten())
    }

    /// When `user_id`'s previous visit of a set ended, without noting one.
    pub async fn last_visit(
        &self,
        user_id: i64,
        record_set_id: i64,
    ) -> Result<Option<i64>, StoreError> {
        let since: Option<Option<i64>> = sqlx::query_scalar(
            "SELECT since FROM set_visits WHERE user_id = $1 AND record_set_id = $2",
        )
        .bind(user_id)
        .bind(record_set_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(since.flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    #[tokio::test]
    async fn a_visit_lasts_while_the_person_comes_back_soon() {
        for db in testing::all().await {
            let store = Store::connect(&db.url).await.unwrap();
            let (ws, _) = store.ensure_workspace("w").await.unwrap();
            let set = store
                .create_record_set(ws, "S", "b", false, &[])
                .await
                .unwrap();
            let user = store.create_user("ana@example.org", "x").await.unwrap();
            let t = 1_000_000_000;
            assert_eq!(store.visit_set(user, set, t).await.unwrap(), None);
            // Back within the gap: the same visit, still no previous one.
            assert_eq!(store.visit_set(user, set, t + 60_000).await.unwrap(), None);
            // Back later: the previous visit ended at its last look.
            let later = t + 60_000 + VISIT_GAP + 1;
            assert_eq!(
                store.visit_set(user, set, later).await.unwrap(),
                Some(t + 60_000),
                "{}",
                db.kind()
            );
            assert_eq!(
                store.visit_set(user, set, later + 1).await.unwrap(),
                Some(t + 60_000)
            );
            assert_eq!(store.last_visit(user, set).await.unwrap(), Some(t + 60_000));
        }
    }
}
