//! Pages that went away. After a connector answers in full, the items it
//! found for that record before and leaves out now, and those marked gone
//! that it returns again, are asked for themselves: a few per answer, each
//! at most once per [`CHECK_EVERY`], through the outbound guard. A 404 or
//! 410 marks an item gone, a page marks it back; anything else (a redirect,
//! an error, a timeout) says nothing. Items are never deleted, and their
//! triage stays as people left it.

use std::sync::Arc;
use std::time::Duration;

use model::{Capability, EventKind};
use reqwest::Method;
use tokio::sync::Semaphore;

use crate::connectors::guard::Outbound;
use crate::connectors::registry::{Registry, SYSTEM_ACTOR};
use crate::live::events::EventBus;
use crate::store::{Store, StoreError};

/// Whether pages are asked for themselves. Asking tells the page's site
/// that someone looked, so an operator may turn it off
/// (`SWITCHYARD_RECHECK_PAGES=off`); nothing is then marked gone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PageRechecks {
    #[default]
    On,
    Off,
}

/// Items re-checked after one answer at most.
pub const PER_ANSWER: i64 = 5;
/// How long an item's last check holds before it may be asked again.
pub const CHECK_EVERY: Duration = Duration::from_secs(60 * 60);
/// How long asking one page may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Re-checks running at once in a process; an answer that finds none free
/// leaves its items to the next answer.
const AT_ONCE: usize = 4;

/// What asking a page for itself said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checked {
    /// It answered 404 or 410: gone, with the status in words.
    Gone(String),
    /// It answered with a page.
    There,
    /// Anything else: it says nothing about the page.
    Unsure,
}

/// What a status says about a page.
pub fn judge(status: u16) -> Checked {
    match status {
        404 | 410 => Checked::Gone(format!("it answered HTTP {status} when re-checked")),
        200..=299 => Checked::There,
        _ => Checked::Unsure,
    }
}

/// Asks a page for itself (a GET whose body is never read).
pub async fn check(outbound: &Outbound, url: &str) -> Checked {
    let Ok(url) = url::Url::parse(url) else {
        return Checked::Unsure;
    };
    let Ok(request) = outbound.request("re-check", Method::GET, &url, TIMEOUT) else {
        return Checked::Unsure;
    };
    match request.send().await {
        Ok(response) => judge(response.status().as_u16()),
        Err(_) => Checked::Unsure,
    }
}

/// One full answer whose items may need asking about.
#[derive(Clone, Debug)]
pub struct Answered {
    pub set_id: i64,
    pub record_id: i64,
    pub intent: Capability,
    pub connector_id: String,
    pub fire_id: i64,
}

/// Re-checks in the background, a few at a time. Cheap to clone.
#[derive(Clone, Debug)]
pub struct PageChecker {
    store: Store,
    registry: Registry,
    events: EventBus,
    outbound: Outbound,
    permits: Arc<Semaphore>,
}

impl PageChecker {
    pub fn new(store: Store, registry: Registry, events: EventBus, outbound: Outbound) -> Self {
        Self {
            store,
            registry,
            events,
            outbound,
            permits: Arc::new(Semaphore::new(AT_ONCE)),
        }
    }

    /// Re-checks, apart from the fire, what this answer calls into
    /// question; skipped when every permit is taken.
    pub fn after(&self, answered: Answered) {
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            return;
        };
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(e) = this.check_pages(&answered).await {
                tracing::warn!(record = answered.record_id, error = %e, "Re-checking pages a connector left out failed.");
            }
            drop(permit);
        });
    }

    /// Asks each due item's page for itself and tells the set's viewers of
    /// every item whose standing changed. Returns how many changed.
    pub async fn check_pages(&self, answered: &Answered) -> Result<usize, StoreError> {
        let due = self
            .store
            .pages_to_check(
                answered.record_id,
                &answered.intent,
                &answered.connector_id,
                answered.fire_id,
                self.store.now_ms() - i64::try_from(CHECK_EVERY.as_millis()).unwrap_or(i64::MAX),
                PER_ANSWER,
            )
            .await?;
        if due.is_empty() {
            return Ok(0);
        }
        let connector_name = self.registry.by_id(&answered.connector_id).map_or_else(
            || answered.connector_id.clone(),
            |h| h.registration.profile.display_name,
        );
        let mut changed = 0;
        for (item_id, url) in due {
            let checked = match check(&self.outbound, &url).await {
                Checked::Gone(why) => {
                    Checked::Gone(format!("{connector_name} stopped returning it, and {why}"))
                }
                other => other,
            };
            if let Some(item) = self
                .store
                .mark_checked(item_id, &checked, self.store.now_ms())
                .await?
            {
                changed += 1;
                self.events.publish(
                    Some(answered.set_id),
                    EventKind::ItemChanged {
                        item,
                        actor: SYSTEM_ACTOR.to_owned(),
                    },
                );
            }
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_404_and_410_say_gone_and_only_a_page_says_there() {
        assert_eq!(
            judge(410),
            Checked::Gone("it answered HTTP 410 when re-checked".into())
        );
        assert!(matches!(judge(404), Checked::Gone(_)));
        assert_eq!(judge(200), Checked::There);
        assert_eq!(judge(204), Checked::There);
        for unsure in [301, 302, 401, 403, 429, 500, 503] {
            assert_eq!(judge(unsure), Checked::Unsure, "{unsure}");
        }
    }
}
