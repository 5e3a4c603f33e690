//! Connector bookkeeping: the status audit trail, each workspace's switches,
//! and the figures of the inventory (fires, answers, latency by hour).

use model::ConnectorStatus;
use sqlx::Row;

use super::{Store, StoreError};

pub use model::StatusChange;

impl Store {
    /// Logs a status change: of the connector itself (`workspace_id` none),
    /// or of its use in one workspace.
    pub async fn record_connector_status(
        &self,
        workspace_id: Option<i64>,
        connector_id: &str,
        status: &str,
        reason: Option<&str>,
        actor: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO connector_status_log (workspace_id, connector_id, status, reason, actor, at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(workspace_id)
        .bind(connector_id)
        .bind(status)
        .bind(reason)
        .bind(actor)
        .bind(self.now_ms())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// A connector's status changes a workspace may see (its own and the
    /// connector's), newest first.
    pub async fn connector_status_log(
        &self,
        connector_id: &str,
        workspace_id: i64,
    ) -> Result<Vec<StatusChange>, StoreError> {
        let rows = sqlx::query(
            "SELECT connector_id, status, reason, actor, at FROM connector_status_log \
             WHERE connector_id = $1 AND (workspace_id IS NULL OR workspace_id = $2) \
             ORDER BY id DESC LIMIT 200",
        )
        .bind(connector_id)
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(StatusChange {
                    connector_id: row.try_get("connector_id")?,
                    status: row.try_get("status")?,
                    reason: row.try_get("reason")?,
                    actor: row.try_get("actor")?,
                    at: row.try_get("at")?,
                })
            })
            .collect()
    }

    /// The connectors a workspace switched off, or that its own key met a
    /// refusal, a rate limit or a suspension with, and the status each shows
    /// there (a rate limit or suspension also after it lifted: readers
    /// compare `until` with the time).
    pub async fn workspace_connector_states(
        &self,
        workspace_id: i64,
    ) -> Result<std::collections::HashMap<String, ConnectorStatus>, StoreError> {
        let rows = sqlx::query(
            "SELECT connector_id, reason, kind, until, disabled_at FROM workspace_connectors \
             WHERE workspace_id = $1",
        )
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                let id: String = row.try_get("connector_id")?;
                let reason: String = row.try_get("reason")?;
                let kind: Option<String> = row.try_get("kind")?;
                let until: Option<i64> = row.try_get("until")?;
                let at: i64 = row.try_get("disabled_at")?;
                let status = match (kind.as_deref(), until) {
                    (Some("rate-limited"), Some(until)) => {
                        ConnectorStatus::RateLimited { until, reason }
                    }
                    // A suspension's row is dated from its streak's first.
                    (Some("suspended"), Some(until)) => ConnectorStatus::Suspended {
                        until,
                        since: at,
                        reason,
                    },
                    (Some("auth-failed"), _) => ConnectorStatus::AuthFailed { at, reason },
                    _ => ConnectorStatus::Disabled { reason },
                };
                Ok((id, status))
            })
            .collect()
    }

    /// Gives a connector a status in one workspace only (`Some`: switched
    /// off by a person, or a refusal, rate limit or suspension met with the
    /// workspace's own key) or takes it back (`None`, or `available`);
    /// `false` when that changed nothing. A derived status (`needs-env`,
    /// `over-budget`) is not the workspace's to set and changes nothing.
    pub async fn set_workspace_connector(
        &self,
        workspace_id: i64,
        connector_id: &str,
        status: Option<&ConnectorStatus>,
        actor: &str,
    ) -> Result<bool, StoreError> {
        // When the state began: now, but a suspension keeps the start of
        // the streak it belongs to.
        let mut began = self.now_ms();
        let (kind, reason, until) = match status {
            None | Some(ConnectorStatus::Available) => (None, "", None),
            Some(ConnectorStatus::NeedsEnv { .. } | ConnectorStatus::OverBudget { .. }) => {
                return Ok(false)
            }
            Some(ConnectorStatus::Disabled { reason }) => (Some("disabled"), reason.as_str(), None),
            Some(ConnectorStatus::AuthFailed { reason, .. }) => {
                (Some("auth-failed"), reason.as_str(), None)
            }
            Some(ConnectorStatus::RateLimited { until, reason }) => {
                (Some("rate-limited"), reason.as_str(), Some(*until))
            }
            Some(ConnectorStatus::Suspended {
                until,
                since,
                reason,
            }) => {
                if *since > 0 {
                    began = *since;
                }
                (Some("suspended"), reason.as_str(), Some(*until))
            }
        };
        let done = match kind {
            Some(kind) => {
                sqlx::query(
                    "INSERT INTO workspace_connectors \
                     (workspace_id, connector_id, reason, disabled_by, disabled_at, kind, until) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7) \
                     ON CONFLICT (workspace_id, connector_id) DO UPDATE SET \
                     reason = excluded.reason, disabled_by = excluded.disabled_by, \
                     disabled_at = excluded.disabled_at, kind = excluded.kind, until = excluded.until",
                )
                .bind(workspace_id)
                .bind(connector_id)
                .bind(reason)
                .bind(actor)
                .bind(began)
                .bind(kind)
                .bind(until)
                .execute(self.pool())
                .await?
            }
            None => sqlx::query(
                "DELETE FROM workspace_connectors WHERE workspace_id = $1 AND connector_id = $2",
            )
            .bind(workspace_id)
            .bind(connector_id)
            .execute(self.pool())
            .await?,
        };
        self.settings_changed(workspace_id);
        Ok(done.rows_affected() > 0)
    }

    /// Switches a connector back on in a workspace if the system (not a
    /// person) switched it off there; `true` when it did.
    pub async fn clear_system_switch(
        &self,
        workspace_id: i64,
        connector_id: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "DELETE FROM workspace_connectors \
             WHERE workspace_id = $1 AND connector_id = $2 AND disabled_by = $3",
        )
        .bind(workspace_id)
        .bind(connector_id)
        .bind(crate::connectors::registry::SYSTEM_ACTOR)
        .execute(self.pool())
        .await?;
        self.settings_changed(workspace_id);
        Ok(done.rows_affected() > 0)
    }

    /// Every connector's finished attempts for a workspace's records and
    /// capability calls since `since` (Unix ms): counts by outcome, duration
    /// percentiles, and counts per hour from `since` to `until`. Reads at
    /// most the newest 50,000 attempts.
    pub async fn connector_stats(
        &self,
        workspace_id: i64,
        since: i64,
        until: i64,
    ) -> Result<Vec<model::ConnectorStats>, StoreError> {
        const HOUR: i64 = 3_600_000;
        let hours = usize::try_from(((until - since) + HOUR - 1) / HOUR)
            .unwrap_or(0)
            .min(24 * 31);
        let rows = sqlx::query(
            // The attempts of fires on the workspace's records and of its
            // capability calls.
            "SELECT connector_id, outcome, fired_at, ms FROM ( \
             SELECT h.connector_id, h.outcome, h.fired_at, h.finished_at - h.fired_at AS ms \
             FROM connector_history h JOIN records r ON r.id = h.record_id \
             JOIN record_sets s ON s.id = r.record_set_id \
             WHERE s.workspace_id = $1 AND h.fired_at >= $2 AND h.finished_at IS NOT NULL \
             AND h.outcome <> 'cancelled' \
             UNION ALL \
             SELECT a.connector_id, a.outcome, a.fired_at, a.finished_at - a.fired_at AS ms \
             FROM call_attempts a JOIN calls c ON c.id = a.call_id \
             WHERE c.workspace_id = $1 AND a.fired_at >= $2 AND a.finished_at IS NOT NULL \
             AND a.outcome <> 'cancelled') attempts \
             ORDER BY fired_at DESC LIMIT 50000",
        )
        .bind(workspace_id)
        .bind(since)
        .fetch_all(self.pool())
        .await?;
        // Per connector: its stats, all its durations, and each hour's.
        type Tally = (model::ConnectorStats, Vec<i64>, Vec<Vec<i64>>);
        let mut by_connector: std::collections::BTreeMap<String, Tally> =
            std::collections::BTreeMap::new();
        for row in &rows {
            let id: String = row.try_get("connector_id")?;
            let outcome: Option<String> = row.try_get("outcome")?;
            let ms: i64 = row.try_get("ms")?;
            let fired_at: i64 = row.try_get("fired_at")?;
            let (stats, durations, hourly) = by_connector.entry(id.clone()).or_insert_with(|| {
                (
                    model::ConnectorStats {
                        connector_id: id,
                        hours: vec![model::HourCount::default(); hours],
                        ..Default::default()
                    },
                    Vec::new(),
                    vec![Vec::new(); hours],
                )
            });
            stats.attempts += 1;
            let (found, failed, limited) = match outcome.as_deref() {
                Some("found") => {
                    stats.found += 1;
                    (1, 0, 0)
                }
                Some("not_found") => {
                    stats.not_found += 1;
                    (0, 0, 0)
                }
                Some("rate_limited") => {
                    stats.rate_limited += 1;
                    (0, 1, 1)
                }
                _ => {
                    stats.errors += 1;
                    (0, 1, 0)
                }
            };
            let hour = usize::try_from((fired_at - since) / HOUR).unwrap_or(usize::MAX);
            if let (Some(bucket), Some(times)) = (stats.hours.get_mut(hour), hourly.get_mut(hour)) {
                bucket.attempts += 1;
                bucket.found += found;
                bucket.failed += failed;
                bucket.rate_limited += limited;
                times.push(ms.max(0));
            }
            durations.push(ms.max(0));
        }
        Ok(by_connector
            .into_values()
            .map(|(mut stats, mut durations, hourly)| {
                durations.sort_unstable();
                stats.p50_ms = percentile(&durations, 50);
                stats.p95_ms = percentile(&durations, 95);
                for (bucket, mut times) in stats.hours.iter_mut().zip(hourly) {
                    times.sort_unstable();
                    bucket.p50_ms = percentile(&times, 50);
                    bucket.p95_ms = percentile(&times, 95);
                }
                stats
            })
            .collect())
    }
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[i64], p: usize) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&values, 50), Some(50));
        assert_eq!(percentile(&values, 95), Some(95));
        assert_eq!(percentile(&[7], 95), Some(7));
        assert_eq!(percentile(&[1, 2], 50), Some(1));
        assert_eq!(percentile(&[], 50), None);
    }
}
