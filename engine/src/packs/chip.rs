//! What a chip shows, derived from a record's history for the pack's intent.
//! One pure function, `chip_state`.

use model::{ChipState, FireOutcome, HistoryEntry};

/// Everything a chip's state depends on.
#[derive(Clone, Copy, Debug)]
pub struct ChipInputs<'a> {
    /// The record's attempts for the pack's intent, in any order.
    pub attempts: &'a [HistoryEntry],
    /// Items in the curated layer for this record and intent.
    pub item_count: u32,
    /// When nothing in the chain can fire for want of environment variables,
    /// their names.
    pub needs_env: Option<&'a [String]>,
    /// Unix milliseconds.
    pub now: i64,
}

/// In order of precedence: an attempt in flight is `firing`; any items is
/// `found(n)`; otherwise the last finished attempt says `not_found`, `error`
/// or `rate_limited` (until its Retry-After; `error` once that passed is not
/// claimed: the chip goes back to what came before); with no attempt at all
/// the chip is `needs_env` when nothing in its chain can fire for want of
/// variables, else `idle`. A cancelled attempt leaves the chip as the attempts
/// before it left it.
pub fn chip_state(inputs: ChipInputs<'_>) -> ChipState {
    if inputs.attempts.iter().any(|a| a.end.outcome.is_none()) {
        return ChipState::Firing;
    }
    if inputs.item_count > 0 {
        return ChipState::Found {
            count: inputs.item_count,
        };
    }
    let mut finished: Vec<&HistoryEntry> = inputs
        .attempts
        .iter()
        .filter(|a| !matches!(a.end.outcome, Some(FireOutcome::Cancelled)))
        .collect();
    finished.sort_by_key(|a| (a.fired_at, a.id));
    match finished.last() {
        Some(last) => match last.end.outcome {
            Some(FireOutcome::RateLimited) => match last.end.retry_after {
                Some(until) if until > inputs.now => ChipState::RateLimited { until },
                // The wait is over: nothing stands in the way of a new fire.
                _ => ChipState::Idle,
            },
            Some(FireOutcome::Error | FireOutcome::Unknown) => ChipState::Error {
                reason: last
                    .end
                    .error
                    .clone()
                    .unwrap_or_else(|| "the connector failed".to_owned()),
            },
            // Found without items left can only be results that were all
            // refused (not web URLs): nothing usable was found.
            Some(FireOutcome::Found | FireOutcome::NotFound) => ChipState::NotFound,
            Some(FireOutcome::Cancelled) | None => ChipState::Idle,
        },
        None => match inputs.needs_env {
            Some(vars) if !vars.is_empty() => ChipState::NeedsEnv {
                vars: vars.to_vec(),
            },
            _ => ChipState::Idle,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{BuiltinCapability, TriggeredBy};

    fn attempt(id: i64, at: i64, outcome: Option<FireOutcome>) -> HistoryEntry {
        HistoryEntry {
            id,
            fire_id: id,
            record_id: 1,
            pack_id: "linkedin".into(),
            intent: BuiltinCapability::SocialLinkedin.into(),
            connector_id: "searxng".into(),
            fired_at: at,
            finished_at: outcome.map(|_| at + 1),
            triggered_by: TriggeredBy::HumanRefire,
            actor: "ana".into(),
            end: model::AttemptEnd {
                outcome,
                error: (outcome == Some(FireOutcome::Error)).then(|| "provider error: 502".into()),
                retry_after: (outcome == Some(FireOutcome::RateLimited)).then_some(5_000),
                ..Default::default()
            },
        }
    }

    fn state(
        attempts: &[HistoryEntry],
        items: u32,
        needs_env: Option<&[String]>,
        now: i64,
    ) -> ChipState {
        chip_state(ChipInputs {
            attempts,
            item_count: items,
            needs_env,
            now,
        })
    }

    #[test]
    fn every_state_has_its_cause() {
        use FireOutcome::*;
        let vars = vec!["SERPAPI_API_KEY".to_owned()];
        assert_eq!(state(&[], 0, None, 0), ChipState::Idle);
        assert_eq!(
            state(&[], 0, Some(&vars), 0),
            ChipState::NeedsEnv { vars: vars.clone() }
        );
        assert_eq!(state(&[attempt(1, 1, None)], 0, None, 0), ChipState::Firing);
        assert_eq!(
            state(
                &[attempt(1, 1, Some(Found)), attempt(2, 2, None)],
                3,
                None,
                0
            ),
            ChipState::Firing
        );
        assert_eq!(
            state(&[attempt(1, 1, Some(Found))], 3, None, 0),
            ChipState::Found { count: 3 }
        );
        assert_eq!(
            state(&[attempt(1, 1, Some(NotFound))], 0, None, 0),
            ChipState::NotFound
        );
        assert_eq!(
            state(
                &[attempt(1, 1, Some(NotFound)), attempt(2, 2, Some(Error))],
                0,
                None,
                0
            ),
            ChipState::Error {
                reason: "provider error: 502".into()
            }
        );
        assert_eq!(
            state(&[attempt(1, 1, Some(RateLimited))], 0, None, 10),
            ChipState::RateLimited { until: 5_000 }
        );
        assert_eq!(
            state(&[attempt(1, 1, Some(RateLimited))], 0, None, 6_000),
            ChipState::Idle
        );
        // History outranks missing variables: the person sees what happened.
        assert_eq!(
            state(&[attempt(1, 1, Some(NotFound))], 0, Some(&vars), 0),
            ChipState::NotFound
        );
    }

    #[test]
    fn found_outranks_later_failures_and_order_is_by_time() {
        use FireOutcome::*;
        let attempts = [attempt(2, 20, Some(Error)), attempt(1, 10, Some(Found))];
        assert_eq!(state(&attempts, 4, None, 0), ChipState::Found { count: 4 });
        let attempts = [attempt(2, 20, Some(NotFound)), attempt(1, 10, Some(Error))];
        assert_eq!(state(&attempts, 0, None, 0), ChipState::NotFound);
    }

    #[test]
    fn cancelled_attempts_are_looked_through() {
        use FireOutcome::*;
        assert_eq!(
            state(&[attempt(1, 1, Some(Cancelled))], 0, None, 0),
            ChipState::Idle
        );
        let attempts = [
            attempt(1, 1, Some(NotFound)),
            attempt(2, 2, Some(Cancelled)),
        ];
        assert_eq!(state(&attempts, 0, None, 0), ChipState::NotFound);
    }
}
