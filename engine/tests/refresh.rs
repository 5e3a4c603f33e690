//! Scheduled refresh over one database shared by two processes: a due
//! schedule runs once, as a `scheduled-refresh` job over the records whose
//! last fire of the pack is older than its interval, and results stay
//! additive; on SQLite and PostgreSQL.

mod common;

use std::time::Duration;

use engine::connectors::scripted::Step;
use engine::execution::dispatch::FireRequest;
use engine::store::testing;
use engine::EngineConfig;
use model::{RefreshPlan, TriggeredBy};

#[tokio::test]
async fn a_due_refresh_runs_once_across_processes_over_the_stale_records_only() {
    for db in testing::all().await {
        let one = common::engine(&db, &["alpha"], EngineConfig::default()).await;
        let two = common::engine(&db, &["alpha"], EngineConfig::default()).await;
        // One provider behind both processes' connector.
        let alpha = [
            common::scripted(&one, "alpha", None, vec![Step::Found(1)]),
            common::scripted(&two, "alpha", None, vec![Step::Found(1)]),
        ];
        let set = common::record_set(&one, "Refreshed", 4).await;
        let records = one.store().records(set, 0, 10).await.unwrap();
        let ids: Vec<i64> = records.iter().map(|r| r.id).collect();
        // Two records were fired a moment ago: they are fresh.
        for id in &ids[..2] {
            one.dispatcher()
                .fire(FireRequest::by_person(*id, "web", None, "ana"))
                .await
                .unwrap();
        }
        one.store()
            .set_refresh(
                set,
                "web",
                RefreshPlan {
                    every_hours: 24,
                    window_start: 0,
                    window_end: 0,
                },
                "ana",
            )
            .await
            .unwrap();

        // Both processes look at once: one of them runs it.
        let (a, b) = tokio::join!(one.run_due_refreshes(), two.run_due_refreshes());
        let started: Vec<i64> = a.unwrap().into_iter().chain(b.unwrap()).collect();
        assert_eq!(started.len(), 1, "{}: run once, not {started:?}", db.kind());
        let job = common::finished(&one, started[0], Duration::from_secs(20)).await;
        assert_eq!(job.triggered_by, TriggeredBy::ScheduledRefresh);
        assert_eq!(
            job.progress.total,
            2,
            "{}: the two stale records",
            db.kind()
        );
        assert_eq!(job.created_by, "ana (scheduled refresh)");
        assert_eq!(alpha[0].calls() + alpha[1].calls(), 4, "{}", db.kind());
        let history = one.store().history(ids[3]).await.unwrap();
        assert_eq!(history[0].triggered_by, TriggeredBy::ScheduledRefresh);

        // Not due again before its next look, and nothing is stale then.
        assert!(one.run_due_refreshes().await.unwrap().is_empty());
        let schedule = &one.store().refreshes_of(set).await.unwrap()[0];
        assert_eq!(schedule.last_job_id, Some(job.id));
        assert!(schedule.next_run_at > schedule.last_run_at.unwrap());
    }
}
