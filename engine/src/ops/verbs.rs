//! The registry every door reads: each verb the caller's workspace can
//! call (its search capabilities and the verbs declared in code, which
//! stand for the capabilities they are named after), with
//! the schemas made from its types, how it answers, what it bills and
//! whether some connector can answer it now.

use model::{Capability, CapabilityView, Verb, VerbKind, VerbMode, VERBS};

use crate::packs::chain::{self, Candidate, ChainRequest};
use crate::tenancy::Principal;
use crate::Engine;

use super::OpError;

/// What one use of a search capability is.
const SEARCH_BILLING_UNIT: &str = "connector request";

impl Engine {
    /// Every verb of the caller's workspace: each capability it has a
    /// connector for or that is built in, then the verbs declared in code.
    pub async fn capabilities_of(&self, who: &Principal) -> Result<Vec<CapabilityView>, OpError> {
        let ws = Some(who.workspace_id);
        let scope = self.dispatcher.scope(ws).await?;
        let candidates = scope.candidates(&self.registry);
        Ok(self
            .entries(ws)
            .into_iter()
            .map(|(entry, runs_through)| {
                let connectors = self.registry.serving(&runs_through, ws).len();
                let (chain, unavailable) = chain_now(&runs_through, &candidates);
                CapabilityView {
                    name: entry.name,
                    label: entry.label,
                    builtin: entry.builtin,
                    connectors,
                    kind: entry.kind,
                    mode: entry.mode,
                    billing_unit: entry.billing_unit.to_owned(),
                    available: unavailable.is_none(),
                    unavailable,
                    input_schema: entry.kind.input_schema(),
                    output_schema: entry.kind.output_schema(),
                    runs_through,
                    chain,
                }
            })
            .collect())
    }

    /// The names of the verbs some connector of the caller's workspace
    /// serves (any status): what its agents' tool list holds, read from
    /// the registry alone, at once.
    pub fn served_verb_names(&self, who: &Principal) -> Vec<String> {
        let ws = Some(who.workspace_id);
        self.entries(ws)
            .into_iter()
            .filter(|(_, runs_through)| !self.registry.serving(runs_through, ws).is_empty())
            .map(|(entry, _)| entry.name)
            .collect()
    }

    /// Every verb's listing and the capability it runs through. A
    /// capability a verb declared in code is the door of (maps.search) is
    /// listed once, as that verb.
    fn entries(&self, ws: Option<i64>) -> Vec<(Entry, Capability)> {
        let searches = self
            .registry
            .capabilities(ws)
            .into_iter()
            .filter(|cap| Verb::named(cap.name()).is_none())
            .map(|cap| {
                let entry = Entry {
                    name: cap.name().to_owned(),
                    label: cap.label().to_owned(),
                    builtin: matches!(cap, Capability::Builtin(_)),
                    kind: VerbKind::Search,
                    mode: VerbMode::InlineOrJob,
                    billing_unit: SEARCH_BILLING_UNIT,
                };
                (entry, cap)
            });
        let declared = VERBS.iter().map(|verb: &Verb| {
            let entry = Entry {
                name: verb.name.to_owned(),
                label: verb.label.to_owned(),
                builtin: true,
                kind: verb.kind,
                mode: verb.mode,
                billing_unit: verb.billing_unit,
            };
            (entry, Capability::from(verb.runs_through))
        });
        searches.chain(declared).collect()
    }
}

/// A verb's listing before its connectors are counted.
struct Entry {
    name: String,
    label: String,
    builtin: bool,
    kind: VerbKind,
    mode: VerbMode,
    billing_unit: &'static str,
}

/// The chain a call through `intent` would try now, resolved as a call's
/// is (statuses, keys, switches), and why none can answer when none can.
fn chain_now(intent: &Capability, candidates: &[Candidate]) -> (Vec<String>, Option<String>) {
    let chain = chain::resolve(
        &ChainRequest {
            intent: Some(intent),
            ..ChainRequest::default()
        },
        candidates,
    );
    if !chain.to_try.is_empty() {
        return (chain.to_try, None);
    }
    if chain.skipped.is_empty() {
        return (
            Vec::new(),
            Some(format!("no connector serves {intent} here")),
        );
    }
    let reasons: Vec<String> = chain
        .skipped
        .iter()
        .map(|s| format!("{}: {}", s.connector_id, s.reason))
        .collect();
    let why = format!("no connector can answer now ({})", reasons.join("; "));
    (Vec::new(), Some(why))
}
