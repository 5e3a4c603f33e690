//! Operations on one record: firing a pack, cancelling a fire, the chip's
//! connector menu and "always start with", its history and items, and
//! triaging an item.

use model::{ConnectorMenu, Envelope, FireReport, HistoryEntry, Item, TriageVerb};

use crate::execution::dispatch::FireRequest;
use crate::store::Owned;
use crate::tenancy::Principal;
use crate::Engine;

use super::OpError;

/// How a person fires a chip: through exactly one connector (the menu's
/// "fire through") or its chain, and whether past the record's daily caps
/// (the answer to "spend more?").
#[derive(Clone, Copy, Debug, Default)]
pub struct FireChoice<'a> {
    pub connector: Option<&'a str>,
    pub spend_more: bool,
}

impl Engine {
    /// Fires `pack_id` for a record (exactly `connector` when given, the
    /// chip menu's "fire through") and waits for the fire to end. The fire
    /// is the engine's: a caller that stops waiting changes nothing about it.
    /// When the record's daily cap stopped a priced connector and nothing
    /// found results, the report's skip carries the question ("spend
    /// more?"; `spend_more` lets the next fire past the cap). When other
    /// caps stopped every connector the chain could have fired, nothing
    /// fired and the answer is [`OpError::Limited`] naming them.
    pub async fn fire_pack(
        &self,
        who: &Principal,
        record_id: i64,
        pack_id: &str,
        choice: FireChoice<'_>,
    ) -> Result<FireReport, OpError> {
        self.authorize(who, Owned::Record(record_id)).await?;
        // A connector that cannot fire (not registered, not serving) is
        // walked past with a note, and the chain fires instead.
        let connector = choice.connector.map(str::trim).filter(|c| !c.is_empty());
        let report = self
            .dispatcher
            .fire(
                FireRequest::by_person(
                    record_id,
                    pack_id,
                    connector.map(str::to_owned),
                    who.email.clone(),
                )
                .in_order_of(who.user_id)
                .spending_more(choice.spend_more),
            )
            .await?;
        // The page asks the question beside the chip; the envelope's doors
        // refuse with it.
        if report.stopped_to_ask().is_some() {
            return Ok(report);
        }
        let capped: Vec<String> = report
            .skipped
            .iter()
            .filter(|s| s.capped)
            .map(|s| format!("{}: {}", s.connector_id, s.reason))
            .collect();
        if report.attempts.is_empty() && !capped.is_empty() {
            return Err(OpError::Limited {
                detail: format!(
                    "{}; nothing else in the chain could fire",
                    capped.join("; ")
                ),
                // The soonest a cap frees: the next UTC day.
                retry_after: self.store.clock().until_next_utc_day(),
            });
        }
        Ok(report)
    }

    /// [`Engine::fire_pack`] in the envelope every door answers a fire with;
    /// [`OpError::SpendMore`] when the record's daily cap stopped it before
    /// anything went out.
    pub async fn fire_pack_envelope(
        &self,
        who: &Principal,
        record_id: i64,
        pack_id: &str,
        choice: FireChoice<'_>,
    ) -> Result<Envelope<FireReport>, OpError> {
        let report = self.fire_pack(who, record_id, pack_id, choice).await?;
        // Nothing went out: the refusal asks the question, for the caller
        // to fire again with `spend_more`.
        if let Some(question) = report.stopped_to_ask() {
            return Err(OpError::SpendMore(Box::new(question.clone())));
        }
        Ok(Envelope::of_fire(report))
    }

    /// Cancels a fire in flight in this process. A fire that has ended, or
    /// runs in another process, is a conflict saying where it stands.
    pub async fn cancel_fire(&self, who: &Principal, fire_id: i64) -> Result<(), OpError> {
        self.authorize(who, Owned::Fire(fire_id)).await?;
        if self.dispatcher.cancel(fire_id) {
            return Ok(());
        }
        let (status, _) = self.store.fire_status(fire_id).await?;
        Err(OpError::Conflict {
            detail: format!("fire {fire_id} is not in flight here (it is {status})"),
            current: None,
        })
    }

    /// Every attempt on a record, newest first.
    pub async fn record_history(
        &self,
        who: &Principal,
        record_id: i64,
    ) -> Result<Vec<HistoryEntry>, OpError> {
        self.authorize(who, Owned::Record(record_id)).await?;
        Ok(self.store.history(record_id).await?)
    }

    /// The curated layer of one record.
    pub async fn record_items(
        &self,
        who: &Principal,
        record_id: i64,
    ) -> Result<Vec<Item>, OpError> {
        self.authorize(who, Owned::Record(record_id)).await?;
        Ok(self.store.items(record_id).await?)
    }

    /// The chip's connector menu: every connector serving the pack's
    /// intent with its last attempt on the record.
    pub async fn record_menu(
        &self,
        who: &Principal,
        record_id: i64,
        pack_id: &str,
    ) -> Result<ConnectorMenu, OpError> {
        self.authorize(who, Owned::Record(record_id)).await?;
        self.known_pack(who, pack_id).await?;
        Ok(self.connector_menu(who.user_id, record_id, pack_id).await?)
    }

    /// Sets (or, with `None`, clears) the connector a record's chip for
    /// `pack_id` starts with. The connector must serve the pack's intent.
    pub async fn set_start_with(
        &self,
        who: &Principal,
        record_id: i64,
        pack_id: &str,
        connector: Option<&str>,
    ) -> Result<(), OpError> {
        self.authorize(who, Owned::Record(record_id)).await?;
        let pack = self.known_pack(who, pack_id).await?;
        let connector = connector.map(str::trim).filter(|c| !c.is_empty());
        if let Some(id) = connector {
            self.check_serves(who, &pack, id, "connector")?;
        }
        Ok(self
            .store
            .set_record_override(record_id, pack_id, connector, &who.email)
            .await?)
    }

    /// Applies a triage verb to an item as the caller, and tells every
    /// viewer of its set. A stale `version` is a conflict carrying the item
    /// as it is now.
    pub async fn triage_item(
        &self,
        who: &Principal,
        item_id: i64,
        verb: TriageVerb,
        version: i64,
    ) -> Result<Item, OpError> {
        self.authorize(who, Owned::Item(item_id)).await?;
        let item = self
            .store
            .triage(item_id, verb, version, &who.email)
            .await?;
        let record = self.store.record(item.record_id).await?;
        self.events.publish(
            Some(record.record_set_id),
            model::EventKind::ItemChanged {
                item: item.clone(),
                actor: who.email.clone(),
            },
        );
        Ok(item)
    }

    /// The pack as the caller's workspace has it; not found otherwise.
    pub(super) async fn known_pack(
        &self,
        who: &Principal,
        pack_id: &str,
    ) -> Result<model::PackConfig, OpError> {
        self.catalog_in(Some(who.workspace_id))
            .await?
            .pack(pack_id)
            .cloned()
            .ok_or_else(|| OpError::NotFound(format!("no pack {pack_id:?}")))
    }

    /// `id` names a connector the caller's workspace sees that serves
    /// `pack`'s intent; a bad `field` otherwise.
    pub(super) fn check_serves(
        &self,
        who: &Principal,
        pack: &model::PackConfig,
        id: &str,
        field: &str,
    ) -> Result<(), OpError> {
        let handle = self.registered(who, id, field)?;
        if handle
            .registration
            .profile
            .capabilities
            .contains(&pack.intent)
        {
            Ok(())
        } else {
            Err(OpError::Invalid(format!(
                "{field}: {id:?} does not serve {} (the intent of pack {:?})",
                pack.intent, pack.pack_id
            )))
        }
    }

    /// A connector the caller's workspace can see; a bad field otherwise.
    fn registered(
        &self,
        who: &Principal,
        id: &str,
        field: &str,
    ) -> Result<crate::connectors::registry::ConnectorHandle, OpError> {
        self.registry
            .by_id_in(id, Some(who.workspace_id))
            .ok_or_else(|| OpError::Invalid(format!("{field}: no connector {id:?} is registered")))
    }
}
