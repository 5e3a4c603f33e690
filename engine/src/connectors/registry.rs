//! The registry: the runtime set of connectors. Register and unregister
//! while fires are in flight; look up by id or by intent, each connector with
//! its effective status (needs-env derived here; what people and providers
//! set is in `health`); and throttle every caller of a connector together.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use model::{
    Capability, ConnectorInfo, ConnectorProfile, ConnectorSource, ConnectorStatus, Problem,
};

use super::health::{Streak, SuspendPolicy};
use crate::connectors::seam::Connector;
use crate::execution::throttle::{Priority, Throttle};
use crate::live::events::EventBus;
use crate::store::Store;
use model::EventKind;

/// What a connector declares about itself, and how the registry treats it.
#[derive(Clone, Debug, PartialEq)]
pub struct Registration {
    pub profile: ConnectorProfile,
    /// Whether repeated errors suspend it. A connector whose errors are about
    /// the record's own target (a website that is down) says no: one broken
    /// site says nothing about the next.
    pub suspends_on_errors: bool,
}

/// Why a registration was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RegistryError {
    #[error("connector {id:?} cannot be registered: {}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid { id: String, problems: Vec<Problem> },
    #[error("no connector {0:?} is registered")]
    Unknown(String),
}

/// How the registry reads environment variables (tests inject their own).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

pub(super) struct Entry {
    pub(super) registration: Registration,
    pub(super) source: ConnectorSource,
    /// Its error streak with the server's key.
    pub(super) streak: Streak,
    pub(super) connector: Arc<dyn Connector>,
    /// Set by people or by provider answers; `NeedsEnv` is derived instead.
    pub(super) status: ConnectorStatus,
    pub(super) throttle: Option<Arc<Throttle>>,
}

/// A registered connector as a caller gets it: the registration, the status in
/// force now and the handle to fire it.
#[derive(Clone)]
pub struct ConnectorHandle {
    pub registration: Registration,
    pub status: ConnectorStatus,
    pub source: ConnectorSource,
    pub connector: Arc<dyn Connector>,
    throttle: Option<Arc<Throttle>>,
}

impl std::fmt::Debug for ConnectorHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectorHandle")
            .field("id", &self.registration.profile.id)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl ConnectorHandle {
    /// Waits until the connector's per-second hint allows one more fire;
    /// every caller in the process shares the same budget, a person's fire
    /// goes ahead of background ones, and people's fires take turns by
    /// `workspace`.
    pub async fn throttle(&self, priority: Priority, workspace: Option<i64>) {
        if let Some(throttle) = &self.throttle {
            throttle.wait(priority, workspace).await;
        }
    }

    pub fn info(&self) -> ConnectorInfo {
        ConnectorInfo {
            profile: self.registration.profile.clone(),
            status_reason: self.status.reason(),
            status: self.status.clone(),
            source: self.source.clone(),
        }
    }
}

/// The shared, concurrent set of connectors. Cheap to clone.
#[derive(Clone)]
pub struct Registry {
    pub(super) entries: Arc<RwLock<HashMap<String, Entry>>>,
    pub(super) suspend: Arc<RwLock<SuspendPolicy>>,
    pub(super) env: EnvLookup,
    pub(super) store: Store,
    pub(super) events: EventBus,
    /// When this process last read the health other processes stored.
    pub(super) health_read: Arc<Mutex<Option<Instant>>>,
    /// Errors in a row and suspensions, per connector and workspace, of
    /// calls with a workspace's own key.
    pub(super) workspace_streaks: Arc<Mutex<HashMap<(String, i64), Streak>>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

/// Who changed a status, for the audit trail: a user's name or `system`.
pub const SYSTEM_ACTOR: &str = "system";

impl Registry {
    pub fn new(store: Store, events: EventBus) -> Self {
        Self::with_env(store, events, Arc::new(|name| std::env::var(name).ok()))
    }

    /// A registry reading environment variables through `env`.
    pub fn with_env(store: Store, events: EventBus, env: EnvLookup) -> Self {
        Self {
            entries: Arc::default(),
            suspend: Arc::default(),
            env,
            store,
            events,
            health_read: Arc::default(),
            workspace_streaks: Arc::default(),
        }
    }

    /// Adds or replaces a coded connector. A replaced connector keeps a
    /// status a person set (disabled) or a provider set (rate-limited,
    /// auth-failed).
    pub fn register(
        &self,
        registration: Registration,
        connector: Arc<dyn Connector>,
    ) -> Result<(), RegistryError> {
        self.register_from(registration, connector, ConnectorSource::Builtin)
    }

    /// Adds or replaces a connector that came from `source`.
    pub fn register_from(
        &self,
        registration: Registration,
        connector: Arc<dyn Connector>,
        source: ConnectorSource,
    ) -> Result<(), RegistryError> {
        validate(&registration)?;
        let id = registration.profile.id.clone();
        {
            let mut entries = self.write();
            let old = entries.get(&id);
            let status = old.map_or(ConnectorStatus::Available, |old| old.status.clone());
            // The same rate keeps its budget: an edit elsewhere in the
            // connector must not hand it a fresh burst.
            let throttle = match old {
                Some(old)
                    if old.registration.profile.rate_hints.per_second
                        == registration.profile.rate_hints.per_second =>
                {
                    old.throttle.clone()
                }
                _ => registration
                    .profile
                    .rate_hints
                    .per_second
                    .and_then(Throttle::new)
                    .map(Arc::new),
            };
            entries.insert(
                id.clone(),
                Entry {
                    registration,
                    source,
                    streak: Streak::default(),
                    connector,
                    status,
                    throttle,
                },
            );
        }
        tracing::info!(connector = %id, "Connector registered.");
        self.announce(&id);
        Ok(())
    }

    /// Removes a connector; fires already running through it finish.
    pub fn unregister(&self, id: &str) -> Result<(), RegistryError> {
        let removed = self
            .write()
            .remove(id)
            .ok_or_else(|| RegistryError::Unknown(id.to_owned()))?;
        tracing::info!(connector = %id, "Connector unregistered.");
        self.events.publish_in(
            removed.source.workspace(),
            EventKind::ConnectorRemoved { id: id.to_owned() },
        );
        Ok(())
    }

    /// The connector with this id, with its status in force now.
    pub fn by_id(&self, id: &str) -> Option<ConnectorHandle> {
        let entries = self.read();
        entries.get(id).map(|e| self.handle(e, self.store.now_ms()))
    }

    /// The connector with this id if `workspace_id` may see it: another
    /// workspace's own connector is as good as unknown.
    pub fn by_id_in(&self, id: &str, workspace_id: Option<i64>) -> Option<ConnectorHandle> {
        self.by_id(id).filter(|h| h.source.visible_in(workspace_id))
    }

    /// Every connector `workspace_id` may see, ordered by id.
    pub fn all_in(&self, workspace_id: Option<i64>) -> Vec<ConnectorHandle> {
        let mut all = self.all();
        all.retain(|h| h.source.visible_in(workspace_id));
        all
    }

    /// Every connector, ordered by id.
    pub fn all(&self) -> Vec<ConnectorHandle> {
        let now = self.store.now_ms();
        let mut all: Vec<_> = self.read().values().map(|e| self.handle(e, now)).collect();
        all.sort_by(|a, b| a.registration.profile.id.cmp(&b.registration.profile.id));
        all
    }

    /// Every connector serving `intent` that `workspace_id` sees, in the
    /// cost-tier default order (free, free-tier, paid, then id), whatever
    /// its status.
    pub fn serving(&self, intent: &Capability, workspace_id: Option<i64>) -> Vec<ConnectorHandle> {
        let mut serving: Vec<_> = self
            .all_in(workspace_id)
            .into_iter()
            .filter(|h| h.registration.profile.capabilities.contains(intent))
            .collect();
        serving.sort_by(|a, b| {
            (a.registration.profile.cost_tier, &a.registration.profile.id)
                .cmp(&(b.registration.profile.cost_tier, &b.registration.profile.id))
        });
        serving
    }

    /// Connectors serving `intent` that can fire now (everyone's only).
    pub fn available_for(&self, intent: &Capability) -> Vec<ConnectorHandle> {
        self.serving(intent, None)
            .into_iter()
            .filter(|h| h.status.is_available())
            .collect()
    }

    /// Every capability some connector `workspace_id` sees serves,
    /// built-in ones first.
    pub fn capabilities(&self, workspace_id: Option<i64>) -> Vec<Capability> {
        let mut caps: Vec<Capability> = Capability::builtins().collect();
        for handle in self.all_in(workspace_id) {
            for cap in &handle.registration.profile.capabilities {
                if !caps.contains(cap) {
                    caps.push(cap.clone());
                }
            }
        }
        caps
    }

    fn handle(&self, entry: &Entry, now: i64) -> ConnectorHandle {
        ConnectorHandle {
            registration: entry.registration.clone(),
            source: entry.source.clone(),
            status: self.effective_status(entry, now),
            connector: entry.connector.clone(),
            throttle: entry.throttle.clone(),
        }
    }

    /// A person's choice and a provider's refusal outrank missing variables;
    /// a rate limit whose time has passed has lifted by itself.
    fn effective_status(&self, entry: &Entry, now: i64) -> ConnectorStatus {
        match &entry.status {
            ConnectorStatus::Disabled { .. } | ConnectorStatus::AuthFailed { .. } => {
                return entry.status.clone()
            }
            ConnectorStatus::RateLimited { until, .. }
            | ConnectorStatus::Suspended { until, .. }
                if *until > now =>
            {
                return entry.status.clone()
            }
            _ => {}
        }
        // A workspace's own connector reads its workspace's secrets only,
        // never the server's environment: every variable it names is
        // missing here, and the workspace's lens removes those it set.
        let from_env = !matches!(entry.source, ConnectorSource::Workspace { .. });
        let missing: Vec<String> = entry
            .registration
            .profile
            .requires_env
            .iter()
            .filter(|name| !from_env || (self.env)(name).is_none_or(|v| v.trim().is_empty()))
            .cloned()
            .collect();
        if missing.is_empty() {
            ConnectorStatus::Available
        } else {
            ConnectorStatus::NeedsEnv { vars: missing }
        }
    }

    pub(super) fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Entry>> {
        // A panic while holding the lock cannot leave an entry half-written
        // (every write is one insert or one field store), so poison is moot.
        self.entries.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Entry>> {
        self.entries.write().unwrap_or_else(|e| e.into_inner())
    }
}

fn validate(r: &Registration) -> Result<(), RegistryError> {
    let problems = r.profile.problems();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(RegistryError::Invalid {
            id: r.profile.id.clone(),
            problems,
        })
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connectors::health::SuspendPolicy;
    use crate::connectors::scripted::{ScriptedConnector, Step};
    use model::{BuiltinCapability as B, CostTier};
    use std::time::Duration;

    async fn registry(env: &[(&str, &str)]) -> (Registry, EventBus) {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        let events = EventBus::new();
        let vars: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let lookup: EnvLookup = Arc::new(move |name| vars.get(name).cloned());
        (Registry::with_env(store, events.clone(), lookup), events)
    }

    fn reg(id: &str, tier: CostTier, caps: &[Capability]) -> Registration {
        ScriptedConnector::registration(id, tier, caps)
    }

    fn connector() -> Arc<dyn Connector> {
        ScriptedConnector::new("x", [Step::Empty])
    }

    #[tokio::test]
    async fn repeated_errors_suspend_with_growing_back_off_and_an_answer_resets_it() {
        let (registry, _) = registry(&[]).await;
        registry.set_suspend_policy(SuspendPolicy {
            after: 3,
            base: Duration::from_secs(60),
            max: Duration::from_secs(150),
        });
        registry
            .register(
                reg("alpha", CostTier::Free, &[B::SearchWeb.into()]),
                connector(),
            )
            .unwrap();
        let until = |r: &Registry| match r.by_id("alpha").unwrap().status {
            ConnectorStatus::Suspended { until, .. } => Some(until - r.store.now_ms()),
            _ => None,
        };
        registry.record_failure("alpha", "HTTP 502").await;
        registry.record_failure("alpha", "HTTP 502").await;
        assert_eq!(until(&registry), None, "two errors are not a streak yet");
        registry.record_failure("alpha", "HTTP 503").await;
        let first = until(&registry).expect("suspended after three");
        assert!((55_000..=60_000).contains(&first), "{first}");
        let status = registry.by_id("alpha").unwrap().status;
        assert_eq!(status.kind(), "suspended");
        assert!(
            status
                .reason()
                .unwrap()
                .contains("3 errors in a row (last: HTTP 503)"),
            "{status:?}"
        );
        // Failing again after a suspension suspends at once, twice as long.
        registry.record_failure("alpha", "HTTP 503").await;
        let second = until(&registry).unwrap();
        assert!((115_000..=120_000).contains(&second), "{second}");
        // ...up to the longest.
        registry.record_failure("alpha", "HTTP 503").await;
        let third = until(&registry).unwrap();
        assert!((145_000..=150_000).contains(&third), "{third}");
        // An answer ends the streak: it takes three errors again.
        registry.record_answer("alpha").await;
        registry.enable("alpha", "ana").await.unwrap();
        registry.record_failure("alpha", "x").await;
        registry.record_failure("alpha", "x").await;
        assert_eq!(until(&registry), None);
        let log = registry
            .store
            .connector_status_log("alpha", 0)
            .await
            .unwrap();
        assert!(log
            .iter()
            .any(|c| c.status == "suspended" && c.actor == SYSTEM_ACTOR));
    }

    #[tokio::test]
    async fn a_connector_whose_errors_are_about_targets_is_never_suspended() {
        let (registry, _) = registry(&[]).await;
        let mut r = reg("crawler", CostTier::Free, &[B::CrawlSite.into()]);
        r.suspends_on_errors = false;
        registry.register(r, connector()).unwrap();
        for _ in 0..10 {
            registry
                .record_failure("crawler", "that site is down")
                .await;
        }
        assert!(registry.by_id("crawler").unwrap().status.is_available());
    }

    #[tokio::test]
    async fn a_suspension_lifts_by_itself() {
        let (registry, _) = registry(&[]).await;
        registry.set_suspend_policy(SuspendPolicy {
            after: 1,
            base: Duration::from_millis(1),
            max: Duration::from_millis(1),
        });
        registry
            .register(
                reg("alpha", CostTier::Free, &[B::SearchWeb.into()]),
                connector(),
            )
            .unwrap();
        registry.record_failure("alpha", "x").await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(registry.by_id("alpha").unwrap().status.is_available());
    }

    #[tokio::test]
    async fn missing_environment_variables_are_named() {
        let (registry, _) = registry(&[("TAVILY_API_KEY", "k"), ("EMPTY_KEY", "  ")]).await;
        let mut r = reg("serpapi", CostTier::Paid, &[B::SearchWeb.into()]);
        r.profile.requires_env = vec![
            "SERPAPI_API_KEY".into(),
            "EMPTY_KEY".into(),
            "TAVILY_API_KEY".into(),
        ];
        registry.register(r, connector()).unwrap();
        let status = registry.by_id("serpapi").unwrap().status;
        assert_eq!(
            status,
            ConnectorStatus::NeedsEnv {
                vars: vec!["SERPAPI_API_KEY".into(), "EMPTY_KEY".into()]
            }
        );
        assert_eq!(status.reason().unwrap(), "needs SERPAPI_API_KEY, EMPTY_KEY");
        assert!(registry.available_for(&B::SearchWeb.into()).is_empty());
    }

    #[tokio::test]
    async fn lookups_by_intent_order_by_cost_tier_then_id() {
        let (registry, _) = registry(&[]).await;
        let web: Capability = B::SearchWeb.into();
        registry
            .register(
                reg("zeta", CostTier::Free, std::slice::from_ref(&web)),
                connector(),
            )
            .unwrap();
        registry
            .register(
                reg("paid", CostTier::Paid, std::slice::from_ref(&web)),
                connector(),
            )
            .unwrap();
        registry
            .register(
                reg("alpha", CostTier::FreeTier, std::slice::from_ref(&web)),
                connector(),
            )
            .unwrap();
        registry
            .register(
                reg("abc", CostTier::Free, std::slice::from_ref(&web)),
                connector(),
            )
            .unwrap();
        registry
            .register(
                reg("news", CostTier::Free, &[B::SearchNews.into()]),
                connector(),
            )
            .unwrap();
        let ids: Vec<String> = registry
            .serving(&web, None)
            .into_iter()
            .map(|h| h.registration.profile.id)
            .collect();
        assert_eq!(ids, ["abc", "zeta", "alpha", "paid"]);
        registry.disable("zeta", "ana", "").await.unwrap();
        let ids: Vec<String> = registry
            .available_for(&web)
            .into_iter()
            .map(|h| h.registration.profile.id)
            .collect();
        assert_eq!(ids, ["abc", "alpha", "paid"]);
        assert_eq!(registry.all().len(), 5);
    }

    #[tokio::test]
    async fn status_changes_are_announced_audited_and_recovered() {
        let (registry, events) = registry(&[]).await;
        let mut rx = events.subscribe();
        registry
            .register(
                reg("alpha", CostTier::Free, &[B::SearchWeb.into()]),
                connector(),
            )
            .unwrap();
        assert!(matches!(
            rx.recv().await.unwrap().kind,
            model::EventKind::ConnectorChanged { .. }
        ));

        registry
            .mark_rate_limited("alpha", Duration::from_millis(1), "HTTP 429")
            .await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        // The wait has passed: available again without anyone acting.
        assert_eq!(
            registry.by_id("alpha").unwrap().status,
            ConnectorStatus::Available
        );

        registry.mark_auth_failed("alpha", "HTTP 401").await;
        assert_eq!(
            registry.by_id("alpha").unwrap().status.kind(),
            "auth-failed"
        );
        // Re-registering (a new version of the connector) keeps the refusal.
        registry
            .register(
                reg("alpha", CostTier::Free, &[B::SearchWeb.into()]),
                connector(),
            )
            .unwrap();
        assert_eq!(
            registry.by_id("alpha").unwrap().status.kind(),
            "auth-failed"
        );
        registry.enable("alpha", "ana").await.unwrap();
        assert!(registry.by_id("alpha").unwrap().status.is_available());

        let log = registry
            .store
            .connector_status_log("alpha", 0)
            .await
            .unwrap();
        let trail: Vec<(&str, &str)> = log
            .iter()
            .map(|c| (c.status.as_str(), c.actor.as_str()))
            .collect();
        assert_eq!(
            trail,
            [
                ("available", "ana"),
                ("auth-failed", "system"),
                ("rate-limited", "system")
            ]
        );

        registry.unregister("alpha").unwrap();
        assert!(registry.by_id("alpha").is_none());
        assert_eq!(
            registry.unregister("alpha"),
            Err(RegistryError::Unknown("alpha".into()))
        );
        assert_eq!(
            registry.disable("alpha", "ana", "").await,
            Err(RegistryError::Unknown("alpha".into()))
        );
    }

    #[tokio::test]
    async fn bad_registrations_are_refused_with_the_reason() {
        let (registry, _) = registry(&[]).await;
        let web: Capability = B::SearchWeb.into();
        let changed = |change: fn(&mut ConnectorProfile)| {
            let mut r = reg("a", CostTier::Free, std::slice::from_ref(&web));
            change(&mut r.profile);
            r
        };
        let cases: Vec<(Registration, &str)> = vec![
            (
                reg("Bad Id", CostTier::Free, std::slice::from_ref(&web)),
                "not an id",
            ),
            (
                reg("none", CostTier::Free, &[]),
                "capabilities: name at least one",
            ),
            (changed(|p| p.display_name = " ".into()), "display_name"),
            (changed(|p| p.short_label = String::new()), "short_label"),
            (
                changed(|p| p.requires_env = vec!["lower".into()]),
                "requires_env[0]",
            ),
            (
                changed(|p| p.rate_hints.per_second = Some(-1.0)),
                "rate_hints.per_second",
            ),
            (
                changed(|p| p.rate_hints.daily_cap = Some(0)),
                "rate_hints.daily_cap",
            ),
        ];
        for (r, needle) in cases {
            let err = registry.register(r, connector()).unwrap_err();
            assert!(err.to_string().contains(needle), "{err}");
        }
        assert!(registry.all().is_empty());
    }

    #[tokio::test]
    async fn every_caller_shares_one_per_second_budget() {
        let (registry, _) = registry(&[]).await;
        let mut r = reg("alpha", CostTier::Free, &[B::SearchWeb.into()]);
        r.profile.rate_hints.per_second = Some(2.0);
        registry.register(r, connector()).unwrap();
        let first = registry.by_id("alpha").unwrap();
        let second = registry.by_id("alpha").unwrap();
        let throttle = |h: &ConnectorHandle| h.throttle.clone().unwrap();
        assert!(throttle(&first).try_now());
        // Fires are spaced half a second apart, whichever handle asks.
        assert!(!throttle(&second).try_now());
        assert!(!throttle(&first).try_now());
        // Registered again at the same rate (an edited manifest): the
        // budget spent stays spent.
        let mut again = reg("alpha", CostTier::Free, &[B::SearchWeb.into()]);
        again.profile.rate_hints.per_second = Some(2.0);
        registry.register(again, connector()).unwrap();
        assert!(!throttle(&registry.by_id("alpha").unwrap()).try_now());

        let mut slow = reg("slow", CostTier::Free, &[B::SearchWeb.into()]);
        slow.profile.rate_hints.per_second = Some(0.5);
        registry.register(slow, connector()).unwrap();
        let slow = registry.by_id("slow").unwrap();
        assert!(throttle(&slow).try_now());
        assert!(!throttle(&slow).try_now(), "one fire per two seconds");
    }
}
