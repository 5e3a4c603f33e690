//! Operator attention: which connectors a workspace's admins must act on
//! (a key the provider refused; errors that keep a connector suspended past
//! [`DispatchConfig::attention_after`](crate::execution::dispatch::DispatchConfig)),
//! said in words with what to do, and raised as a live event to the
//! workspaces it concerns when it begins.

use std::time::Duration;

use model::{Attention, AttentionKind, ConnectorInfo, ConnectorStatus, EventKind};

use crate::connectors::lens::Lens;
use crate::connectors::registry::Registry;
use crate::live::events::EventBus;
use crate::store::{Store, StoreError};

/// What an admin must act on about one connector as a workspace sees it,
/// if anything: `own_key` says whether the workspace's own key is used;
/// `after` is how long a streak of suspensions may last before it is
/// worth a person's time.
pub fn of(info: &ConnectorInfo, own_key: bool, now: i64, after: Duration) -> Option<Attention> {
    let name = &info.profile.display_name;
    let vars = info.profile.requires_env.join(" and ");
    let (kind, since, what, to_do) = match &info.status {
        ConnectorStatus::AuthFailed { at, reason } => {
            let to_do = if own_key {
                format!("Set this workspace's {vars} again under Secrets; the next fire tries the new key.")
            } else if vars.is_empty() {
                format!(
                    "Check the account with the provider, then re-check {name} here \
                     (or the operator runs `switchyard connector clear {}`).",
                    info.profile.id
                )
            } else {
                format!(
                    "Put a working {vars} in the server's environment and re-check {name} here \
                     (or the operator runs `switchyard connector clear {}`); or give this \
                     workspace its own {vars} under Secrets.",
                    info.profile.id
                )
            };
            (
                AttentionKind::KeyRefused,
                *at,
                format!("{name}'s key was refused: {reason}"),
                to_do,
            )
        }
        ConnectorStatus::Suspended {
            until,
            since,
            reason,
        } if *since > 0
            && *until > now
            && until - since >= i64::try_from(after.as_millis()).unwrap_or(i64::MAX) =>
        {
            (
                AttentionKind::LongSuspension,
                *since,
                format!("{name} keeps failing and stays suspended: {reason}"),
                format!(
                    "Chains skip it meanwhile, and it tries again by itself after each wait, \
                     each twice as long. Look at the provider's status and {name}'s last \
                     errors; switch it off here if it should stop trying, or re-check it once \
                     the provider is back."
                ),
            )
        }
        _ => return None,
    };
    Some(Attention {
        connector_id: info.profile.id.clone(),
        display_name: name.clone(),
        kind,
        own_key,
        since,
        what,
        to_do,
    })
}

/// Everything that needs the admins of the workspace `lens` sees with.
pub(crate) fn all_in(
    registry: &Registry,
    lens: &Lens,
    after: Duration,
    now: i64,
) -> Vec<Attention> {
    lens.handles(registry)
        .iter()
        .filter_map(|h| of(&lens.info(h), lens.key_owner(h).is_some(), now, after))
        .collect()
}

/// Tells each workspace that now needs to act on connector `id` (after its
/// key was refused or a suspension was given): the one whose own key met
/// it (`keyed_by`), or every workspace using the server's key.
pub(crate) async fn raise(
    (store, registry, events): (&Store, &Registry, &EventBus),
    after: Duration,
    id: &str,
    keyed_by: Option<i64>,
) -> Result<(), StoreError> {
    let Some(handle) = registry.by_id(id) else {
        return Ok(());
    };
    let workspaces = match keyed_by {
        Some(ws) => vec![ws],
        None => store.workspace_ids().await?,
    };
    let now = store.now_ms();
    for ws in workspaces {
        let lens = Lens::of(store, Some(ws)).await?;
        if !lens.sees(&handle) || lens.key_owner(&handle) != keyed_by {
            continue;
        }
        if let Some(attention) = of(&lens.info(&handle), keyed_by.is_some(), now, after) {
            tracing::warn!(connector = %id, workspace = ws, kind = attention.kind.name(), "A connector needs a workspace's admins.");
            events.publish_in(Some(ws), EventKind::AttentionRaised { attention });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use model::{ConnectorProfile, CostTier, RateHints};

    use super::*;

    fn info(status: ConnectorStatus, vars: &[&str]) -> ConnectorInfo {
        ConnectorInfo {
            profile: ConnectorProfile {
                id: "tavily".into(),
                display_name: "Tavily".into(),
                short_label: "tv".into(),
                capabilities: vec![],
                cost_tier: CostTier::Paid,
                requires_env: vars.iter().map(|v| (*v).to_owned()).collect(),
                rate_hints: RateHints::default(),
                cost: None,
            },
            status_reason: status.reason(),
            status,
            source: model::ConnectorSource::Builtin,
        }
    }

    const MIN: i64 = 60_000;

    #[test]
    fn a_refused_key_says_which_variable_to_set_and_where() {
        let refused = ConnectorStatus::AuthFailed {
            at: 5,
            reason: "HTTP 401: Invalid API key".into(),
        };
        let server = of(
            &info(refused.clone(), &["TAVILY_API_KEY"]),
            false,
            10,
            Duration::ZERO,
        )
        .expect("attention");
        assert_eq!(server.kind, AttentionKind::KeyRefused);
        assert_eq!(server.since, 5);
        assert_eq!(
            server.what,
            "Tavily's key was refused: HTTP 401: Invalid API key"
        );
        assert!(
            server
                .to_do
                .contains("TAVILY_API_KEY in the server's environment"),
            "{}",
            server.to_do
        );
        assert!(
            server.to_do.contains("switchyard connector clear tavily"),
            "{}",
            server.to_do
        );
        assert!(
            server
                .to_do
                .contains("its own TAVILY_API_KEY under Secrets"),
            "{}",
            server.to_do
        );

        let own = of(
            &info(refused, &["TAVILY_API_KEY"]),
            true,
            10,
            Duration::ZERO,
        )
        .unwrap();
        assert!(own.own_key);
        assert_eq!(
            own.to_do,
            "Set this workspace's TAVILY_API_KEY again under Secrets; the next fire tries the new key."
        );
    }

    #[test]
    fn a_suspension_needs_a_person_only_once_its_streak_outlasts_the_threshold() {
        let now = 100 * MIN;
        let suspended = |since: i64, until: i64| {
            info(
                ConnectorStatus::Suspended {
                    until,
                    since,
                    reason: "1 error in a row (last: HTTP 502); back in 480 s".into(),
                },
                &[],
            )
        };
        let after = Duration::from_secs(15 * 60);
        // Seven minutes in all: the provider's hiccup, not a person's job.
        assert_eq!(
            of(&suspended(now - 3 * MIN, now + 4 * MIN), false, now, after),
            None
        );
        // Fifteen: it is.
        let long = of(&suspended(now - 7 * MIN, now + 8 * MIN), false, now, after).unwrap();
        assert_eq!(long.kind, AttentionKind::LongSuspension);
        assert_eq!(long.since, now - 7 * MIN);
        assert!(long.what.contains("HTTP 502"), "{}", long.what);
        // Over, or from before `since` was kept: nothing to say.
        assert_eq!(
            of(&suspended(now - 30 * MIN, now - MIN), false, now, after),
            None
        );
        assert_eq!(of(&suspended(0, now + 8 * MIN), false, now, after), None);
    }

    #[test]
    fn other_states_need_no_one() {
        for status in [
            ConnectorStatus::Available,
            ConnectorStatus::Disabled { reason: "x".into() },
            ConnectorStatus::RateLimited {
                until: i64::MAX,
                reason: "429".into(),
            },
            ConnectorStatus::NeedsEnv {
                vars: vec!["X".into()],
            },
            ConnectorStatus::OverBudget {
                reason: "spent".into(),
            },
        ] {
            assert_eq!(of(&info(status, &["X"]), false, 0, Duration::ZERO), None);
        }
    }
}
