//! Operations on what a workspace spends: its monthly budgets, read by
//! every member and set or removed by admins, its caps on what one record
//! may cost a day, and what it spent, month by month, with every billed
//! attempt's receipt.

use model::{check_unit, Budget, BudgetStatus, EventKind, RecordCap, RecordCapStatus, SpendReport};

use crate::store::ChargeRow;
use crate::tenancy::Principal;
use crate::time::{month_bounds, utc_month};
use crate::Engine;

use super::{require_admin, OpError};

/// How many unanswered calls the review list shows.
pub const MAX_UNANSWERED: i64 = 200;

/// `month` checked, or the month holding `now` when absent.
fn month_or_now(month: Option<&str>, now: i64) -> Result<(String, i64, i64), OpError> {
    let month = month
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map_or_else(|| utc_month(now), str::to_owned);
    let (from, until) =
        month_bounds(&month).map_err(|e| OpError::Invalid(format!("month: {e}")))?;
    Ok((month, from, until))
}

impl Engine {
    /// What the workspace spent in `month` (`YYYY-MM`; this one when
    /// absent), per unit, by key, day, connector, person and record set.
    pub async fn spend_report(
        &self,
        who: &Principal,
        month: Option<&str>,
    ) -> Result<SpendReport, OpError> {
        let (month, _, _) = month_or_now(month, self.store.now_ms())?;
        Ok(self.store.spend_report(who.workspace_id, &month).await?)
    }

    /// Every billed attempt of the workspace in `month`, oldest first: what
    /// was fired, for what, by whom, and what it cost.
    pub async fn charges_of(
        &self,
        who: &Principal,
        month: Option<&str>,
    ) -> Result<(String, Vec<ChargeRow>), OpError> {
        let (month, from, until) = month_or_now(month, self.store.now_ms())?;
        let rows = self.store.charges(who.workspace_id, from, until).await?;
        Ok((month, rows))
    }

    /// The workspace's calls that went out and got no answer (the provider
    /// may have done them and billed them), newest first: at most
    /// [`MAX_UNANSWERED`], for a person to review. None is fired again by
    /// itself.
    pub async fn unanswered_calls(
        &self,
        who: &Principal,
    ) -> Result<Vec<model::Unanswered>, OpError> {
        Ok(self
            .store
            .unanswered(who.workspace_id, MAX_UNANSWERED)
            .await?)
    }

    /// The workspace's budgets with this month's spend against each.
    pub async fn budgets_of(&self, who: &Principal) -> Result<Vec<BudgetStatus>, OpError> {
        Ok(self.store.budgets(who.workspace_id).await?)
    }

    /// Sets (or changes) a monthly budget (admins). A connector's budget is
    /// in the unit the connector is priced in; a budget for every connector
    /// covers those priced in its unit.
    pub async fn set_budget(
        &self,
        who: &Principal,
        budget: Budget,
    ) -> Result<BudgetStatus, OpError> {
        require_admin(who)?;
        let budget = self.checked_budget(who, budget)?;
        self.store
            .set_budget(who.workspace_id, &budget, &who.email)
            .await?;
        let status = self
            .budget_status(who, budget.connector_id.as_deref(), &budget.unit)
            .await?;
        self.events.publish_in(
            Some(who.workspace_id),
            EventKind::BudgetChanged {
                budget: status.clone(),
            },
        );
        Ok(status)
    }

    /// Removes a budget (admins): the connector's, or with `connector_id`
    /// absent the one for every connector priced in `unit`.
    pub async fn remove_budget(
        &self,
        who: &Principal,
        connector_id: Option<&str>,
        unit: &str,
    ) -> Result<(), OpError> {
        require_admin(who)?;
        let status = self.budget_status(who, connector_id, unit).await?;
        if !self
            .store
            .remove_budget(who.workspace_id, connector_id, unit)
            .await?
        {
            // Removed by someone else meanwhile.
            return Err(no_budget(connector_id, unit));
        }
        self.events.publish_in(
            Some(who.workspace_id),
            EventKind::BudgetChanged { budget: status },
        );
        Ok(())
    }

    /// The workspace's caps on what one record may cost a day, by unit.
    pub async fn record_caps_of(&self, who: &Principal) -> Result<Vec<RecordCapStatus>, OpError> {
        Ok(self.store.record_caps(who.workspace_id).await?)
    }

    /// Sets (or changes) what one record may cost a day in a unit
    /// (admins). Today's spend of each record counts against it.
    pub async fn set_record_cap(
        &self,
        who: &Principal,
        mut cap: RecordCap,
    ) -> Result<RecordCapStatus, OpError> {
        require_admin(who)?;
        cap.unit = cap.unit.trim().to_owned();
        check_unit(&cap.unit).map_err(|e| OpError::Invalid(format!("unit: {e}")))?;
        self.store
            .set_record_cap(who.workspace_id, &cap, &who.email)
            .await?;
        self.store
            .record_caps(who.workspace_id)
            .await?
            .into_iter()
            .find(|c| c.cap.unit == cap.unit)
            .ok_or_else(|| no_record_cap(&cap.unit))
    }

    /// Removes the cap of `unit` (admins).
    pub async fn remove_record_cap(&self, who: &Principal, unit: &str) -> Result<(), OpError> {
        require_admin(who)?;
        if self
            .store
            .remove_record_cap(who.workspace_id, unit.trim())
            .await?
        {
            Ok(())
        } else {
            Err(no_record_cap(unit))
        }
    }

    /// The budget as it may be stored: its unit a unit, and a connector's
    /// budget for a connector the workspace sees, in the unit it is priced in.
    fn checked_budget(&self, who: &Principal, mut budget: Budget) -> Result<Budget, OpError> {
        budget.unit = budget.unit.trim().to_owned();
        let Some(id) = budget.connector_id.as_deref() else {
            check_unit(&budget.unit).map_err(|e| OpError::Invalid(format!("unit: {e}")))?;
            return Ok(budget);
        };
        let handle = self
            .registry
            .by_id_in(id, Some(who.workspace_id))
            .ok_or_else(|| OpError::NotFound(format!("connector {id:?} does not exist")))?;
        let Some(cost) = &handle.registration.profile.cost else {
            return Err(OpError::Invalid(format!(
                "connector_id: {id} has no price, so nothing counts against a budget; give its manifest a cost"
            )));
        };
        if budget.unit.is_empty() {
            budget.unit.clone_from(&cost.unit);
        } else if budget.unit != cost.unit {
            return Err(OpError::Invalid(format!(
                "unit: {id} is priced in {}, not {}",
                cost.unit, budget.unit
            )));
        }
        Ok(budget)
    }

    /// A budget with this month's spend against it (as just stored, or as
    /// it was before removal).
    async fn budget_status(
        &self,
        who: &Principal,
        connector_id: Option<&str>,
        unit: &str,
    ) -> Result<BudgetStatus, OpError> {
        self.store
            .budgets(who.workspace_id)
            .await?
            .into_iter()
            .find(|s| s.budget.connector_id.as_deref() == connector_id && s.budget.unit == unit)
            .ok_or_else(|| no_budget(connector_id, unit))
    }
}

/// The budget asked for does not exist.
fn no_budget(connector_id: Option<&str>, unit: &str) -> OpError {
    OpError::NotFound(match connector_id {
        Some(id) => format!("no budget for connector {id:?} in {unit}"),
        None => format!("no budget for every connector priced in {unit}"),
    })
}

/// The record cap asked for does not exist.
fn no_record_cap(unit: &str) -> OpError {
    OpError::NotFound(format!("no cap on what a record may cost a day in {unit}"))
}
