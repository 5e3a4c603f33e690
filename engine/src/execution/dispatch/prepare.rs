//! Preparing a fire: the pack, the chain and the query for one record,
//! from what was read for it, before anything is called.

use std::sync::Arc;

use model::{RecordSetSummary, TriggeredBy};

use super::{pack_in, walk, DispatchError, Dispatcher, FireRequest, RecordChainInputs, Scope};
use crate::packs::chain::Chain;
use crate::packs::{render_query, BundleMember, PackConfig};
use crate::store::StoredRecord;

/// What a fire needs before it starts, read once: the record, its set, the
/// workspace's scope, the pack, the chain and the query.
#[derive(Debug)]
pub struct Prepared {
    pub(super) req: FireRequest,
    pub(super) record: StoredRecord,
    pub(super) set: Arc<RecordSetSummary>,
    pub(super) scope: Arc<Scope>,
    pub(super) pack: PackConfig,
    pub(super) chain: Chain,
    pub(super) query: String,
}

impl Prepared {
    /// The connector the fire would try first, if any and if the query is
    /// not empty.
    pub fn first_connector(&self) -> Option<&str> {
        if self.query.trim().is_empty() {
            return None;
        }
        self.chain.to_try.first().map(String::as_str)
    }

    pub fn request(&self) -> &FireRequest {
        &self.req
    }
}

impl Dispatcher {
    /// Prepares a fire from what was read for it (a job reads for many
    /// records at once).
    pub fn prepare(
        &self,
        scope: Arc<Scope>,
        set: Arc<RecordSetSummary>,
        record: StoredRecord,
        req: FireRequest,
        inputs: &RecordChainInputs,
    ) -> Result<Prepared, DispatchError> {
        let pack = pack_in(&scope.catalog, &set.bundle_id, &req.pack_id)
            .ok_or_else(|| DispatchError::UnknownPack(req.pack_id.clone()))?;
        Ok(self.prepare_with(scope, set, record, req, pack, inputs))
    }

    pub(super) fn prepare_with(
        &self,
        scope: Arc<Scope>,
        set: Arc<RecordSetSummary>,
        record: StoredRecord,
        req: FireRequest,
        (pack, member): (PackConfig, Option<BundleMember>),
        inputs: &RecordChainInputs,
    ) -> Prepared {
        // A refresh asks again what was found before: nothing is walked
        // past for having found results already.
        let refreshing;
        let inputs = if req.triggered_by == TriggeredBy::ScheduledRefresh {
            refreshing = RecordChainInputs {
                already_found: Vec::new(),
                ..inputs.clone()
            };
            &refreshing
        } else {
            inputs
        };
        let chain = self.resolve(
            &scope,
            &pack,
            member.as_ref(),
            req.connector.as_deref(),
            inputs,
            walk::waits_out_until(req.priority(), self.store.now_ms()),
        );
        let query = render_query(&pack.query_template, &record.name, &record.field_map());
        Prepared {
            req,
            record,
            set,
            scope,
            pack,
            chain,
            query,
        }
    }
}
