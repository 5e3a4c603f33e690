//! Connector operations: the connectors as the caller's workspace sees
//! them (status, stats, inventory, audit), its admins' switches and
//! probes, and the operator's clearing of a connector's health.

use model::{ConnectorInfo, ConnectorStatus, EventKind, InventoryRow, TestReport};

use crate::connectors::lens::Lens;
use crate::connectors::manifest::report;
use crate::connectors::registry::RegistryError;
use crate::connectors::seam::{FireError, FireOpts};
use crate::ops::OpError;
use crate::store::{StatusChange, StoreError};
use crate::tenancy::Principal;
use crate::Engine;

/// What a re-check asks a connector for: a name every search knows.
pub const RECHECK_QUERY: &str = "Wikipedia";

/// The window the inventory's and `/metrics`' figures cover: one day.
pub const STATS_WINDOW_MS: i64 = 24 * 60 * 60 * 1000;

impl Engine {
    /// The connectors the caller's workspace sees, as it sees them.
    pub async fn connectors(&self, who: &Principal) -> Result<Vec<ConnectorInfo>, OpError> {
        Ok(self.connectors_in(who.workspace_id).await?)
    }

    /// Each connector's figures over the last day in the caller's
    /// workspace (fires, answers, latency by hour).
    pub async fn connector_stats(
        &self,
        who: &Principal,
    ) -> Result<Vec<model::ConnectorStats>, OpError> {
        Ok(self.connector_stats_in(who.workspace_id).await?)
    }

    /// The caller's workspace's connectors with their status and figures.
    pub async fn inventory(&self, who: &Principal) -> Result<Vec<InventoryRow>, OpError> {
        Ok(self.inventory_in(who.workspace_id).await?)
    }

    /// Every connector the workspace sees, as it sees it.
    pub(crate) async fn connectors_in(
        &self,
        workspace_id: i64,
    ) -> Result<Vec<ConnectorInfo>, StoreError> {
        let lens = self.lens_now(workspace_id).await?;
        Ok(lens
            .handles(&self.registry)
            .iter()
            .map(|h| lens.info(h))
            .collect())
    }

    /// How the workspace sees the registry now (with what other processes
    /// learned about the connectors).
    pub(crate) async fn lens_now(&self, workspace_id: i64) -> Result<Lens, StoreError> {
        let lens = Lens::of(&self.store, Some(workspace_id)).await?;
        self.registry.adopt_shared_health().await;
        Ok(lens)
    }

    /// How each connector did for the workspace's records over the last
    /// day: counts by outcome, latency, and both hour by hour.
    pub(crate) async fn connector_stats_in(
        &self,
        workspace_id: i64,
    ) -> Result<Vec<model::ConnectorStats>, StoreError> {
        let now = self.store.now_ms();
        self.store
            .connector_stats(workspace_id, now - STATS_WINDOW_MS, now)
            .await
    }

    /// The inventory of a workspace: every connector with today's fires and
    /// its figures over the last [`STATS_WINDOW_MS`].
    pub(crate) async fn inventory_in(
        &self,
        workspace_id: i64,
    ) -> Result<Vec<InventoryRow>, StoreError> {
        let mut stats = self.connector_stats_in(workspace_id).await?;
        let today = self.store.fires_today().await?;
        let lens = self.lens_now(workspace_id).await?;
        Ok(lens
            .handles(&self.registry)
            .iter()
            .map(|h| {
                let info = lens.info(h);
                let at = stats.iter().position(|s| s.connector_id == info.profile.id);
                // Today's fires count against the cap of the key the
                // workspace uses.
                let key = crate::connectors::lens::usage_key(&info.profile.id, lens.key_owner(h));
                InventoryRow {
                    fires_today: today.get(&key).copied().unwrap_or(0),
                    stats: at.map(|i| stats.swap_remove(i)),
                    info,
                }
            })
            .collect())
    }

    /// One connector as the workspace sees it.
    pub async fn connector_in(
        &self,
        workspace_id: i64,
        id: &str,
    ) -> Result<ConnectorInfo, OpError> {
        Ok(self
            .connectors_in(workspace_id)
            .await?
            .into_iter()
            .find(|c| c.profile.id == id)
            .ok_or_else(|| RegistryError::Unknown(id.to_owned()))?)
    }

    /// Clears what the server's key met for a connector (the operator's
    /// command): stored as available for every process, which follow within
    /// [`crate::connectors::health::HEALTH_FRESH_FOR`], and logged for every
    /// workspace. Returns what it cleared, if anything.
    pub async fn clear_connector_health(
        &self,
        id: &str,
    ) -> Result<Option<ConnectorStatus>, StoreError> {
        let stored = self
            .store
            .connector_health()
            .await?
            .into_iter()
            .find(|h| h.connector_id == id);
        let Some(was) = stored
            .map(|h| h.status)
            .filter(|s| *s != ConnectorStatus::Available)
        else {
            return Ok(None);
        };
        self.store
            .save_connector_health(id, &ConnectorStatus::Available, 0)
            .await?;
        self.store
            .record_connector_status(
                None,
                id,
                "available",
                Some(&format!("cleared {} for another try", was.kind())),
                "the operator",
            )
            .await?;
        Ok(Some(was))
    }

    /// Switches a connector off for the caller's workspace (admins).
    pub async fn disable_connector(
        &self,
        who: &Principal,
        id: &str,
        reason: &str,
    ) -> Result<ConnectorInfo, OpError> {
        crate::ops::require_admin(who)?;
        if self.registry.by_id_in(id, Some(who.workspace_id)).is_none() {
            return Err(RegistryError::Unknown(id.to_owned()).into());
        }
        let reason = match reason.trim() {
            "" => format!("by {}", who.email),
            given => given.to_owned(),
        };
        if self
            .store
            .set_workspace_connector(
                who.workspace_id,
                id,
                Some(&ConnectorStatus::Disabled {
                    reason: reason.clone(),
                }),
                &who.email,
            )
            .await?
        {
            self.store
                .record_connector_status(
                    Some(who.workspace_id),
                    id,
                    "disabled",
                    Some(&reason),
                    &who.email,
                )
                .await?;
        }
        self.announce_in(who.workspace_id, id).await
    }

    /// Switches a connector back on for the caller's workspace (admins): a
    /// switch of theirs, and a refusal, rate limit or suspension their own
    /// key met. What the server's key met is not theirs to clear: the
    /// operator clears it (`switchyard connector clear`), or a re-check that
    /// the provider answers with the server's key does.
    pub async fn enable_connector(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<ConnectorInfo, OpError> {
        crate::ops::require_admin(who)?;
        if self.registry.by_id_in(id, Some(who.workspace_id)).is_none() {
            return Err(RegistryError::Unknown(id.to_owned()).into());
        }
        if self
            .store
            .set_workspace_connector(who.workspace_id, id, None, &who.email)
            .await?
        {
            self.store
                .record_connector_status(Some(who.workspace_id), id, "available", None, &who.email)
                .await?;
        }
        self.announce_in(who.workspace_id, id).await
    }

    /// Tells the workspace's viewers how it sees the connector now.
    pub(crate) async fn announce_in(
        &self,
        workspace_id: i64,
        id: &str,
    ) -> Result<ConnectorInfo, OpError> {
        let info = self.connector_in(workspace_id, id).await?;
        self.events.publish_in(
            Some(workspace_id),
            EventKind::ConnectorChanged {
                connector: info.clone(),
            },
        );
        Ok(info)
    }

    /// Re-checks a connector (admins): fires it once with a probe query and
    /// the workspace's keys, outside any chain and without keeping results.
    /// An answer clears what an earlier failure of the same key set: with
    /// the server's key, its auth-failed or suspension for everyone; with
    /// the workspace's own key, what that key met there. A failure is only
    /// reported. The probe is a call like any other: it takes its price
    /// from the workspace's budgets and its place under the daily cap (and
    /// the workspace's share of it), given back when the provider does not
    /// bill it. While the provider has asked the server's key to wait, no
    /// workspace may probe it: that would ask the provider again for
    /// everyone.
    pub async fn recheck(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<(ConnectorInfo, TestReport), OpError> {
        crate::ops::require_admin(who)?;
        let Some(handle) = self.registry.by_id_in(id, Some(who.workspace_id)) else {
            return Err(RegistryError::Unknown(id.to_owned()).into());
        };
        let key_owner = Lens::of(&self.store, Some(who.workspace_id))
            .await?
            .key_owner(&handle);
        let started = std::time::Instant::now();
        let mut charged = None;
        let fired = match (
            &handle.status,
            handle.registration.profile.capabilities.first(),
        ) {
            (ConnectorStatus::RateLimited { until, reason }, _) if key_owner.is_none() => {
                Err(FireError::RateLimited {
                    retry_after: None,
                    reason: format!(
                        "{reason}; not probed before {}",
                        crate::time::format_utc(*until)
                    ),
                })
            }
            (_, None) => Err(FireError::Malformed {
                reason: "it serves no capability".to_owned(),
            }),
            (_, Some(intent)) => {
                let all = self.dispatcher.workspace_secrets(who.workspace_id).await?;
                let opts = FireOpts {
                    max_results: 3,
                    secrets: all.only(&handle.registration.profile.requires_env),
                    ..FireOpts::default()
                };
                let call = (intent, RECHECK_QUERY, &opts);
                match self
                    .dispatcher
                    .call_once(&handle, who.workspace_id, key_owner, call)
                    .await?
                {
                    Ok((ended, charge)) => {
                        charged = charge;
                        ended
                    }
                    Err(reason) => Err(FireError::RateLimited {
                        retry_after: None,
                        reason: format!("{reason}; not probed"),
                    }),
                }
            }
        };
        let report = report(fired, started);
        let answered = report.answered();
        let summary = match (&report.error, report.results.len()) {
            (Some(e), _) if !answered => format!("failed: {e}"),
            (Some(e), n) => format!("answered, found {n} ({e})"),
            (None, 0) => "answered, found nothing".to_owned(),
            (None, n) => format!("answered, found {n}"),
        };
        let summary = match charged {
            Some(c) => format!("{summary}; billed {}", c.amount.in_unit(&c.unit)),
            None => summary,
        };
        if answered {
            if let Some(ws) = key_owner {
                self.registry.record_workspace_answer(id, ws);
            } else {
                self.registry.record_answer(id).await;
            }
            if key_owner.is_none()
                && matches!(
                    handle.status,
                    ConnectorStatus::AuthFailed { .. }
                        | ConnectorStatus::RateLimited { .. }
                        | ConnectorStatus::Suspended { .. }
                )
            {
                self.registry
                    .enable(id, "a workspace admin's re-check")
                    .await?;
            }
            self.store.clear_system_switch(who.workspace_id, id).await?;
        }
        self.store
            .record_connector_status(
                Some(who.workspace_id),
                id,
                "rechecked",
                Some(&summary),
                &who.email,
            )
            .await?;
        Ok((self.announce_in(who.workspace_id, id).await?, report))
    }

    /// The status changes of a connector the caller's workspace may see.
    pub async fn connector_audit(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<Vec<StatusChange>, OpError> {
        if self.registry.by_id_in(id, Some(who.workspace_id)).is_none() {
            return Err(RegistryError::Unknown(id.to_owned()).into());
        }
        Ok(self
            .store
            .connector_status_log(id, who.workspace_id)
            .await?)
    }
}
