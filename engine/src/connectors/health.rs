//! Connector health: the statuses people and provider answers set
//! (switched off, rate-limited, auth-failed), error streaks that suspend a
//! connector with growing back-off (per server key and per workspace key),
//! the audit trail of each change, and health shared between processes
//! through the store.

use std::time::{Duration, Instant};

use model::{ConnectorStatus, EventKind};

use super::registry::{lock, Registry, RegistryError, SYSTEM_ACTOR};
use crate::store::StoreError;

/// When repeated errors suspend a connector, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuspendPolicy {
    /// Errors in a row that suspend a connector.
    pub after: u32,
    /// The first suspension; each next one lasts twice as long.
    pub base: Duration,
    /// The longest suspension.
    pub max: Duration,
}

impl Default for SuspendPolicy {
    fn default() -> Self {
        Self {
            after: 3,
            base: Duration::from_secs(60),
            max: Duration::from_secs(3600),
        }
    }
}

/// One key's error streak: errors in a row since the last answer,
/// suspensions since the last answer (each twice as long as the one
/// before), and when the first of those suspensions began.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Streak {
    failures: u32,
    suspensions: u32,
    since: i64,
}

/// How stale another process's (or the operator's) change of a connector's
/// health may be here: at most one read of the health table a second.
pub const HEALTH_FRESH_FOR: Duration = Duration::from_secs(1);

impl Registry {
    /// Adopts the health stored in the database (a person's switch, a
    /// provider's rate limit or refusal, a suspension): at start, so it
    /// survives a restart, and then from the other processes (see
    /// [`Registry::adopt_shared_health`]). Adopting announces nothing: the
    /// process that made the change announced it to every viewer.
    pub async fn load_health(&self) -> Result<(), StoreError> {
        let stored = self.store.connector_health().await?;
        *lock(&self.health_read) = Some(Instant::now());
        let mut entries = self.write();
        for health in stored {
            if let Some(entry) = entries.get_mut(&health.connector_id) {
                entry.streak.suspensions = health.suspensions;
                if let ConnectorStatus::Suspended { since, .. } = health.status {
                    entry.streak.since = since;
                }
                entry.status = health.status;
            }
        }
        Ok(())
    }

    /// Adopts what other processes (or the operator's command) stored if
    /// this process last looked more than [`HEALTH_FRESH_FOR`] ago; at once
    /// otherwise. Called on every fire's way: a 429 one process met, a
    /// suspension or a switch hold in every process within a second.
    pub async fn adopt_shared_health(&self) {
        {
            let mut read = lock(&self.health_read);
            if read.is_some_and(|at| at.elapsed() < HEALTH_FRESH_FOR) {
                return;
            }
            // One refresher at a time: the others go on with what is here.
            *read = Some(Instant::now());
        }
        if let Err(e) = self.load_health().await {
            tracing::warn!(error = %e, "Cannot read connector health; going on with this process's.");
        }
    }

    /// Stores a connector's health for the other processes and the next start.
    async fn save_health(&self, id: &str) {
        let Some((status, suspensions)) = self
            .read()
            .get(id)
            .map(|e| (e.status.clone(), e.streak.suspensions))
        else {
            return;
        };
        if let Err(e) =
            crate::store::retrying(|| self.store.save_connector_health(id, &status, suspensions))
                .await
        {
            tracing::error!(connector = %id, error = %e, "Storing a connector's health failed; other processes do not see it.");
        }
    }

    /// Switches a connector off by a person's choice.
    pub async fn disable(&self, id: &str, actor: &str, reason: &str) -> Result<(), RegistryError> {
        let reason = if reason.trim().is_empty() {
            format!("by {actor}")
        } else {
            reason.trim().to_owned()
        };
        self.set_status(id, actor, ConnectorStatus::Disabled { reason })
            .await
    }

    /// Switches a connector back on; also clears auth-failed and rate-limited.
    pub async fn enable(&self, id: &str, actor: &str) -> Result<(), RegistryError> {
        self.set_status(id, actor, ConnectorStatus::Available).await
    }

    /// The provider said 429: skip the connector until `retry_after` passes.
    pub async fn mark_rate_limited(&self, id: &str, retry_after: Duration, reason: &str) {
        let until =
            self.store.now_ms() + i64::try_from(retry_after.as_millis()).unwrap_or(i64::MAX / 2);
        let status = ConnectorStatus::RateLimited {
            until,
            reason: reason.to_owned(),
        };
        let _ = self.set_status(id, SYSTEM_ACTOR, status).await;
    }

    /// The connector answered (found or not): its error streak and back-off end.
    pub async fn record_answer(&self, id: &str) {
        let was_suspended = match self.write().get_mut(id) {
            Some(entry) => std::mem::take(&mut entry.streak).suspensions > 0,
            None => false,
        };
        if was_suspended {
            self.save_health(id).await;
        }
    }

    /// The connector failed (timeout, provider error, unreadable answer)
    /// with the server's key. After `policy.after` errors in a row, or one
    /// error right after a suspension ends, it is suspended for everyone:
    /// `base`, then twice as long each time, up to `max`. Returns the
    /// suspension it gave, if it gave one.
    pub async fn record_failure(&self, id: &str, error: &str) -> Option<ConnectorStatus> {
        let policy = *self.suspend.read().unwrap_or_else(|e| e.into_inner());
        let suspended = {
            let mut entries = self.write();
            let entry = entries.get_mut(id)?;
            if !entry.registration.suspends_on_errors {
                return None;
            }
            let status = entry
                .streak
                .next_suspension(&policy, error, self.store.now_ms())?;
            entry.status = status.clone();
            status
        };
        tracing::warn!(connector = %id, "Connector suspended after repeated errors.");
        self.save_health(id).await;
        if let Err(e) = self.record_status(id, SYSTEM_ACTOR, &suspended).await {
            tracing::error!(connector = %id, error = %e, "Recording a status change failed.");
        }
        self.announce(id);
        Some(suspended)
    }

    /// The connector failed with workspace `workspace_id`'s own key: the
    /// same streak and back-off as [`Registry::record_failure`], counted for
    /// that key alone (in this process). Returns the suspension to give the
    /// connector in that workspace when the streak calls for one.
    pub fn record_workspace_failure(
        &self,
        id: &str,
        workspace_id: i64,
        error: &str,
    ) -> Option<ConnectorStatus> {
        let suspends = self
            .read()
            .get(id)
            .is_some_and(|e| e.registration.suspends_on_errors);
        if !suspends {
            return None;
        }
        let policy = *self.suspend.read().unwrap_or_else(|e| e.into_inner());
        let mut streaks = lock(&self.workspace_streaks);
        streaks
            .entry((id.to_owned(), workspace_id))
            .or_default()
            .next_suspension(&policy, error, self.store.now_ms())
    }

    /// The connector answered with workspace `workspace_id`'s own key: that
    /// key's error streak and back-off end.
    pub fn record_workspace_answer(&self, id: &str, workspace_id: i64) {
        lock(&self.workspace_streaks).remove(&(id.to_owned(), workspace_id));
    }

    /// Sets how repeated errors suspend connectors, for every clone.
    pub fn set_suspend_policy(&self, policy: SuspendPolicy) {
        *self.suspend.write().unwrap_or_else(|e| e.into_inner()) = policy;
    }

    /// The provider refused the credentials: skip the connector until a person
    /// re-enables it.
    pub async fn mark_auth_failed(&self, id: &str, reason: &str) {
        let status = ConnectorStatus::AuthFailed {
            at: self.store.now_ms(),
            reason: reason.to_owned(),
        };
        let _ = self.set_status(id, SYSTEM_ACTOR, status).await;
    }

    async fn set_status(
        &self,
        id: &str,
        actor: &str,
        status: ConnectorStatus,
    ) -> Result<(), RegistryError> {
        {
            let mut entries = self.write();
            let entry = entries
                .get_mut(id)
                .ok_or_else(|| RegistryError::Unknown(id.to_owned()))?;
            if entry.status == status {
                return Ok(());
            }
            entry.status = status.clone();
        }
        tracing::info!(connector = %id, status = status.kind(), actor, "Connector status changed.");
        self.save_health(id).await;
        if let Err(e) = self.record_status(id, actor, &status).await {
            tracing::error!(connector = %id, error = %e, "Recording a status change failed.");
        }
        self.announce(id);
        Ok(())
    }

    async fn record_status(
        &self,
        id: &str,
        actor: &str,
        status: &ConnectorStatus,
    ) -> Result<(), StoreError> {
        // A workspace's own connector's changes are that workspace's to see
        // (another workspace may later save a connector with the same id).
        let owner = self.by_id(id).and_then(|h| h.source.workspace());
        self.store
            .record_connector_status(owner, id, status.kind(), status.reason().as_deref(), actor)
            .await
    }

    /// Tells the viewers who see the connector (a workspace's own connector
    /// is news to that workspace only).
    pub(super) fn announce(&self, id: &str) {
        if let Some(handle) = self.by_id(id) {
            self.events.publish_in(
                handle.source.workspace(),
                EventKind::ConnectorChanged {
                    connector: handle.info(),
                },
            );
        }
    }
}

impl Streak {
    /// Counts one more error in a row; returns the suspension it calls
    /// for: after `policy.after` errors in a row, or one error right after
    /// a suspension ended, for `base`, then twice as long each time, up to
    /// `max`. The suspension says since when the streak has kept the
    /// connector suspended.
    fn next_suspension(
        &mut self,
        policy: &SuspendPolicy,
        error: &str,
        now: i64,
    ) -> Option<ConnectorStatus> {
        self.failures += 1;
        let threshold = if self.suspensions > 0 {
            1
        } else {
            policy.after
        };
        if self.failures < threshold {
            return None;
        }
        let streak = std::mem::take(&mut self.failures);
        if self.suspensions == 0 || self.since == 0 {
            self.since = now;
        }
        self.suspensions += 1;
        let factor = 2u32.saturating_pow(self.suspensions - 1);
        let wait = policy.base.saturating_mul(factor).min(policy.max);
        Some(ConnectorStatus::Suspended {
            until: now + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX / 2),
            since: self.since,
            reason: format!(
                "{streak} error{} in a row (last: {error}); back in {} s",
                if streak == 1 { "" } else { "s" },
                wait.as_secs()
            ),
        })
    }
}
