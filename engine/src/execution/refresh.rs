//! Scheduled refresh: every process looks for due schedules at each
//! heartbeat; the one that claims a run (see `store::refresh`) starts a job
//! of the schedule's pack over the set's records whose last fire of it is
//! older than the schedule's interval, inside its window of UTC hours.
//! Budgets, caps and rate hints hold for these fires like for any job's.

use model::{JobStatus, RefreshPlan, TriggeredBy};

use crate::store::{NewJob, StoreError, StoredSchedule};
use crate::Engine;

const HOUR: i64 = 3_600_000;

/// How many due schedules one look takes on.
const PER_LOOK: i64 = 20;

/// When a schedule looks next, and whether it runs now: inside its window
/// it runs and looks again an hour later (a record that turns stale waits
/// at most that long); outside, it looks again when the next allowed hour
/// starts.
pub fn next_run(plan: &RefreshPlan, now: i64) -> (i64, bool) {
    let hours = now.div_euclid(HOUR);
    let hour_of_day = |h: i64| u8::try_from(h.rem_euclid(24)).unwrap_or(0);
    if plan.allows(hour_of_day(hours)) {
        return (now + HOUR, true);
    }
    let wait = (1..=24)
        .find(|k| plan.allows(hour_of_day(hours + k)))
        .unwrap_or(1);
    ((hours + wait) * HOUR, false)
}

impl Engine {
    /// Runs the schedules due now, each once across every process; answers
    /// the jobs started here. One schedule that fails is logged and the
    /// others still run.
    pub async fn run_due_refreshes(&self) -> Result<Vec<i64>, StoreError> {
        let now = self.store.now_ms();
        let mut started = Vec::new();
        for due in self.store.due_refreshes(now, PER_LOOK).await? {
            match self.run_refresh(&due, now).await {
                Ok(Some(job_id)) => started.push(job_id),
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    set = due.schedule.record_set_id,
                    pack = %due.schedule.pack_id,
                    error = %e,
                    "A scheduled refresh failed; it is looked at again at its next time."
                ),
            }
        }
        Ok(started)
    }

    /// Claims one due schedule's run and, if it is this process's, inside
    /// its window, not still running from last time and with stale records,
    /// starts its job.
    async fn run_refresh(&self, due: &StoredSchedule, now: i64) -> Result<Option<i64>, StoreError> {
        let s = &due.schedule;
        let (next, run) = next_run(&s.plan, now);
        if !self
            .store
            .claim_refresh(due.id, s.next_run_at, next)
            .await?
            || !run
        {
            return Ok(None);
        }
        // The last run still going: this one is skipped.
        if let Some(job_id) = s.last_job_id {
            if matches!(self.store.job(job_id).await, Ok(job) if job.status == JobStatus::Running) {
                return Ok(None);
            }
        }
        let set = self.store.record_set(s.record_set_id).await?;
        let catalog = self.catalog_in(set.workspace_id).await?;
        if catalog.pack(&s.pack_id).is_none() {
            tracing::warn!(set = set.id, pack = %s.pack_id, "A refresh schedule names a pack the workspace no longer has; it does nothing.");
            return Ok(None);
        }
        let since = now - i64::from(s.plan.every_hours) * HOUR;
        if self
            .store
            .stale_records(s.record_set_id, &s.pack_id, since)
            .await?
            == 0
        {
            return Ok(None);
        }
        let packs = [s.pack_id.clone()];
        let actor = format!("{} (scheduled refresh)", s.created_by);
        let job = self
            .jobs
            .start(&NewJob {
                triggered_by: TriggeredBy::ScheduledRefresh,
                stale_before: Some(since),
                ..NewJob::fanout(s.record_set_id, &packs, &actor)
            })
            .await?;
        self.store.refresh_ran(due.id, job.id, now).await?;
        tracing::info!(job = job.id, set = set.id, pack = %s.pack_id, records = job.progress.total, "Scheduled refresh started.");
        Ok(Some(job.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(start: u8, end: u8) -> RefreshPlan {
        RefreshPlan {
            every_hours: 24,
            window_start: start,
            window_end: end,
        }
    }

    #[test]
    fn inside_its_window_a_schedule_runs_and_outside_it_waits_for_the_window() {
        // 2026-12-03T20:30Z.
        let now = 1_796_329_800_000;
        assert_eq!(next_run(&plan(0, 0), now), (now + HOUR, true));
        assert_eq!(next_run(&plan(20, 22), now), (now + HOUR, true));
        // 01:00-05:00: next look at 01:00 the next day.
        let (next, run) = next_run(&plan(1, 5), now);
        assert!(!run);
        assert_eq!(next, 1_796_346_000_000);
        assert_eq!(crate::time::utc_timestamp(next), "2026-12-04T01:00:00Z");
    }
}
