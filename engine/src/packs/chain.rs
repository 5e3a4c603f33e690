//! Chain resolution: which connectors a fire tries, in which order, and why
//! the others are skipped. One pure function, `resolve`.
//!
//! The base chain is the first that is set of: the person's own order for
//! the pack, the bundle member's override, the pack's `preferred_connectors`,
//! then every connector serving the intent by cost tier (free, free-tier,
//! paid) and id. A per-record override puts its
//! connector first ("always start with X for this record"). A per-fire
//! explicit connector is the whole chain. Connectors that are not registered,
//! do not serve the intent, or are not available (disabled, needs-env,
//! rate-limited, auth-failed) are skipped with the reason; an explicit or
//! per-record choice that cannot fire falls back to the rest and says so. A
//! default click also skips connectors that already found results for this
//! record and intent. Background work whose chain has nothing else to try
//! keeps the connectors whose rate limit lifts soon: it waits rather than
//! ending the record unfired.

use model::{Capability, ChainRule, ConnectorStatus, CostTier, Skipped};

/// A connector as chain resolution sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub id: String,
    pub serves: Vec<Capability>,
    pub cost_tier: CostTier,
    pub status: ConnectorStatus,
}

/// Everything that can shape a chain for one fire of one pack on one record.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChainRequest<'a> {
    /// The intent of the pack.
    pub intent: Option<&'a Capability>,
    /// A connector picked for this one fire (the chip menu).
    pub explicit: Option<&'a str>,
    /// The record's "always start with" connector for this pack.
    pub record_override: Option<&'a str>,
    /// The person's own order for the pack, replacing the bundle's and
    /// the pack's (their fires and chips only).
    pub person: Option<&'a [String]>,
    /// The bundle member's chain, replacing the pack's.
    pub bundle_override: Option<&'a [String]>,
    /// The pack's preferred chain.
    pub pack_preferred: &'a [String],
    /// Connectors that already returned results for this record and intent.
    pub already_found: &'a [String],
    /// Background work: when nothing else in the chain can fire, the
    /// connectors rate-limited until no later than this (ms since the
    /// epoch) are tried, their calls waiting for the limit to lift,
    /// instead of the record ending unfired.
    pub waits_out_until: Option<i64>,
}

/// The resolved chain.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    /// Connectors to try, in order; each is registered, serves the intent and
    /// is available.
    pub to_try: Vec<String>,
    /// Connectors not tried, with the reason.
    pub skipped: Vec<Skipped>,
    /// Sentences for the person about fallbacks.
    pub notes: Vec<String>,
    /// Which level of configuration the base chain came from.
    pub source: ChainRule,
    /// Which rule put the first of `to_try` first (`None`: nothing to try).
    pub chosen_by: Option<ChainRule>,
}

/// Resolves the chain for one fire. `connectors` is every registered connector.
pub fn resolve(req: &ChainRequest<'_>, connectors: &[Candidate]) -> Chain {
    let fit = Fitness { req, connectors };
    let mut notes = Vec::new();
    let mut skipped = Vec::new();

    if let Some(id) = req.explicit {
        match fit.unfit(id) {
            None => {
                return Chain {
                    to_try: vec![id.to_owned()],
                    skipped,
                    notes,
                    source: ChainRule::Fire,
                    chosen_by: Some(ChainRule::Fire),
                }
            }
            Some(reason) => {
                notes.push(format!(
                    "{id} cannot fire ({reason}); falling back to the chain"
                ));
                skipped.push(Skipped {
                    connector_id: id.to_owned(),
                    reason,
                    capped: false,
                    spend_more: None,
                });
            }
        }
    }

    let (base, source) = base_chain(req, connectors);
    let mut ordered: Vec<String> = Vec::with_capacity(base.len() + 1);
    if let Some(first) = req.record_override {
        if req.explicit != Some(first) {
            match fit.unfit(first) {
                None => ordered.push(first.to_owned()),
                Some(reason) => {
                    notes.push(format!(
                        "this record starts with {first}, which cannot fire ({reason}); using the chain"
                    ));
                    skipped.push(Skipped {
                        connector_id: first.to_owned(),
                        reason,
                        capped: false,
                        spend_more: None,
                    });
                }
            }
        }
    }
    for id in base {
        let seen = ordered.contains(&id)
            || skipped.iter().any(|s| s.connector_id == id)
            || req.explicit == Some(id.as_str());
        if !seen {
            ordered.push(id);
        }
    }
    let to_try = fit.sift(ordered, &mut skipped);
    let chosen_by = to_try.first().map(|first| {
        if req.record_override == Some(first.as_str()) {
            ChainRule::Record
        } else {
            source
        }
    });
    Chain {
        to_try,
        skipped,
        notes,
        source,
        chosen_by,
    }
}

/// The chain before the record's and the fire's own choices: the person's
/// own order, else the bundle's override, else the pack's preferred
/// connectors, else every connector serving the intent by cost tier, then
/// id.
fn base_chain(req: &ChainRequest<'_>, connectors: &[Candidate]) -> (Vec<String>, ChainRule) {
    if let Some(chain) = req.person.filter(|c| !c.is_empty()) {
        (chain.to_vec(), ChainRule::Person)
    } else if let Some(chain) = req.bundle_override {
        (chain.to_vec(), ChainRule::Bundle)
    } else if !req.pack_preferred.is_empty() {
        (req.pack_preferred.to_vec(), ChainRule::Pack)
    } else {
        let mut serving: Vec<&Candidate> = connectors
            .iter()
            .filter(|c| req.intent.is_none_or(|i| c.serves.contains(i)))
            .collect();
        serving.sort_by(|a, b| (a.cost_tier, &a.id).cmp(&(b.cost_tier, &b.id)));
        (
            serving.into_iter().map(|c| c.id.clone()).collect(),
            ChainRule::CostTier,
        )
    }
}

/// Which connectors can fire for a request now, and why not.
struct Fitness<'a> {
    req: &'a ChainRequest<'a>,
    connectors: &'a [Candidate],
}

impl Fitness<'_> {
    fn find(&self, id: &str) -> Option<&Candidate> {
        self.connectors.iter().find(|c| c.id == id)
    }

    /// Why a connector cannot fire for this intent now, if it cannot.
    fn unfit(&self, id: &str) -> Option<String> {
        let intent = self.req.intent;
        match self.find(id) {
            None => Some("not registered".to_owned()),
            Some(c) if intent.is_some_and(|i| !c.serves.contains(i)) => Some(format!(
                "does not serve {}",
                intent.map(Capability::name).unwrap_or_default()
            )),
            Some(c) => c.status.reason(),
        }
    }

    /// A rate limit background work waits for when nothing else can fire.
    fn lifts_soon(&self, id: &str) -> bool {
        self.find(id).is_some_and(|c| match c.status {
            ConnectorStatus::RateLimited { until, .. } => {
                self.req.waits_out_until.is_some_and(|t| until <= t)
            }
            _ => false,
        }) && !self.req.already_found.iter().any(|f| f == id)
    }

    /// The connectors of `ordered` that can fire, in order; the others go
    /// to `skipped` with the reason. When none can, those whose rate limit
    /// lifts soon, for background work to wait for.
    fn sift(&self, ordered: Vec<String>, skipped: &mut Vec<Skipped>) -> Vec<String> {
        let mut to_try = Vec::with_capacity(ordered.len());
        let mut waits_for = Vec::new();
        for id in ordered {
            if let Some(reason) = self.unfit(&id) {
                if self.lifts_soon(&id) {
                    waits_for.push(id.clone());
                }
                // A spent budget is a spending limit, not the connector's state.
                let capped = self
                    .find(&id)
                    .is_some_and(|c| matches!(c.status, ConnectorStatus::OverBudget { .. }));
                skipped.push(Skipped {
                    connector_id: id,
                    reason,
                    capped,
                    spend_more: None,
                });
            } else if self.req.already_found.contains(&id) {
                skipped.push(Skipped {
                    connector_id: id,
                    reason: "already found results for this record".to_owned(),
                    capped: false,
                    spend_more: None,
                });
            } else {
                to_try.push(id);
            }
        }
        if to_try.is_empty() && !waits_for.is_empty() {
            skipped.retain(|s| !waits_for.contains(&s.connector_id));
            to_try = waits_for;
        }
        to_try
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::BuiltinCapability as B;
    use proptest::prelude::*;

    fn web() -> Capability {
        B::SearchWeb.into()
    }

    fn candidate(id: &str, tier: CostTier, status: ConnectorStatus) -> Candidate {
        Candidate {
            id: id.to_owned(),
            serves: vec![web()],
            cost_tier: tier,
            status,
        }
    }

    fn inventory() -> Vec<Candidate> {
        use ConnectorStatus::*;
        vec![
            candidate("serpapi", CostTier::Paid, Available),
            candidate("searxng", CostTier::Free, Available),
            candidate("tavily", CostTier::FreeTier, Available),
            candidate(
                "brave",
                CostTier::FreeTier,
                NeedsEnv {
                    vars: vec!["BRAVE_API_KEY".into()],
                },
            ),
            candidate(
                "off",
                CostTier::Free,
                Disabled {
                    reason: "by ana".into(),
                },
            ),
            candidate(
                "limited",
                CostTier::Free,
                RateLimited {
                    until: i64::MAX,
                    reason: "429".into(),
                },
            ),
            candidate(
                "locked",
                CostTier::Free,
                AuthFailed {
                    at: 0,
                    reason: "401".into(),
                },
            ),
            Candidate {
                id: "wikipedia".into(),
                serves: vec![B::FetchWikipedia.into()],
                cost_tier: CostTier::Free,
                status: Available,
            },
        ]
    }

    fn strings(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| (*s).to_owned()).collect()
    }

    struct Case {
        name: &'static str,
        explicit: Option<&'static str>,
        record: Option<&'static str>,
        bundle: Option<&'static [&'static str]>,
        person: Option<&'static [&'static str]>,
        pack: &'static [&'static str],
        found: &'static [&'static str],
        to_try: &'static [&'static str],
        skipped: &'static [&'static str],
        source: ChainRule,
        notes: usize,
    }

    #[test]
    fn table() {
        use ChainRule::*;
        let cases = [
            Case {
                name: "cost-tier default when nothing is set",
                explicit: None,
                record: None,
                bundle: None,
                person: None,
                pack: &[],
                found: &[],
                to_try: &["searxng", "tavily", "serpapi"],
                skipped: &["limited", "locked", "off", "brave"],
                source: CostTier,
                notes: 0,
            },
            Case {
                name: "pack chain is used as written",
                explicit: None,
                record: None,
                bundle: None,
                person: None,
                pack: &["serpapi", "searxng"],
                found: &[],
                to_try: &["serpapi", "searxng"],
                skipped: &[],
                source: Pack,
                notes: 0,
            },
            Case {
                name: "bundle override beats the pack",
                explicit: None,
                record: None,
                bundle: Some(&["tavily"]),
                person: None,
                pack: &["serpapi", "searxng"],
                found: &[],
                to_try: &["tavily"],
                skipped: &[],
                source: Bundle,
                notes: 0,
            },
            Case {
                name: "record override starts the chain",
                explicit: None,
                record: Some("serpapi"),
                bundle: None,
                person: None,
                pack: &["searxng", "serpapi", "tavily"],
                found: &[],
                to_try: &["serpapi", "searxng", "tavily"],
                skipped: &[],
                source: Pack,
                notes: 0,
            },
            Case {
                name: "record override beats the bundle too",
                explicit: None,
                record: Some("serpapi"),
                bundle: Some(&["tavily"]),
                person: None,
                pack: &["searxng"],
                found: &[],
                to_try: &["serpapi", "tavily"],
                skipped: &[],
                source: Bundle,
                notes: 0,
            },
            Case {
                name: "explicit is the whole chain",
                explicit: Some("serpapi"),
                record: Some("tavily"),
                bundle: Some(&["tavily"]),
                person: None,
                pack: &["searxng"],
                found: &["serpapi"],
                to_try: &["serpapi"],
                skipped: &[],
                source: Fire,
                notes: 0,
            },
            Case {
                name: "disabled explicit falls back with a note",
                explicit: Some("off"),
                record: None,
                bundle: None,
                person: None,
                pack: &["off", "searxng"],
                found: &[],
                to_try: &["searxng"],
                skipped: &["off"],
                source: Pack,
                notes: 1,
            },
            Case {
                name: "explicit needing env falls back with a note",
                explicit: Some("brave"),
                record: None,
                bundle: None,
                person: None,
                pack: &["searxng"],
                found: &[],
                to_try: &["searxng"],
                skipped: &["brave"],
                source: Pack,
                notes: 1,
            },
            Case {
                name: "unknown explicit falls back",
                explicit: Some("ghost"),
                record: None,
                bundle: None,
                person: None,
                pack: &["searxng"],
                found: &[],
                to_try: &["searxng"],
                skipped: &["ghost"],
                source: Pack,
                notes: 1,
            },
            Case {
                name: "explicit of another intent falls back",
                explicit: Some("wikipedia"),
                record: None,
                bundle: None,
                person: None,
                pack: &["tavily"],
                found: &[],
                to_try: &["tavily"],
                skipped: &["wikipedia"],
                source: Pack,
                notes: 1,
            },
            Case {
                name: "unavailable record override is noted",
                explicit: None,
                record: Some("locked"),
                bundle: None,
                person: None,
                pack: &["searxng"],
                found: &[],
                to_try: &["searxng"],
                skipped: &["locked"],
                source: Pack,
                notes: 1,
            },
            Case {
                name: "unavailable chain members are skipped",
                explicit: None,
                record: None,
                bundle: None,
                person: None,
                pack: &[
                    "off",
                    "limited",
                    "locked",
                    "brave",
                    "ghost",
                    "wikipedia",
                    "tavily",
                ],
                found: &[],
                to_try: &["tavily"],
                skipped: &["off", "limited", "locked", "brave", "ghost", "wikipedia"],
                source: Pack,
                notes: 0,
            },
            Case {
                name: "connectors that found results are skipped",
                explicit: None,
                record: None,
                bundle: None,
                person: None,
                pack: &["searxng", "tavily", "serpapi"],
                found: &["searxng"],
                to_try: &["tavily", "serpapi"],
                skipped: &["searxng"],
                source: Pack,
                notes: 0,
            },
            Case {
                name: "a chain whose every member found is empty",
                explicit: None,
                record: None,
                bundle: None,
                person: None,
                pack: &["searxng"],
                found: &["searxng"],
                to_try: &[],
                skipped: &["searxng"],
                source: Pack,
                notes: 0,
            },
            Case {
                name: "duplicates in a chain are tried once",
                explicit: None,
                record: None,
                bundle: None,
                person: None,
                pack: &["searxng", "searxng", "tavily"],
                found: &[],
                to_try: &["searxng", "tavily"],
                skipped: &[],
                source: Pack,
                notes: 0,
            },
            Case {
                name: "the person's order beats the bundle and the pack",
                explicit: None,
                record: None,
                bundle: Some(&["tavily"]),
                person: Some(&["serpapi", "tavily"]),
                pack: &["searxng"],
                found: &[],
                to_try: &["serpapi", "tavily"],
                skipped: &[],
                source: Person,
                notes: 0,
            },
            Case {
                name: "an empty order of the person's is none",
                explicit: None,
                record: None,
                bundle: None,
                person: Some(&[]),
                pack: &["searxng"],
                found: &[],
                to_try: &["searxng"],
                skipped: &[],
                source: Pack,
                notes: 0,
            },
            Case {
                name: "the record's start and the fire's pick beat the person's order",
                explicit: None,
                record: Some("searxng"),
                bundle: None,
                person: Some(&["serpapi"]),
                pack: &["tavily"],
                found: &[],
                to_try: &["searxng", "serpapi"],
                skipped: &[],
                source: Person,
                notes: 0,
            },
            Case {
                name: "a switched-off connector in the person's order is passed over",
                explicit: None,
                record: None,
                bundle: None,
                person: Some(&["off", "tavily"]),
                pack: &["searxng"],
                found: &[],
                to_try: &["tavily"],
                skipped: &["off"],
                source: Person,
                notes: 0,
            },
        ];
        let inventory = inventory();
        let intent = web();
        for case in cases {
            let bundle = case.bundle.map(strings);
            let person = case.person.map(strings);
            let pack = strings(case.pack);
            let found = strings(case.found);
            let chain = resolve(
                &ChainRequest {
                    intent: Some(&intent),
                    explicit: case.explicit,
                    record_override: case.record,
                    person: person.as_deref(),
                    bundle_override: bundle.as_deref(),
                    pack_preferred: &pack,
                    already_found: &found,
                    waits_out_until: None,
                },
                &inventory,
            );
            assert_eq!(chain.to_try, strings(case.to_try), "{}", case.name);
            let skipped: Vec<&str> = chain
                .skipped
                .iter()
                .map(|s| s.connector_id.as_str())
                .collect();
            assert_eq!(skipped, case.skipped, "{}", case.name);
            assert_eq!(chain.source, case.source, "{}", case.name);
            assert_eq!(
                chain.notes.len(),
                case.notes,
                "{}: {:?}",
                case.name,
                chain.notes
            );
        }
    }

    #[test]
    fn the_rule_that_chose_the_first_connector_is_named() {
        let inventory = inventory();
        let intent = web();
        let (pack, mine) = (strings(&["searxng"]), strings(&["tavily"]));
        let chosen = |explicit, record, person: Option<&[String]>| {
            resolve(
                &ChainRequest {
                    intent: Some(&intent),
                    explicit,
                    record_override: record,
                    person,
                    pack_preferred: &pack,
                    ..Default::default()
                },
                &inventory,
            )
            .chosen_by
        };
        assert_eq!(chosen(None, None, None), Some(ChainRule::Pack));
        assert_eq!(chosen(None, None, Some(&mine)), Some(ChainRule::Person));
        assert_eq!(
            chosen(None, Some("serpapi"), Some(&mine)),
            Some(ChainRule::Record)
        );
        assert_eq!(
            chosen(Some("serpapi"), None, Some(&mine)),
            Some(ChainRule::Fire)
        );
        // A record's start that cannot fire leaves the choice to the order.
        assert_eq!(
            chosen(None, Some("off"), Some(&mine)),
            Some(ChainRule::Person)
        );
        let found = strings(&["searxng"]);
        let nothing = resolve(
            &ChainRequest {
                intent: Some(&intent),
                pack_preferred: &pack,
                already_found: &found,
                ..Default::default()
            },
            &inventory,
        );
        assert_eq!(nothing.chosen_by, None);
    }

    #[test]
    fn skip_reasons_name_the_cause() {
        let inventory = inventory();
        let intent = web();
        let pack = strings(&["brave", "off", "ghost"]);
        let chain = resolve(
            &ChainRequest {
                intent: Some(&intent),
                pack_preferred: &pack,
                ..Default::default()
            },
            &inventory,
        );
        let reasons: Vec<&str> = chain.skipped.iter().map(|s| s.reason.as_str()).collect();
        assert_eq!(
            reasons,
            ["needs BRAVE_API_KEY", "disabled: by ana", "not registered"]
        );
    }

    #[test]
    fn background_work_with_nothing_else_waits_for_a_rate_limit_that_lifts_soon() {
        let mut inventory = inventory();
        let limited = |until| ConnectorStatus::RateLimited {
            until,
            reason: "429".into(),
        };
        inventory.push(candidate("soon", CostTier::Free, limited(4_000)));
        inventory.push(candidate("late", CostTier::Free, limited(9_000)));
        let intent = web();
        let pack = strings(&["late", "soon", "off"]);
        let chain_of = |waits_out_until| {
            resolve(
                &ChainRequest {
                    intent: Some(&intent),
                    pack_preferred: &pack,
                    waits_out_until,
                    ..Default::default()
                },
                &inventory,
            )
        };
        assert!(
            chain_of(None).to_try.is_empty(),
            "a person's click skips them"
        );
        let background = chain_of(Some(5_000));
        assert_eq!(background.to_try, ["soon"]);
        let skipped: Vec<&str> = background
            .skipped
            .iter()
            .map(|s| s.connector_id.as_str())
            .collect();
        assert_eq!(skipped, ["late", "off"]);
        assert_eq!(chain_of(Some(9_000)).to_try, ["late", "soon"]);
        let pack = strings(&["soon", "searxng"]);
        let chain = resolve(
            &ChainRequest {
                intent: Some(&intent),
                pack_preferred: &pack,
                waits_out_until: Some(9_000),
                ..Default::default()
            },
            &inventory,
        );
        assert_eq!(chain.to_try, ["searxng"], "what can fire now goes first");
    }

    fn any_status() -> impl Strategy<Value = ConnectorStatus> {
        prop_oneof![
            4 => Just(ConnectorStatus::Available),
            1 => Just(ConnectorStatus::Disabled { reason: "x".into() }),
            1 => Just(ConnectorStatus::NeedsEnv { vars: vec!["K".into()] }),
            1 => Just(ConnectorStatus::AuthFailed { at: 0, reason: "401".into() }),
        ]
    }

    fn any_inventory() -> impl Strategy<Value = Vec<Candidate>> {
        prop::collection::vec((0..8u8, 0..3u8, any::<bool>(), any_status()), 0..8).prop_map(
            |rows| {
                let mut out: Vec<Candidate> = Vec::new();
                for (n, tier, serves, status) in rows {
                    let id = format!("c{n}");
                    if out.iter().any(|c| c.id == id) {
                        continue;
                    }
                    out.push(Candidate {
                        id,
                        serves: if serves {
                            vec![web()]
                        } else {
                            vec![B::SearchNews.into()]
                        },
                        cost_tier: [CostTier::Free, CostTier::FreeTier, CostTier::Paid]
                            [tier as usize],
                        status,
                    });
                }
                out
            },
        )
    }

    fn any_ids() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec((0..10u8).prop_map(|n| format!("c{n}")), 0..6)
    }

    proptest! {
        #[test]
        fn chains_are_sound(
            inventory in any_inventory(),
            explicit in prop::option::of((0..10u8).prop_map(|n| format!("c{n}"))),
            record in prop::option::of((0..10u8).prop_map(|n| format!("c{n}"))),
            bundle in prop::option::of(any_ids()),
            person in prop::option::of(any_ids()),
            pack in any_ids(),
            found in any_ids(),
        ) {
            let intent = web();
            let chain = resolve(&ChainRequest {
                intent: Some(&intent),
                explicit: explicit.as_deref(),
                record_override: record.as_deref(),
                person: person.as_deref(),
                bundle_override: bundle.as_deref(),
                pack_preferred: &pack,
                already_found: &found,
                waits_out_until: None,
            }, &inventory);
            let fit = |id: &str| inventory.iter().any(|c| c.id == id && c.status.is_available() && c.serves.contains(&intent));
            // Everything tried can fire, once.
            for (i, id) in chain.to_try.iter().enumerate() {
                prop_assert!(fit(id), "{id} is not fit");
                prop_assert!(!chain.to_try[..i].contains(id), "{id} twice");
            }
            // An explicit connector that can fire is fired alone.
            if let Some(e) = explicit.as_deref().filter(|e| fit(e)) {
                prop_assert_eq!(&chain.to_try, &vec![e.to_owned()]);
            } else {
                // Otherwise nothing that already found results is tried again.
                for id in &chain.to_try {
                    prop_assert!(!found.contains(id));
                }
                // Every connector named by the winning level is tried or skipped with a reason.
                let base: Vec<String> = match (person.as_ref().filter(|p| !p.is_empty()), &bundle, pack.is_empty()) {
                    (Some(p), _, _) => p.clone(),
                    (None, Some(b), _) => b.clone(),
                    (None, None, false) => pack.clone(),
                    (None, None, true) => inventory.iter().filter(|c| c.serves.contains(&intent)).map(|c| c.id.clone()).collect(),
                };
                for id in base {
                    prop_assert!(
                        chain.to_try.contains(&id) || chain.skipped.iter().any(|s| s.connector_id == id),
                        "{id} vanished"
                    );
                }
                // A fit record override goes first, unless it already found results.
                if let Some(r) = record.as_deref().filter(|r| fit(r) && !found.iter().any(|f| f == r)) {
                    prop_assert_eq!(chain.to_try.first().map(String::as_str), Some(r));
                }
            }
        }
    }
}
