//! The rules that slow sign-in guessing without letting anyone cause a
//! lockout: each failure of one account from one address doubles that
//! pair's wait; one address is held to a rate across all accounts; one
//! account is held to a rate across all addresses only for browsers it
//! never signed in on (a known browser carries a mark, see
//! `ops::credentials`), so a stranger hammering an account slows strangers,
//! not its owner. The counts live in the database (`store::sign_in_limits`)
//! so they hold for the whole deployment; `ops::sign_in_limits` applies
//! them.

use std::num::NonZeroU32;
use std::time::Duration;

/// Failures of one account from one address allowed before waits start.
pub const FREE_FAILURES: u32 = 3;
/// The longest wait one pair is given; a pair quiet for this long starts
/// over.
pub const MAX_WAIT: Duration = Duration::from_secs(15 * 60);
/// Longest email kept as a key (RFC 5321 allows 254 characters).
const MAX_EMAIL_KEY: usize = 254;

/// How many sign-in attempts a minute the deployment allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignInQuota {
    /// From one address, across every account.
    pub per_address: NonZeroU32,
    /// At one account, from browsers it never signed in on.
    pub per_account_from_strangers: NonZeroU32,
}

impl Default for SignInQuota {
    fn default() -> Self {
        Self {
            per_address: NonZeroU32::new(30).unwrap_or(NonZeroU32::MIN),
            per_account_from_strangers: NonZeroU32::new(10).unwrap_or(NonZeroU32::MIN),
        }
    }
}

/// A rate as the database keeps it: attempts evenly `spacing_ms` apart,
/// with up to `burst` at once after a quiet spell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turns {
    pub spacing_ms: i64,
    pub burst: i64,
}

impl Turns {
    /// `n` a minute, all `n` at once after a quiet minute.
    pub fn per_minute(n: NonZeroU32) -> Self {
        let n = i64::from(n.get());
        Self {
            spacing_ms: (60_000 / n).max(1),
            burst: n,
        }
    }

    /// The latest next free time an attempt at `now` may leave behind:
    /// taking a turn moves the next free time one spacing on, and a turn
    /// that would move it past this is refused (and moves nothing, so
    /// hammering does not lengthen anyone's wait).
    pub fn limit(self, now: i64) -> i64 {
        now.saturating_add(self.spacing_ms.saturating_mul(self.burst))
    }

    /// How long an attempt refused at `now` waits, given the rate's next
    /// free time.
    pub fn wait(self, next_free: i64, now: i64) -> Duration {
        let after_turn = next_free.max(now).saturating_add(self.spacing_ms);
        let over = after_turn.saturating_sub(self.limit(now)).max(1);
        Duration::from_millis(over.unsigned_abs())
    }
}

/// The key of a rate of one address.
pub fn address_key(address: std::net::IpAddr) -> String {
    format!("address {address}")
}

/// The key of a rate of one account from strangers.
pub fn stranger_key(email_key: &str) -> String {
    format!("account {email_key}")
}

/// The per-account key: trimmed, lowercased, cut to a bounded length.
pub fn email_key(email: &str) -> String {
    let lower = email.trim().to_lowercase();
    match lower.char_indices().nth(MAX_EMAIL_KEY) {
        Some((cut, _)) => lower[..cut].to_owned(),
        None => lower,
    }
}

/// How long a pair waits after its `failures`-th wrong password in a row:
/// nothing for the first [`FREE_FAILURES`], then 1 s, doubling each time
/// up to [`MAX_WAIT`].
pub fn wait_after(failures: u32) -> Duration {
    if failures <= FREE_FAILURES {
        return Duration::ZERO;
    }
    let doublings = (failures - FREE_FAILURES - 1).min(20);
    Duration::from_secs(1u64 << doublings).min(MAX_WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_start_after_the_free_failures_and_double_to_the_ceiling() {
        assert_eq!(wait_after(FREE_FAILURES), Duration::ZERO);
        assert_eq!(wait_after(FREE_FAILURES + 1), Duration::from_secs(1));
        assert_eq!(wait_after(FREE_FAILURES + 2), Duration::from_secs(2));
        assert_eq!(wait_after(FREE_FAILURES + 5), Duration::from_secs(16));
        assert_eq!(wait_after(u32::MAX), MAX_WAIT);
    }

    #[test]
    fn a_refused_attempt_waits_for_the_next_spacing() {
        let turns = Turns::per_minute(NonZeroU32::new(3).unwrap());
        assert_eq!(turns.spacing_ms, 20_000);
        let now = 1_000_000;
        assert_eq!(turns.limit(now), now + 60_000);
        // Three taken at once: the next is free one spacing later.
        assert_eq!(turns.wait(now + 60_000, now), Duration::from_secs(20));
        assert_eq!(
            turns.wait(now + 60_000, now + 5_000),
            Duration::from_secs(15)
        );
    }

    #[test]
    fn email_keys_are_cut_and_folded() {
        assert_eq!(email_key(" Ada@Example.org "), "ada@example.org");
        assert_eq!(email_key(&"x".repeat(100_000)).len(), MAX_EMAIL_KEY);
    }
}
