//! A prepared fire's run: its state while it walks the chain, the walk
//! itself, and how it ends (closed after its last attempt, broken by the
//! database, or its job task finished or handed back).

use model::{ChipState, FireOutcome, FireReport, HistoryEntry, RecordSetSummary};
use tokio_util::sync::CancellationToken;

use super::chips::News;
use super::in_flight::InFlight;
use super::ledger::FireLedger;
use super::{walk, Dispatcher, FireRequest, Prepared, Scope};
use crate::connectors::seam::{FireOpts, Secrets};
use crate::execution::flow::{Permit, Priority};
use crate::packs::chain::Chain;
use crate::packs::PackConfig;
use crate::store::{retrying, FireContext, FireEnd, FireStatus, StoreError, StoredRecord};

/// A fire under way: what it has done so far.
pub(super) struct Walk {
    pub(super) report: FireReport,
    pub(super) ctx: FireContext,
    pub(super) task_id: Option<i64>,
    pub(super) fire_id: Option<i64>,
    /// The attempt written but not yet closed, if any.
    pub(super) open: Option<HistoryEntry>,
    pub(super) cancel: CancellationToken,
    pub(super) cancelled: bool,
    /// Set once the fire's end (with its task's, if any) is written.
    pub(super) closed: bool,
    /// The chip as read with the end's write.
    pub(super) chip: Option<ChipState>,
    /// What viewers have not been told yet.
    pub(super) news: News,
    pub(super) in_flight: InFlight,
}

impl Walk {
    /// A walk that has done nothing yet: cancelled with the job it belongs
    /// to, if any.
    fn start(req: &FireRequest, record: &StoredRecord, pack: &PackConfig, chain: &Chain) -> Self {
        let cancel = req
            .parent
            .as_ref()
            .map_or_else(CancellationToken::new, CancellationToken::child_token);
        Walk {
            report: FireReport {
                fire_id: None,
                record_id: record.id,
                pack_id: pack.pack_id.clone(),
                intent: pack.intent.clone(),
                chip: ChipState::Idle,
                attempts: Vec::new(),
                skipped: chain.skipped.clone(),
                items: Vec::new(),
                notes: chain.notes.clone(),
            },
            ctx: FireContext {
                record_id: record.id,
                pack_id: pack.pack_id.clone(),
                intent: pack.intent.clone(),
                triggered_by: req.triggered_by,
                actor: req.actor.clone(),
                job_id: req.job_id,
            },
            task_id: req.task_id,
            fire_id: None,
            open: None,
            cancel,
            cancelled: false,
            closed: false,
            chip: None,
            news: News::default(),
            in_flight: InFlight::default(),
        }
    }

    /// The fire's end: cancelled or done, with its job task's outcome.
    /// `pending` is the outcome of the attempt that closes with it, if one
    /// does.
    pub(super) fn end(
        &self,
        fire_id: i64,
        cancelled: bool,
        pending: Option<FireOutcome>,
    ) -> FireEnd {
        FireEnd {
            fire_id,
            status: if cancelled {
                FireStatus::Cancelled
            } else {
                FireStatus::Done
            },
            open_attempt_error: None,
            task: self
                .task_id
                .map(|t| (t, task_outcome(&self.report.attempts, pending, None))),
        }
    }
}

/// What a walk fires at.
#[derive(Clone, Copy)]
pub(super) struct Target<'a> {
    pub(super) record: &'a StoredRecord,
    pub(super) set: &'a RecordSetSummary,
    pub(super) scope: &'a Scope,
    pub(super) pack: &'a PackConfig,
    pub(super) query: &'a str,
    pub(super) priority: Priority,
    /// A job's limit of paid fires per record: the job, and the limit.
    pub(super) paid_cap: Option<(i64, u32)>,
    /// The person said to spend past the record's daily caps this time.
    pub(super) spend_more: bool,
}

impl Dispatcher {
    /// Runs a prepared fire to its end and reports it. `first` is a place
    /// already taken in the window of the chain's first connector (a job
    /// waits for it before it starts the fire). Never fails: whatever goes
    /// wrong ends the fire with an outcome that says so.
    pub async fn run(&self, p: Prepared, mut first: Option<Permit>) -> FireReport {
        let Prepared {
            req,
            record,
            set,
            scope,
            pack,
            chain,
            query,
        } = p;
        let mut walk = Walk::start(&req, &record, &pack, &chain);
        let mut chip = None;
        if let Some(note) = nothing_to_fire(&chain, &query, &pack, &walk.report) {
            walk.report.notes.push(note);
        } else {
            let target = Target {
                record: &record,
                set: &set,
                scope: &scope,
                pack: &pack,
                query: &query,
                priority: req.priority(),
                paid_cap: req.job_id.zip(req.paid_per_record),
                spend_more: req.spend_more,
            };
            if let Err(e) = self.walk(&mut walk, &chain, target, &mut first).await {
                chip = Some(self.broken(&mut walk, &e).await);
            }
        }
        drop(first);
        let read = match (chip, walk.chip.take()) {
            (Some(chip), _) | (None, Some(chip)) => Ok(chip),
            (None, None) => self.chip_of(&scope, record.id, &pack).await,
        };
        walk.report.chip = read.unwrap_or_else(|e| {
            tracing::error!(record = record.id, error = %e, "Reading a chip after a fire failed.");
            ChipState::Error {
                reason: "the chip could not be read; reload the page".to_owned(),
            }
        });
        self.end_task(&mut walk).await;
        if let Some(fire_id) = walk.fire_id {
            walk.news.chip = Some(walk.report.chip.clone());
            self.tell(set.id, &mut walk);
            tracing::info!(
                fire = fire_id,
                pack = %pack.pack_id,
                attempts = walk.report.attempts.len(),
                chip = walk.report.chip.name(),
                "Fire finished."
            );
        }
        walk.report
    }

    /// Walks a fire's chain ([`Dispatcher::walk_chain`]), writing its
    /// attempts to the fire, then closes the fire if its last attempt did
    /// not. A database failure that outlasts its retries stops the walk
    /// with the error.
    pub(super) async fn walk(
        &self,
        walk: &mut Walk,
        chain: &Chain,
        target: Target<'_>,
        first: &mut Option<Permit>,
    ) -> Result<(), StoreError> {
        let Target {
            record,
            set,
            scope,
            pack,
            query,
            priority,
            paid_cap,
            spend_more,
        } = target;
        let subject = walk::Subject {
            workspace_id: set.workspace_id,
            lens: &scope.lens,
            intent: &pack.intent,
            query,
            opts: FireOpts {
                record_name: record.name.clone(),
                record_fields: record.field_map(),
                max_results: self.config.max_results,
                secrets: Secrets::default(),
            },
            priority,
            paid_cap: paid_cap.map(|(job_id, most)| walk::PaidCap {
                job_id,
                record_id: record.id,
                most,
            }),
            record_day: Some(walk::RecordDay {
                record_id: record.id,
                spend_more,
            }),
        };
        let cancel = walk.cancel.clone();
        let cancelled = {
            let mut ledger = FireLedger {
                dispatcher: self,
                walk: &mut *walk,
                record,
                set,
                scope,
                pack,
            };
            self.walk_chain(&mut ledger, &chain.to_try, subject, &cancel, first)
                .await?
        };
        walk.cancelled |= cancelled;
        if let (Some(fire_id), false) = (walk.fire_id, walk.closed) {
            let end = walk.end(fire_id, walk.cancelled, None);
            retrying(|| self.store.close_fire(&end)).await?;
            walk.closed = true;
        }
        Ok(())
    }

    /// Ends a fire the database failed under: what is still open is closed
    /// as an error if the database allows it now; if not, its lease expires
    /// and whichever process notices closes it as interrupted.
    async fn broken(&self, walk: &mut Walk, error: &StoreError) -> ChipState {
        tracing::error!(fire = walk.fire_id, record = walk.ctx.record_id, error = %error, "The database failed during a fire; closing it as an error.");
        let reason = "stopped: the database failed while this fire was being stored".to_owned();
        walk.report.notes.push(reason.clone());
        if let (Some(fire_id), false) = (walk.fire_id, walk.closed) {
            let end = FireEnd {
                fire_id,
                status: FireStatus::Error,
                open_attempt_error: Some(reason.clone()),
                task: walk
                    .task_id
                    .map(|t| (t, FireOutcome::Error.name().to_owned())),
            };
            match retrying(|| self.store.close_fire(&end)).await {
                Ok(()) => walk.closed = true,
                Err(e) => {
                    tracing::error!(fire = fire_id, error = %e, "Closing a fire after a database failure failed too; its lease will expire.");
                }
            }
        }
        if let Some(mut open) = walk.open.take() {
            open.end.outcome = Some(FireOutcome::Error);
            open.end.error = Some(reason.clone());
            open.finished_at = Some(self.store.now_ms());
            walk.news.attempts.push(open.clone());
            walk.report.attempts.push(open);
        }
        ChipState::Error { reason }
    }

    /// Ends a job's task the fire did not end in its own last write: one
    /// that fired nothing is done with what its chip shows; one cancelled
    /// before it fired goes back to its job's queue.
    async fn end_task(&self, walk: &mut Walk) {
        let Some(task_id) = walk.task_id else {
            return;
        };
        if walk.closed {
            return;
        }
        let written = if walk.fire_id.is_none() && walk.cancelled {
            retrying(|| {
                self.store
                    .release_tasks(self.owner.as_str(), std::slice::from_ref(&task_id))
            })
            .await
        } else {
            let outcome = task_outcome(&walk.report.attempts, None, Some(&walk.report.chip));
            retrying(|| self.store.finish_task(task_id, &outcome, walk.fire_id)).await
        };
        if let Err(e) = written {
            tracing::error!(task = task_id, error = %e, "Ending a job task failed; its lease will expire and it will run again.");
        }
    }
}

/// Why a fire fires nothing, if it does not: no connector left to try, or
/// a query the record's fields leave empty.
fn nothing_to_fire(
    chain: &Chain,
    query: &str,
    pack: &PackConfig,
    report: &FireReport,
) -> Option<String> {
    if chain.to_try.is_empty() {
        Some(
            if report
                .skipped
                .iter()
                .any(|s| s.reason.starts_with("already found"))
            {
                "every connector that can fire has already found results for this record; pick one in the menu to fire it again".to_owned()
            } else {
                "no connector of this pack can fire now".to_owned()
            },
        )
    } else if query.trim().is_empty() {
        Some(format!(
            "the query {:?} is empty for this record (it lacks the fields it names)",
            pack.query_template
        ))
    } else {
        None
    }
}

/// The outcome a job task records for its fire: `found` when any attempt
/// found results, else how the last attempt ended (`pending` is the one
/// being written now). A fire that tried nothing (every connector already
/// found results, say, after a crash between an attempt and the end of its
/// fire) stands for what its chip shows.
fn task_outcome(
    attempts: &[HistoryEntry],
    pending: Option<FireOutcome>,
    chip: Option<&ChipState>,
) -> String {
    let outcomes = attempts.iter().filter_map(|a| a.end.outcome).chain(pending);
    let mut last = None;
    for outcome in outcomes {
        if outcome == FireOutcome::Found {
            return outcome.name().to_owned();
        }
        last = Some(outcome);
    }
    match (last, chip) {
        (Some(outcome), _) => outcome.name(),
        (None, Some(ChipState::Found { .. })) => FireOutcome::Found.name(),
        (None, Some(ChipState::NotFound)) => FireOutcome::NotFound.name(),
        (None, _) => "skipped",
    }
    .to_owned()
}
