//! Leases: every running fire, job task and job carries the process that
//! owns it and a lease that process renews while it works (the heartbeat);
//! a job cancelled through another process stops within a second.
//! Work whose lease expired belongs to a process that died or hung: any
//! process that notices (at start, then every heartbeat) closes such fires
//! as interrupted, returns such tasks to their job's queue and takes such
//! jobs over. Work under a fresh lease is never touched.

use std::sync::Arc;
use std::time::Duration;

use model::{ChipState, EventKind};

use crate::connectors::registry::SYSTEM_ACTOR;
use crate::store::{Leased, ReapedFire, StoreError};
use crate::Engine;

/// How often a process running jobs looks for those cancelled elsewhere.
pub const ENDED_JOBS_EVERY: Duration = Duration::from_secs(1);

/// An import still unfinished this long after it began lost its process
/// (a 100,000-record file takes seconds): the heartbeat deletes it.
pub const ABANDONED_IMPORT_AFTER: Duration = Duration::from_secs(3600);

/// Lease settings, with their defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseConfig {
    /// How long a lease lasts without renewal (`--lease-seconds`).
    pub lease: Duration,
    /// How often the owner renews its leases and looks for expired ones
    /// (`--heartbeat-seconds`). Well under `lease`, so a slow heartbeat or
    /// two does not lose work that is alive.
    pub heartbeat: Duration,
}

impl Default for LeaseConfig {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(30),
            heartbeat: Duration::from_secs(10),
        }
    }
}

impl LeaseConfig {
    /// Checks the settings: a heartbeat must come at least twice per lease.
    pub fn new(lease: Duration, heartbeat: Duration) -> Result<Self, String> {
        if heartbeat.is_zero() || lease.is_zero() {
            return Err("the lease and the heartbeat must be longer than zero".to_owned());
        }
        if heartbeat.saturating_mul(2) > lease {
            return Err(format!(
                "the heartbeat ({} ms) must be at most half the lease ({} ms), or live work would be taken over",
                heartbeat.as_millis(),
                lease.as_millis()
            ));
        }
        Ok(Self { lease, heartbeat })
    }

    /// The lease expiry of work renewed at `now` (Unix ms).
    pub fn expiry(&self, now: i64) -> i64 {
        now.saturating_add(i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX / 2))
    }
}

/// This process as an owner of work: host, process id and a random part,
/// unique across restarts and machines. Cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Owner(Arc<str>);

impl Owner {
    /// A new owner id for this process.
    pub fn new() -> Self {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| {
                h.trim()
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
                    .take(64)
                    .collect::<String>()
            })
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "host".to_owned());
        let random: u32 = rand::random();
        Self(format!("{host}/{}/{random:08x}", std::process::id()).into())
    }

    /// A given id, for tests that play another process.
    pub fn named(id: &str) -> Self {
        Self(id.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Owner {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What one look for expired leases found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Fires closed as interrupted.
    pub fires: usize,
    /// Tasks returned to their job's queue.
    pub tasks: u64,
    /// Jobs this process took over.
    pub jobs: Vec<i64>,
}

impl Engine {
    /// Takes over what dead processes left (work whose lease expired) and
    /// starts the heartbeat: every `leases.heartbeat` this process renews its
    /// leases, stops its jobs that were cancelled elsewhere, and takes over
    /// work whose lease expired since; the database probe open streams
    /// hear (`live::database`); the folding of the sets' tallies
    /// (`store::tallies`); and, on a SQLite file, the checkpoints of its
    /// log (`store::wal`). Call once, after registering
    /// connectors.
    pub async fn recover(&self) -> Result<Reclaimed, StoreError> {
        let reclaimed = self.reclaim().await?;
        let engine = self.clone();
        tokio::spawn(async move { engine.heartbeats().await });
        let engine = self.clone();
        tokio::spawn(async move { engine.follow_ended_jobs().await });
        let engine = self.clone();
        tokio::spawn(async move { engine.follow_database().await });
        let (store, stop) = (self.store.clone(), self.upkeep.clone());
        tokio::spawn(async move { store.keep_log_small(stop).await });
        let (store, stop) = (self.store.clone(), self.upkeep.clone());
        tokio::spawn(async move { store.keep_tallies_folded(stop).await });
        if self.store.backend() == crate::store::Backend::Postgres {
            let engine = self.clone();
            tokio::spawn(async move { engine.follow_saved_manifests().await });
        }
        Ok(reclaimed)
    }

    /// Stops the heartbeat: this process's leases expire from then on and
    /// other processes take its work over.
    pub fn stop_heartbeat(&self) {
        self.upkeep.cancel();
    }

    /// Hands this process's work over before it stops: it takes nothing
    /// more over, its jobs stop claiming tasks, fires in flight get `grace`
    /// (at most half a lease, so no lease runs out meanwhile) to end, and
    /// whatever still runs is released at once (its fires closed as
    /// interrupted, its tasks and jobs free for another process or the next
    /// start) instead of waiting for its leases to expire.
    pub async fn hand_over(&self, grace: Duration) -> Result<(), StoreError> {
        self.stop_heartbeat();
        self.jobs.stop_claiming();
        let deadline = tokio::time::Instant::now() + grace.min(self.leases.lease / 2);
        while (!self.dispatcher.in_flight().is_empty() || !self.jobs.owned().0.is_empty())
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let released = self.store.release_owner(self.owner.as_str()).await?;
        let interrupted = self.store.reap_expired_fires(self.store.now_ms()).await?;
        for fire in &interrupted {
            if let Err(e) = self.announce_reaped(fire).await {
                tracing::warn!(fire = fire.fire_id, error = %e, "Telling viewers about an interrupted fire failed.");
            }
        }
        if let Err(e) = self.presence.leave_all().await {
            tracing::warn!(error = %e, "Removing this process's viewers failed; they go when their time runs out.");
        }
        // What this process published reaches the other processes (unless
        // the database is gone: a stop never hangs on it).
        if tokio::time::timeout(Duration::from_secs(5), self.events.flush())
            .await
            .is_err()
        {
            tracing::warn!(
                "Events this process published could not all be written before it stopped."
            );
        }
        if released > 0 {
            tracing::info!(
                released,
                interrupted = interrupted.len(),
                "Handed running work over."
            );
        }
        Ok(())
    }

    async fn heartbeats(&self) {
        let mut every = tokio::time::interval(self.leases.heartbeat);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        every.tick().await;
        loop {
            tokio::select! {
                _ = every.tick() => {}
                () = self.upkeep.cancelled() => return,
            }
            if let Err(e) = self.heartbeat().await {
                tracing::warn!(error = %e, "Renewing this process's leases failed; trying again at the next heartbeat.");
            }
            if let Err(e) = self.reclaim().await {
                tracing::warn!(error = %e, "Looking for expired leases failed; trying again at the next heartbeat.");
            }
            if let Err(e) = self.presence.renew().await {
                tracing::warn!(error = %e, "Renewing this process's viewers failed; trying again at the next heartbeat.");
            }
            if let Err(e) = self.events.prune().await {
                tracing::warn!(error = %e, "Pruning old events failed; trying again at the next heartbeat.");
            }
            self.tidy().await;
            if let Err(e) = self.run_due_refreshes().await {
                tracing::warn!(error = %e, "Running due refresh schedules failed; trying again at the next heartbeat.");
            }
        }
    }

    /// Deletes what is left over and holds nobody back: imports whose
    /// process stopped mid-file, and quiet sign-in counts.
    pub(crate) async fn tidy(&self) {
        let abandoned = self
            .store
            .now_ms()
            .saturating_sub(ABANDONED_IMPORT_AFTER.as_millis() as i64);
        match self.store.forget_abandoned_imports(abandoned).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                record_sets = n,
                "Deleted imports whose process stopped mid-file."
            ),
            Err(e) => {
                tracing::warn!(error = %e, "Deleting abandoned imports failed; trying again at the next heartbeat.")
            }
        }
        if let Err(e) = self.forget_quiet_sign_ins().await {
            tracing::warn!(error = %e, "Pruning sign-in counts failed; trying again at the next heartbeat.");
        }
    }

    /// Every [`ENDED_JOBS_EVERY`] while this process runs jobs or calls,
    /// stops those that ended elsewhere (a person cancelled one through
    /// another process): one small read, so a cancel reaches the owner's
    /// fires within a second rather than at its next heartbeat.
    async fn follow_ended_jobs(&self) {
        let mut every = tokio::time::interval(ENDED_JOBS_EVERY.min(self.leases.heartbeat));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => {}
                () = self.upkeep.cancelled() => return,
            }
            let calls = self.calls_walking_here();
            match self.store.calls_not_running(&calls).await {
                Ok(ended) => {
                    for id in ended {
                        self.stop_call_here(id);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "Looking for calls cancelled elsewhere failed; trying again.");
                }
            }
            let (jobs, _) = self.jobs.owned();
            if jobs.is_empty() {
                continue;
            }
            match self.store.jobs_not_running(&jobs).await {
                Ok(ended) => {
                    for id in ended {
                        self.jobs.stop_here(id);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "Looking for jobs cancelled elsewhere failed; trying again.");
                }
            }
        }
    }

    /// Renews the leases of everything running in this process.
    pub async fn heartbeat(&self) -> Result<(), StoreError> {
        let until = self.leases.expiry(self.store.now_ms());
        let owner = self.owner.as_str();
        let fires = self.dispatcher.in_flight();
        self.store
            .renew(Leased::Fires, owner, &fires, until)
            .await?;
        let (jobs, tasks) = self.jobs.owned();
        self.store
            .renew(Leased::Tasks, owner, &tasks, until)
            .await?;
        self.store.renew(Leased::Jobs, owner, &jobs, until).await?;
        let longest = i64::try_from(self.calls.longest.as_millis()).unwrap_or(i64::MAX / 2);
        self.store
            .renew_calls(&self.calls_walking_here(), until, longest)
            .await?;
        Ok(())
    }

    /// Closes fires, requeues tasks and takes over jobs whose lease expired
    /// (and only those): their process died or hung.
    pub async fn reclaim(&self) -> Result<Reclaimed, StoreError> {
        let now = self.store.now_ms();
        let fires = self.store.reap_expired_fires(now).await?;
        for fire in &fires {
            if let Err(e) = self.announce_reaped(fire).await {
                tracing::warn!(fire = fire.fire_id, error = %e, "Telling viewers about an interrupted fire failed.");
            }
        }
        let tasks = self.store.requeue_expired_tasks(now).await?;
        let jobs = self
            .store
            .claim_expired_jobs(
                self.owner.as_str(),
                now,
                self.leases.expiry(self.store.now_ms()),
            )
            .await?;
        for id in &jobs {
            self.jobs.resume(*id).await?;
        }
        if !fires.is_empty() || tasks > 0 || !jobs.is_empty() {
            tracing::warn!(
                fires = fires.len(),
                tasks,
                jobs = jobs.len(),
                "Took over work whose process stopped (its lease expired)."
            );
        }
        Ok(Reclaimed {
            fires: fires.len(),
            tasks,
            jobs,
        })
    }

    /// Tells the viewers of a reaped fire's record set what its chip shows now.
    async fn announce_reaped(&self, fire: &ReapedFire) -> Result<(), StoreError> {
        let (record, set) = self.store.record_and_set(fire.record_id).await?;
        let scope = self.dispatcher.scope(set.workspace_id).await?;
        let chip = match scope.catalog.pack(&fire.pack_id) {
            Some(pack) => self.dispatcher.chip_of(&scope, record.id, pack).await?,
            None => ChipState::Idle,
        };
        self.events.publish(
            Some(set.id),
            EventKind::FireNews {
                record_id: record.id,
                pack_id: fire.pack_id.clone(),
                actor: SYSTEM_ACTOR.to_owned(),
                attempts: Vec::new(),
                items: Vec::new(),
                chip: Some(chip),
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_differ_and_name_their_process() {
        let a = Owner::new();
        let b = Owner::new();
        assert_ne!(a, b);
        assert!(
            a.as_str().contains(&format!("/{}/", std::process::id())),
            "{a}"
        );
    }

    #[test]
    fn a_heartbeat_must_fit_twice_in_a_lease() {
        let s = Duration::from_secs;
        assert!(LeaseConfig::new(s(30), s(10)).is_ok());
        assert!(LeaseConfig::new(s(30), s(15)).is_ok());
        let err = LeaseConfig::new(s(30), s(20)).unwrap_err();
        assert!(err.contains("at most half"), "{err}");
        assert!(LeaseConfig::new(s(0), s(0)).is_err());
        let c = LeaseConfig::default();
        assert!(c.expiry(1_000) == 31_000);
    }
}
