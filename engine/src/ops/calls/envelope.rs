//! A stored call read as its envelope: where it stands, how far it has
//! come, and its results while they are kept.

use model::{CallAttempt, CallOutput, Envelope, EnvelopeStatus, Progress, WorkKind};

use crate::store::{CallStatus, StoredCall};

pub(super) fn envelope_status(status: &CallStatus) -> EnvelopeStatus {
    match status {
        CallStatus::Running => EnvelopeStatus::Pending,
        CallStatus::Completed => EnvelopeStatus::Completed,
        CallStatus::Cancelled => EnvelopeStatus::Cancelled,
        CallStatus::Failed => EnvelopeStatus::Failed,
    }
}

/// A call's progress: how many connectors of its chain it has tried (a
/// retry of the same one counts once).
pub(super) fn connectors_tried<'a>(ids: impl Iterator<Item = &'a str>) -> u64 {
    let mut ids: Vec<&str> = ids.collect();
    ids.sort_unstable();
    ids.dedup();
    ids.len() as u64
}

/// A stored call's envelope at `now`.
pub(super) fn stored_envelope(
    call: StoredCall,
    attempts: &[CallAttempt],
    now: i64,
) -> Envelope<CallOutput> {
    let lost = call.status == CallStatus::Running && now > call.deadline;
    let gone =
        call.status != CallStatus::Running && call.finished_at.is_some() && call.results.is_none();
    let error = if lost {
        Some("lost: the process walking this call stopped before it ended".to_owned())
    } else if gone {
        Some(format!(
            "the results were kept until {} (Unix ms) and are gone",
            call.keep_until
        ))
    } else {
        call.error
    };
    Envelope {
        status: if lost {
            EnvelopeStatus::Failed
        } else {
            envelope_status(&call.status)
        },
        job_id: Some(call.id),
        kind: Some(WorkKind::Call),
        progress: Progress {
            // A call over many subjects counts them; a search counts the
            // connectors it has tried.
            done: call.done.unwrap_or_else(|| {
                connectors_tried(
                    attempts
                        .iter()
                        .filter(|a| a.finished_at.is_some())
                        .map(|a| a.connector_id.as_str()),
                )
            }),
            total: call.chain_length,
        },
        results: call.results.unwrap_or_default(),
        error,
        job: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(status: CallStatus, results: Option<Vec<CallOutput>>) -> StoredCall {
        StoredCall {
            id: 7,
            workspace_id: 1,
            capability: "search.news".into(),
            query: "Ada Lovelace".into(),
            status: status.clone(),
            chain_length: 2,
            created_by: "a@example.org".into(),
            created_at: 1_000,
            finished_at: (status != CallStatus::Running).then_some(2_000),
            deadline: 5_000,
            keep_until: 9_000,
            done: None,
            results,
            error: None,
        }
    }

    #[test]
    fn a_call_running_past_its_deadline_was_lost() {
        let running = stored_envelope(stored(CallStatus::Running, None), &[], 4_000);
        assert_eq!(running.status, EnvelopeStatus::Pending);
        assert_eq!(running.error, None);
        let lost = stored_envelope(stored(CallStatus::Running, None), &[], 6_000);
        assert_eq!(lost.status, EnvelopeStatus::Failed);
        assert!(lost.error.unwrap().starts_with("lost"));
    }

    #[test]
    fn an_ended_call_without_results_says_they_are_gone() {
        let kept = stored_envelope(stored(CallStatus::Completed, Some(Vec::new())), &[], 6_000);
        assert_eq!(kept.status, EnvelopeStatus::Completed);
        assert_eq!(kept.error, None);
        let gone = stored_envelope(stored(CallStatus::Completed, None), &[], 10_000);
        assert_eq!(gone.status, EnvelopeStatus::Completed);
        assert!(gone.error.unwrap().contains("are gone"));
        // Cancelled through another process whose walk never wrote its end
        // (it died): cancelled, nothing said to be gone.
        let mut cancelled = stored(CallStatus::Cancelled, None);
        cancelled.finished_at = None;
        let cancelled = stored_envelope(cancelled, &[], 10_000);
        assert_eq!(cancelled.status, EnvelopeStatus::Cancelled);
        assert_eq!(cancelled.error, None);
    }
}
