//! What a call holds before it goes out, and gives back when the
//! provider does not bill it: its price from the workspace's budgets, its
//! place among a job's paid fires of the record, its price from the
//! record's count for the day, and its place under the connector's daily
//! cap. A limit that refuses becomes the walk's skip.

use model::{Amount, Capability, Charge, CostTier, EventKind, PaidBy, Skipped, SpendQuestion};

use super::{skip, Dispatcher};
use crate::connectors::registry::ConnectorHandle;
use crate::store::{retrying, RecordReservation, RecordTaken, Reservation, StoreError, Taken};

/// At most `most` fires of paid connectors for `record_id` in job `job_id`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PaidCap {
    pub job_id: i64,
    pub record_id: i64,
    pub most: u32,
}

/// What `record_id` may cost a day in the unit of the call, and whether
/// the person said to spend past it this time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DayCap {
    pub record_id: i64,
    pub limit: Amount,
    pub spend_more: bool,
}

impl Dispatcher {
    /// Takes what a call needs before it goes out, in order: its price
    /// from the workspace's budgets, its place among a job's paid fires of
    /// the record, its price from the record's count for the day, its
    /// place under the connector's daily cap. The first
    /// that refuses gives back what was taken and says why, as the walk's
    /// skip; the budgets a call took past their warning line are told to
    /// the workspace.
    pub(super) async fn hold(
        &self,
        workspace_id: Option<i64>,
        handle: &ConnectorHandle,
        intent: &Capability,
        keyed_by: Option<i64>,
        (paid_cap, day_cap): (Option<PaidCap>, Option<DayCap>),
    ) -> Result<Result<Held, Skipped>, StoreError> {
        let registration = &handle.registration;
        let id = registration.profile.id.as_str();
        let mut held = Held {
            charge: registration.profile.cost.as_ref().map(|cost| Charge {
                amount: cost.of_call(intent.name()),
                unit: cost.unit.clone(),
                paid_by: if keyed_by.is_some() {
                    PaidBy::Workspace
                } else {
                    PaidBy::Server
                },
            }),
            reserved: None,
            paid: None,
            record_day: None,
        };
        // A call priced at nothing takes nothing from the budgets.
        let priced = held.charge.as_ref().filter(|c| c.amount > Amount::ZERO);
        if let (Some(price), Some(ws)) = (priced, workspace_id) {
            match retrying(|| self.store.take_spend(ws, id, &price.unit, price.amount)).await? {
                Taken::Taken {
                    reservation,
                    warnings,
                } => {
                    for budget in warnings {
                        self.events
                            .publish_in(Some(ws), EventKind::BudgetChanged { budget });
                    }
                    held.reserved = Some(reservation);
                }
                Taken::Refused(status) => {
                    return Ok(Err(capped(
                        id,
                        &status.spent_reason(&registration.profile.display_name),
                    )));
                }
            }
        }
        let paid = registration.profile.cost_tier == CostTier::Paid || priced.is_some();
        if let Some(cap) = paid_cap.filter(|_| paid) {
            if !retrying(|| {
                self.store
                    .take_paid_fire(cap.job_id, cap.record_id, cap.most)
            })
            .await?
            {
                self.release(&held).await;
                return Ok(Err(capped(
                    id,
                    &format!("this fan-out allows {} paid fires per record", cap.most),
                )));
            }
            held.paid = Some(cap);
        }
        if let (Some(price), Some(ws), Some(day)) = (priced, workspace_id, day_cap) {
            match self.take_record_day(ws, id, price, day).await? {
                Ok(taken) => held.record_day = Some(taken),
                Err(refused) => {
                    self.release(&held).await;
                    return Ok(Err(refused));
                }
            }
        }
        if let Some(reached) = self.take_daily(handle, workspace_id, keyed_by).await? {
            self.release(&held).await;
            return Ok(Err(capped(id, &reached)));
        }
        Ok(Ok(held))
    }

    /// Takes a place under the connector's daily cap for one call with
    /// `keyed_by`'s key and, with the server's key, under the share of it
    /// one workspace may take ([`super::DispatchConfig::share_of`]). Says
    /// which is reached when one is.
    async fn take_daily(
        &self,
        handle: &ConnectorHandle,
        workspace_id: Option<i64>,
        keyed_by: Option<i64>,
    ) -> Result<Option<String>, StoreError> {
        let profile = &handle.registration.profile;
        let Some(cap) = profile.rate_hints.daily_cap else {
            return Ok(None);
        };
        let share = self.config.share_of(cap);
        if let (None, Some(ws)) = (keyed_by, workspace_id.filter(|_| share < cap)) {
            let counted = crate::connectors::lens::share_key(&profile.id, ws);
            if !retrying(|| self.store.take_daily_fire(&counted, share)).await? {
                return Ok(Some(format!(
                    "this workspace's share of the daily cap is reached ({share} of {cap} fires)"
                )));
            }
        }
        let counted = crate::connectors::lens::usage_key(&profile.id, keyed_by);
        if !retrying(|| self.store.take_daily_fire(&counted, cap)).await? {
            return Ok(Some(format!("daily cap of {cap} fires reached")));
        }
        Ok(None)
    }

    /// Takes a call's price from its record's count for the day; past the
    /// cap (unless the person said to spend more) the skip carries the
    /// question to ask.
    async fn take_record_day(
        &self,
        workspace_id: i64,
        connector_id: &str,
        price: &Charge,
        day: DayCap,
    ) -> Result<Result<RecordReservation, Skipped>, StoreError> {
        let taken = retrying(|| {
            self.store.take_record_spend(
                workspace_id,
                day.record_id,
                &price.unit,
                price.amount,
                (day.limit, day.spend_more),
            )
        })
        .await?;
        Ok(match taken {
            RecordTaken::Taken(reservation) => Ok(reservation),
            RecordTaken::Refused { spent } => {
                let question = SpendQuestion {
                    connector_id: connector_id.to_owned(),
                    unit: price.unit.clone(),
                    spent_today: spent,
                    price: price.amount,
                    daily_limit: day.limit,
                };
                Err(Skipped {
                    spend_more: Some(question),
                    ..capped(
                        connector_id,
                        &format!(
                            "{} would take this record past its cap of {} a day ({} spent today)",
                            price.amount.in_unit(&price.unit),
                            day.limit.in_unit(&price.unit),
                            spent.in_unit(&price.unit)
                        ),
                    )
                })
            }
        })
    }

    /// Gives back what a call that was not billed (or not made) held. A
    /// give-back that fails leaves it counted: a budget or a limit may then
    /// stop early, never late.
    pub(super) async fn release(&self, held: &Held) {
        if let Some(reserved) = &held.reserved {
            if let Err(e) = retrying(|| self.store.give_back(reserved)).await {
                tracing::warn!(error = %e, connector = %reserved.connector_id, "Giving back an unbilled call's cost failed; it stays counted.");
            }
        }
        if let Some(cap) = held.paid {
            if let Err(e) =
                retrying(|| self.store.give_back_paid_fire(cap.job_id, cap.record_id)).await
            {
                tracing::warn!(error = %e, job = cap.job_id, "Taking back an unbilled paid fire failed; it stays counted.");
            }
        }
        if let Some(day) = &held.record_day {
            if let Err(e) = retrying(|| self.store.give_back_record_spend(day)).await {
                tracing::warn!(error = %e, record = day.record_id, "Giving back an unbilled call's price to its record's day failed; it stays counted.");
            }
        }
    }
}

/// What a call holds while it is made: the charge it will record if
/// billed, its cost taken from the budgets, its place among the job's paid
/// fires of the record, its price taken from the record's day.
pub(super) struct Held {
    pub(super) charge: Option<Charge>,
    reserved: Option<Reservation>,
    paid: Option<PaidCap>,
    record_day: Option<RecordReservation>,
}

/// A skip because a spending limit stops the connector.
fn capped(connector_id: &str, reason: &str) -> Skipped {
    Skipped {
        capped: true,
        ..skip(connector_id, reason)
    }
}
