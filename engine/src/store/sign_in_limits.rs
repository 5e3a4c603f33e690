//! The sign-in limits' counts, one place for every process: rates as next
//! free times, and wrong passwords in a row per account and address. The
//! rules are in `tenancy::sign_in_limits`.

use super::{Store, StoreError};
use crate::tenancy::sign_in_limits::Turns;

impl Store {
    /// Takes one attempt's turn of the rate `key` at `now`, if the rate
    /// has one free: `None` when taken, or the rate's next free time when
    /// refused (judge it with [`Turns::wait`]). The turn is taken in one
    /// statement, so processes taking turns at once each count.
    pub async fn take_sign_in_turn(
        &self,
        key: &str,
        turns: Turns,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        let taken: Option<i64> = sqlx::query_scalar(
            "INSERT INTO sign_in_turns (turn_key, next_free) VALUES ($1, $2 + $3) \
             ON CONFLICT (turn_key) DO UPDATE SET next_free = \
               CASE WHEN sign_in_turns.next_free > $2 THEN sign_in_turns.next_free ELSE $2 END + $3 \
             WHERE CASE WHEN sign_in_turns.next_free > $2 THEN sign_in_turns.next_free ELSE $2 END + $3 <= $4 \
             RETURNING next_free",
        )
        .bind(key)
        .bind(now)
        .bind(turns.spacing_ms)
        .bind(turns.limit(now))
        .fetch_optional(self.pool())
        .await?;
        if taken.is_some() {
            return Ok(None);
        }
        let next_free =
            sqlx::query_scalar("SELECT next_free FROM sign_in_turns WHERE turn_key = $1")
                .bind(key)
                .fetch_optional(self.pool())
                .await?;
        // Pruned in between: free by now.
        Ok(Some(next_free.unwrap_or(now)))
    }

    /// When the pair may try again, if its failures made it wait.
    pub async fn sign_in_not_before(
        &self,
        email_key: &str,
        address: &str,
    ) -> Result<Option<i64>, StoreError> {
        let not_before = sqlx::query_scalar(
            "SELECT not_before FROM sign_in_failures WHERE email_key = $1 AND address = $2",
        )
        .bind(email_key)
        .bind(address)
        .fetch_optional(self.pool())
        .await?;
        Ok(not_before)
    }

    /// Counts a wrong password of the pair and returns how many it has had
    /// in a row.
    pub async fn count_sign_in_failure(
        &self,
        email_key: &str,
        address: &str,
        now: i64,
    ) -> Result<u32, StoreError> {
        let failures: i64 = sqlx::query_scalar(
            "INSERT INTO sign_in_failures (email_key, address, failures, not_before, last_at) \
             VALUES ($1, $2, 1, $3, $3) \
             ON CONFLICT (email_key, address) DO UPDATE SET \
               failures = sign_in_failures.failures + 1, last_at = $3 \
             RETURNING failures",
        )
        .bind(email_key)
        .bind(address)
        .bind(now)
        .fetch_one(self.pool())
        .await?;
        Ok(u32::try_from(failures).unwrap_or(u32::MAX))
    }

    /// Holds the pair back until `not_before` (never shortening a wait a
    /// later failure already set).
    pub async fn hold_sign_in_pair(
        &self,
        email_key: &str,
        address: &str,
        not_before: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE sign_in_failures SET not_before = $3 \
             WHERE email_key = $1 AND address = $2 AND not_before < $3",
        )
        .bind(email_key)
        .bind(address)
        .bind(not_before)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// A right password: the pair starts over.
    pub async fn clear_sign_in_failures(
        &self,
        email_key: &str,
        address: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sign_in_failures WHERE email_key = $1 AND address = $2")
            .bind(email_key)
            .bind(address)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Deletes what no longer holds anyone back: rates whose next free
    /// time has passed, and pairs quiet (and free) since `quiet_since`.
    /// How many rows went.
    pub async fn forget_quiet_sign_ins(
        &self,
        now: i64,
        quiet_since: i64,
    ) -> Result<u64, StoreError> {
        let turns = sqlx::query("DELETE FROM sign_in_turns WHERE next_free <= $1")
            .bind(now)
            .execute(self.pool())
            .await?;
        let pairs =
            sqlx::query("DELETE FROM sign_in_failures WHERE last_at <= $1 AND not_before <= $1")
                .bind(quiet_since)
                .execute(self.pool())
                .await?;
        Ok(turns.rows_affected() + pairs.rows_affected())
    }

    /// How many sign-in rows are kept (rates, pairs).
    #[cfg(any(test, feature = "test-support"))]
    pub async fn sign_in_rows(&self) -> Result<(i64, i64), StoreError> {
        let turns = sqlx::query_scalar("SELECT COUNT(*) FROM sign_in_turns")
            .fetch_one(self.pool())
            .await?;
        let pairs = sqlx::query_scalar("SELECT COUNT(*) FROM sign_in_failures")
            .fetch_one(self.pool())
            .await?;
        Ok((turns, pairs))
    }
}
