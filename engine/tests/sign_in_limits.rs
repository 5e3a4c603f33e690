//! Sign-in limits hold for the whole deployment: processes on one database
//! count every attempt together, on SQLite and PostgreSQL alike, and what
//! they keep is pruned once it holds nobody back.

mod common;

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use common::engine;
use engine::ops::OpError;
use engine::store::testing;
use engine::tenancy::sign_in_limits::{SignInQuota, FREE_FAILURES, MAX_WAIT};
use engine::{Engine, EngineConfig};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn quota(per_address: u32, per_account_from_strangers: u32) -> EngineConfig {
    EngineConfig {
        sign_in: SignInQuota {
            per_address: NonZeroU32::new(per_address).unwrap(),
            per_account_from_strangers: NonZeroU32::new(per_account_from_strangers).unwrap(),
        },
        ..EngineConfig::default()
    }
}

async fn admit(e: &Engine, email: &str, from: &str, known: bool) -> Result<(), Duration> {
    match e
        .admit_sign_in(email, ip(from), || async move { known })
        .await
    {
        Ok(()) => Ok(()),
        Err(OpError::Limited { retry_after, .. }) => Err(retry_after),
        Err(other) => panic!("admitting a sign-in failed: {other}"),
    }
}

/// Both processes' clocks, moved alike.
fn advance(processes: &[&Engine], by: Duration) {
    for p in processes {
        p.clock().advance(by);
    }
}

#[tokio::test]
async fn one_address_is_held_to_its_rate_across_processes() {
    for db in testing::all().await {
        let a = engine(&db, &[], quota(4, 100)).await;
        let b = engine(&db, &[], quota(4, 100)).await;
        // Four tries spread over two processes and four accounts.
        for (i, process) in [&a, &b, &a, &b].into_iter().enumerate() {
            let email = format!("user{i}@x.example");
            assert!(
                admit(process, &email, "10.0.0.1", true).await.is_ok(),
                "{}: try {i}",
                db.kind()
            );
        }
        // The fifth waits on either; another address does not.
        let wait = admit(&b, "user9@x.example", "10.0.0.1", true)
            .await
            .unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(15),
            "{}: {wait:?}",
            db.kind()
        );
        assert!(admit(&a, "user9@x.example", "10.0.0.1", true)
            .await
            .is_err());
        assert!(admit(&a, "user9@x.example", "10.0.0.2", true).await.is_ok());
        // Hammering does not lengthen the wait past one spacing.
        for _ in 0..20 {
            let _ = admit(&a, "user9@x.example", "10.0.0.1", true).await;
        }
        advance(&[&a, &b], Duration::from_secs(15));
        assert!(
            admit(&b, "user9@x.example", "10.0.0.1", true).await.is_ok(),
            "{}: free again one spacing later",
            db.kind()
        );
    }
}

#[tokio::test]
async fn wrong_passwords_counted_on_any_process_double_the_pairs_wait() {
    for db in testing::all().await {
        let a = engine(&db, &[], quota(1_000, 1_000)).await;
        let b = engine(&db, &[], quota(1_000, 1_000)).await;
        let (ada, from) = ("ada@example.org", ip("10.0.0.1"));
        for n in 0..FREE_FAILURES {
            let process = if n % 2 == 0 { &a } else { &b };
            assert!(admit(process, ada, "10.0.0.1", false).await.is_ok());
            process.sign_in_failed(ada, from).await.unwrap();
        }
        assert!(admit(&a, ada, "10.0.0.1", false).await.is_ok());
        b.sign_in_failed(" ADA@example.org", from).await.unwrap();
        let wait = admit(&a, ada, "10.0.0.1", false).await.unwrap_err();
        assert!(
            wait > Duration::from_millis(900) && wait <= Duration::from_secs(1),
            "{}: {wait:?}",
            db.kind()
        );
        // Ada elsewhere is not held up by that address's failures.
        assert!(admit(&b, ada, "10.0.0.2", false).await.is_ok());
        // The next failure doubles it.
        advance(&[&a, &b], Duration::from_secs(1));
        a.sign_in_failed(ada, from).await.unwrap();
        let wait = admit(&b, ada, "10.0.0.1", false).await.unwrap_err();
        assert!(
            wait > Duration::from_millis(1_900) && wait <= Duration::from_secs(2),
            "{}: {wait:?}",
            db.kind()
        );
        // A right password starts the pair over, on every process.
        b.sign_in_succeeded(ada, from).await.unwrap();
        assert!(admit(&a, ada, "10.0.0.1", false).await.is_ok());
    }
}

#[tokio::test]
async fn strangers_on_every_process_together_do_not_keep_the_owner_out() {
    for db in testing::all().await {
        let a = engine(&db, &[], quota(1_000, 3)).await;
        let b = engine(&db, &[], quota(1_000, 3)).await;
        let cfo = "cfo@corp.example";
        for (i, process) in [&a, &b, &a].into_iter().enumerate() {
            assert!(admit(process, cfo, &format!("10.0.1.{i}"), false)
                .await
                .is_ok());
        }
        // A fourth stranger waits, whichever process it reaches; the
        // owner's own browser does not; other accounts are untouched.
        assert!(admit(&b, cfo, "10.0.1.9", false).await.is_err());
        assert!(admit(&a, cfo, "10.0.1.9", false).await.is_err());
        assert!(admit(&b, cfo, "10.0.1.9", true).await.is_ok());
        assert!(admit(&a, "ceo@corp.example", "10.0.1.9", false)
            .await
            .is_ok());
    }
}

#[tokio::test]
async fn counts_that_hold_nobody_back_are_pruned() {
    for db in testing::all().await {
        let e = engine(&db, &[], quota(1_000, 1_000)).await;
        let long = "x".repeat(100_000);
        for i in 0..200u32 {
            let from = IpAddr::from([10, 2, (i >> 8) as u8, i as u8]);
            let _ = e
                .admit_sign_in(&format!("{long}{i}"), from, || async { false })
                .await;
            e.sign_in_failed(&format!("{i}@spray.example"), from)
                .await
                .unwrap();
        }
        let (turns, pairs) = e.store().sign_in_rows().await.unwrap();
        // Emails cut to their longest key share one rate.
        assert_eq!((turns, pairs), (201, 200), "{}", db.kind());
        // Rates free again are pruned at once; pairs once quiet for the
        // longest wait.
        e.clock().advance(Duration::from_secs(61));
        e.tidy_now().await;
        assert_eq!(e.store().sign_in_rows().await.unwrap(), (0, 200));
        e.clock().advance(MAX_WAIT);
        e.tidy_now().await;
        assert_eq!(e.store().sign_in_rows().await.unwrap(), (0, 0));
    }
}
