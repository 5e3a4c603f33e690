//! Requests per API token: a script past its token's rate is answered 429
//! before the token is looked up, so a client that ignores `Retry-After`
//! and retries every refusal at once costs the server almost nothing, and
//! everyone else's requests keep the database and the cores. Memory is
//! bounded: keys are 64-bit keyed hashes (SipHash with this process's
//! random key, so nobody can aim a collision at someone else's token, and
//! no token is kept), and every few thousand requests the keys whose
//! burst is whole again are dropped: a key of one request is whole again in
//! a hundredth of a second, so a flood of made-up tokens leaves at most a
//! few thousand keys between prunes.

use std::hash::{BuildHasher, RandomState};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// The default sustained rate of one token, in requests a second.
pub const DEFAULT_TOKEN_REQUESTS_PER_SECOND: u32 = 100;
/// Prune idle keys every this many requests.
const PRUNE_EVERY: u64 = 4_096;

/// The rate each API token is held to: its sustained rate, with bursts of
/// twice that.
#[derive(Clone, Debug)]
pub struct TokenRate {
    limiter: Arc<DefaultKeyedRateLimiter<u64>>,
    keys: RandomState,
    checks: Arc<AtomicU64>,
    per_second: NonZeroU32,
}

impl TokenRate {
    pub fn new(per_second: NonZeroU32) -> Self {
        let burst = per_second.saturating_add(per_second.get());
        Self {
            limiter: Arc::new(RateLimiter::keyed(
                Quota::per_second(per_second).allow_burst(burst),
            )),
            checks: Arc::default(),
            keys: RandomState::new(),
            per_second,
        }
    }

    /// Counts one request of `token`; past its rate, the refusal's
    /// sentence and how long to wait.
    pub fn check(&self, token: &str) -> Result<(), (String, Duration)> {
        let n = self.checks.fetch_add(1, Ordering::Relaxed);
        if n % PRUNE_EVERY == PRUNE_EVERY - 1 {
            self.limiter.retain_recent();
        }
        self.limiter
            .check_key(&self.keys.hash_one(token))
            .map_err(|not_until| {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                (
                    format!(
                        "requests: this token sent more than {} a second; slow down",
                        self.per_second
                    ),
                    wait.max(Duration::from_secs(1)),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_past_its_burst_is_refused_and_another_token_is_not() {
        let rate = TokenRate::new(NonZeroU32::new(5).unwrap());
        for n in 0..10 {
            assert!(rate.check("a").is_ok(), "request {n} is within the burst");
        }
        let (why, wait) = rate.check("a").unwrap_err();
        assert!(why.contains("more than 5 a second"), "{why}");
        assert!(wait >= Duration::from_secs(1));
        assert!(rate.check("b").is_ok());
    }

    #[test]
    fn idle_tokens_are_forgotten() {
        let rate = TokenRate::new(NonZeroU32::new(1_000).unwrap());
        for n in 0..PRUNE_EVERY - 1 {
            rate.check(&format!("token {n}")).unwrap();
        }
        // Each has its whole burst back after a millisecond.
        std::thread::sleep(Duration::from_millis(20));
        rate.check("the one that prunes").unwrap();
        assert!(rate.limiter.len() <= 1, "{}", rate.limiter.len());
    }
}
