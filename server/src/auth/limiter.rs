//! Sign-in guessing slowed, never a lockout anyone can cause: each failure
//! of one account from one address doubles that pair's wait; one address is
//! held to a rate across all accounts; one account is held to a rate across
//! all addresses only for browsers it never signed in on (a known browser
//! carries a device cookie, see `engine::tenancy::accounts`), so a stranger
//! hammering an account slows strangers, not its owner. Memory is bounded:
//! keys are cut to a length, idle keys are pruned, and the pair table has a
//! ceiling. The client address comes from `X-Forwarded-For` only when the
//! peer is a proxy the operator named.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use ipnet::IpNet;

/// Failures of one account from one address allowed before waits start.
const FREE_FAILURES: u32 = 3;
/// The longest wait one pair is given.
const MAX_WAIT: Duration = Duration::from_secs(15 * 60);
/// Pairs remembered at most; past it new pairs are not tracked (the address
/// and account rates still hold).
const MAX_PAIRS: usize = 100_000;
/// Longest email kept as a key (RFC 5321 allows 254 characters).
const MAX_EMAIL_KEY: usize = 254;
/// Prune idle keys every this many attempts.
const PRUNE_EVERY: u64 = 1_024;

/// The proxies whose `X-Forwarded-For` is believed (addresses or CIDR
/// ranges, from `SWITCHYARD_TRUSTED_PROXIES`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Parses `10.0.0.1, 10.1.0.0/16, ::1`; an error names the bad entry.
    pub fn parse(text: &str) -> Result<Self, String> {
        text.split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|entry| {
                entry
                    .parse::<IpNet>()
                    .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("{entry:?} is not an address or CIDR range"))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client's address: the peer, unless the peer is a trusted proxy;
    /// then the nearest `X-Forwarded-For` hop that is not one (the entries
    /// left of it are the client's to write, so they are never believed).
    pub fn client_address(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.contains(peer) {
            return peer;
        }
        let hops = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        for hop in hops.into_iter().rev() {
            let Ok(ip) = hop.parse::<IpAddr>() else {
                // A hop we cannot read: stop at the last address we trust.
                return peer;
            };
            if !self.contains(ip) {
                return ip;
            }
        }
        peer
    }
}

/// The per-account key: trimmed, lowercased, cut to a bounded length.
fn email_key(email: &str) -> String {
    let lower = email.trim().to_lowercase();
    match lower.char_indices().nth(MAX_EMAIL_KEY) {
        Some((cut, _)) => lower[..cut].to_owned(),
        None => lower,
    }
}

/// Repeated failures of one account from one address.
#[derive(Debug)]
struct Backoff {
    failures: u32,
    /// No attempt before this.
    until: Instant,
    last: Instant,
}

/// The sign-in limits every process keeps in memory.
#[derive(Clone, Debug)]
pub struct SignInLimits {
    by_address: Arc<DefaultKeyedRateLimiter<IpAddr>>,
    strangers_by_email: Arc<DefaultKeyedRateLimiter<String>>,
    pairs: Arc<Mutex<HashMap<(String, IpAddr), Backoff>>>,
    attempts: Arc<AtomicU64>,
    pub trusted_proxies: TrustedProxies,
}

impl SignInLimits {
    /// `per_address` attempts a minute from one address, and
    /// `per_account_from_strangers` a minute at one account from browsers
    /// it never signed in on.
    pub fn new(per_address: NonZeroU32, per_account_from_strangers: NonZeroU32) -> Self {
        Self {
            by_address: Arc::new(RateLimiter::keyed(Quota::per_minute(per_address))),
            strangers_by_email: Arc::new(RateLimiter::keyed(Quota::per_minute(
                per_account_from_strangers,
            ))),
            pairs: Arc::default(),
            attempts: Arc::default(),
            trusted_proxies: TrustedProxies::default(),
        }
    }

    pub fn with_trusted_proxies(mut self, proxies: TrustedProxies) -> Self {
        self.trusted_proxies = proxies;
        self
    }

    fn pairs(&self) -> std::sync::MutexGuard<'_, HashMap<(String, IpAddr), Backoff>> {
        self.pairs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether an attempt at `email` from `address` may be checked now, or
    /// how long to wait. `known_browser` says the browser proved it signed
    /// in as this account before; it is asked only when the account's
    /// limit for strangers would refuse.
    pub async fn admit<F, Fut>(
        &self,
        email: &str,
        address: IpAddr,
        known_browser: F,
    ) -> Result<(), Duration>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        self.prune_now_and_then();
        let key = email_key(email);
        let now = Instant::now();
        if let Some(b) = self.pairs().get(&(key.clone(), address)) {
            if b.until > now {
                return Err(b.until - now);
            }
        }
        let clock = DefaultClock::default();
        if let Err(not_until) = self.by_address.check_key(&address) {
            return Err(not_until.wait_time_from(clock.now()));
        }
        if let Err(not_until) = self.strangers_by_email.check_key(&key) {
            if !known_browser().await {
                return Err(not_until.wait_time_from(clock.now()));
            }
        }
        Ok(())
    }

    /// A wrong password: from the fourth in a row, each doubles the wait.
    pub fn failed(&self, email: &str, address: IpAddr) {
        let now = Instant::now();
        let mut pairs = self.pairs();
        let key = (email_key(email), address);
        if !pairs.contains_key(&key) && pairs.len() >= MAX_PAIRS {
            return;
        }
        let b = pairs.entry(key).or_insert(Backoff {
            failures: 0,
            until: now,
            last: now,
        });
        b.failures = b.failures.saturating_add(1);
        b.last = now;
        if b.failures > FREE_FAILURES {
            let doublings = (b.failures - FREE_FAILURES - 1).min(20);
            b.until = now + Duration::from_secs(1u64 << doublings).min(MAX_WAIT);
        }
    }

    /// A right password: the pair starts over.
    pub fn succeeded(&self, email: &str, address: IpAddr) {
        self.pairs().remove(&(email_key(email), address));
    }

    fn prune_now_and_then(&self) {
        if !self
            .attempts
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(PRUNE_EVERY)
        {
            return;
        }
        self.by_address.retain_recent();
        self.strangers_by_email.retain_recent();
        // A pair quiet for the longest wait starts over.
        let now = Instant::now();
        self.pairs()
            .retain(|_, b| now.duration_since(b.last.max(b.until)) < MAX_WAIT);
    }

    #[cfg(test)]
    fn tracked(&self) -> (usize, usize, usize) {
        (
            self.by_address.len(),
            self.strangers_by_email.len(),
            self.pairs().len(),
        )
    }
}

impl Default for SignInLimits {
    fn default() -> Self {
        Self::new(
            NonZeroU32::new(30).unwrap_or(NonZeroU32::MIN),
            NonZeroU32::new(10).unwrap_or(NonZeroU32::MIN),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    async fn admit(l: &SignInLimits, email: &str, from: &str, known: bool) -> Result<(), Duration> {
        l.admit(email, ip(from), || async move { known }).await
    }

    #[tokio::test]
    async fn failures_of_one_pair_double_its_wait_and_a_success_clears_it() {
        let l = SignInLimits::default();
        for _ in 0..FREE_FAILURES {
            assert!(admit(&l, "ada@example.org", "10.0.0.1", false)
                .await
                .is_ok());
            l.failed("ada@example.org", ip("10.0.0.1"));
        }
        assert!(admit(&l, "ada@example.org", "10.0.0.1", false)
            .await
            .is_ok());
        l.failed("ADA@example.org ", ip("10.0.0.1"));
        let wait = admit(&l, "ada@example.org", "10.0.0.1", false)
            .await
            .unwrap_err();
        assert!(
            wait <= Duration::from_secs(1) && wait > Duration::ZERO,
            "{wait:?}"
        );
        // Ada herself, elsewhere, is not held up by that address's failures.
        assert!(admit(&l, "ada@example.org", "10.0.0.2", false)
            .await
            .is_ok());
        // Each further failure doubles the wait, up to the ceiling.
        l.pairs()
            .get_mut(&("ada@example.org".to_owned(), ip("10.0.0.1")))
            .unwrap()
            .failures = 40;
        l.failed("ada@example.org", ip("10.0.0.1"));
        let wait = admit(&l, "ada@example.org", "10.0.0.1", false)
            .await
            .unwrap_err();
        assert!(
            wait > MAX_WAIT - Duration::from_secs(5) && wait <= MAX_WAIT,
            "{wait:?}"
        );
        l.succeeded("ada@example.org", ip("10.0.0.1"));
        assert!(admit(&l, "ada@example.org", "10.0.0.1", false)
            .await
            .is_ok());
    }

    #[tokio::test]
    async fn strangers_hammering_an_account_do_not_keep_its_owner_out() {
        let l = SignInLimits::new(NonZeroU32::new(100).unwrap(), NonZeroU32::new(3).unwrap());
        for i in 0..3 {
            assert!(admit(&l, "cfo@corp.example", &format!("10.0.1.{i}"), false)
                .await
                .is_ok());
        }
        // A fourth stranger waits; the owner's own browser does not.
        assert!(admit(&l, "cfo@corp.example", "10.0.1.9", false)
            .await
            .is_err());
        assert!(admit(&l, "cfo@corp.example", "10.0.1.9", true)
            .await
            .is_ok());
        // Other accounts are untouched.
        assert!(admit(&l, "ceo@corp.example", "10.0.1.9", false)
            .await
            .is_ok());
    }

    #[tokio::test]
    async fn one_address_is_held_to_a_rate_across_accounts() {
        let l = SignInLimits::new(NonZeroU32::new(2).unwrap(), NonZeroU32::new(100).unwrap());
        assert!(admit(&l, "a@x.example", "10.0.0.1", true).await.is_ok());
        assert!(admit(&l, "b@x.example", "10.0.0.1", true).await.is_ok());
        assert!(admit(&l, "c@x.example", "10.0.0.1", true).await.is_err());
        assert!(admit(&l, "c@x.example", "10.0.0.2", true).await.is_ok());
    }

    #[tokio::test]
    async fn memory_stays_bounded_under_a_spray_of_long_made_up_emails() {
        let l = SignInLimits::new(
            NonZeroU32::new(u32::MAX).unwrap(),
            NonZeroU32::new(5).unwrap(),
        );
        let long = "x".repeat(100_000);
        assert_eq!(email_key(&long).len(), MAX_EMAIL_KEY);
        for i in 0..3_000u32 {
            let from = IpAddr::from([10, 2, (i >> 8) as u8, i as u8]);
            l.admit(&format!("{long}{i}"), from, || async { false })
                .await
                .ok();
            l.failed(&format!("{i}{long}"), from);
        }
        let (addresses, emails, pairs) = l.tracked();
        // The email keys cut to 254 characters all share one key; addresses
        // that could attempt again at once are pruned as fresh.
        assert_eq!(emails, 1);
        assert!(addresses < 3_000, "{addresses}");
        assert_eq!(pairs, 3_000);
        // The pair table stops growing at its ceiling.
        for i in 0..(MAX_PAIRS as u32 + 10) {
            l.failed("ada@example.org", IpAddr::from(i.to_be_bytes()));
        }
        assert_eq!(l.tracked().2, MAX_PAIRS);
    }

    #[test]
    fn forwarded_addresses_are_believed_only_from_named_proxies() {
        let proxies = TrustedProxies::parse("10.9.0.0/16, ::1").unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            "6.6.6.6, 203.0.113.7, 10.9.0.5".parse().unwrap(),
        );
        // Through the proxy: the nearest hop that is not a proxy.
        assert_eq!(
            proxies.client_address(ip("10.9.1.1"), &headers),
            ip("203.0.113.7")
        );
        // Straight from a client, the header is the client's own words.
        assert_eq!(
            proxies.client_address(ip("198.51.100.1"), &headers),
            ip("198.51.100.1")
        );
        assert_eq!(
            TrustedProxies::default().client_address(ip("10.9.1.1"), &headers),
            ip("10.9.1.1")
        );
        headers.insert("x-forwarded-for", "garbage, 10.9.0.5".parse().unwrap());
        assert_eq!(proxies.client_address(ip("::1"), &headers), ip("::1"));
        assert!(TrustedProxies::parse("10.0.0.0/33")
            .unwrap_err()
            .contains("10.0.0.0/33"));
        assert!(TrustedProxies::parse("proxy.local").is_err());
        let everyone = TrustedProxies::parse("0.0.0.0/0").unwrap();
        assert_eq!(
            everyone.client_address(ip("192.0.2.9"), &headers),
            ip("192.0.2.9"),
            "a garbled hop stops the walk"
        );
    }
}
