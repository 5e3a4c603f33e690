//! Sign-in limits for the whole deployment (the rules are in
//! `tenancy::sign_in_limits`): whether an attempt at an account from an
//! address may be checked now, and what its outcome does to the next.

use std::future::Future;
use std::net::IpAddr;
use std::time::Duration;

use crate::ops::OpError;
use crate::tenancy::sign_in_limits::{
    address_key, email_key, stranger_key, wait_after, Turns, MAX_WAIT,
};
use crate::Engine;

impl Engine {
    /// Whether an attempt at `email` from `address` may be checked now;
    /// `OpError::Limited` says how long to wait. `known_browser` says the
    /// browser proved it signed in as this account before; it is asked
    /// only when the account's limit for strangers would refuse.
    pub async fn admit_sign_in<F, Fut>(
        &self,
        email: &str,
        address: IpAddr,
        known_browser: F,
    ) -> Result<(), OpError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = bool>,
    {
        let key = email_key(email);
        let now = self.store.now_ms();
        if let Some(not_before) = self
            .store
            .sign_in_not_before(&key, &address.to_string())
            .await?
        {
            if not_before > now {
                return Err(limited(Duration::from_millis(
                    (not_before - now).unsigned_abs(),
                )));
            }
        }
        let quota = self.sign_in_quota;
        let by_address = Turns::per_minute(quota.per_address);
        if let Some(next_free) = self
            .store
            .take_sign_in_turn(&address_key(address), by_address, now)
            .await?
        {
            return Err(limited(by_address.wait(next_free, now)));
        }
        let from_strangers = Turns::per_minute(quota.per_account_from_strangers);
        if let Some(next_free) = self
            .store
            .take_sign_in_turn(&stranger_key(&key), from_strangers, now)
            .await?
        {
            if !known_browser().await {
                return Err(limited(from_strangers.wait(next_free, now)));
            }
        }
        Ok(())
    }

    /// A wrong password: from the fourth in a row, each doubles the pair's
    /// wait.
    pub async fn sign_in_failed(&self, email: &str, address: IpAddr) -> Result<(), OpError> {
        let key = email_key(email);
        let address = address.to_string();
        let now = self.store.now_ms();
        let failures = self
            .store
            .count_sign_in_failure(&key, &address, now)
            .await?;
        let wait = wait_after(failures);
        if !wait.is_zero() {
            let not_before = now.saturating_add(i64::try_from(wait.as_millis()).unwrap_or(0));
            self.store
                .hold_sign_in_pair(&key, &address, not_before)
                .await?;
        }
        Ok(())
    }

    /// A right password: the pair starts over.
    pub async fn sign_in_succeeded(&self, email: &str, address: IpAddr) -> Result<(), OpError> {
        self.store
            .clear_sign_in_failures(&email_key(email), &address.to_string())
            .await?;
        Ok(())
    }

    /// Deletes the sign-in counts that no longer hold anyone back (run by
    /// every process's heartbeat).
    pub(crate) async fn forget_quiet_sign_ins(&self) -> Result<u64, crate::store::StoreError> {
        let now = self.store.now_ms();
        let quiet_since = now.saturating_sub(i64::try_from(MAX_WAIT.as_millis()).unwrap_or(0));
        self.store.forget_quiet_sign_ins(now, quiet_since).await
    }
}

fn limited(wait: Duration) -> OpError {
    OpError::Limited {
        detail: format!(
            "too many sign-in attempts; try again in {} s",
            wait.as_secs().max(1)
        ),
        retry_after: wait,
    }
}
