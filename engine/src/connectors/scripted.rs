//! A connector whose answers are scripted, for tests and benchmarks: it never
//! leaves the process. Each call takes the next step of its script (the last
//! step repeats).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use model::{Capability, ConnectorProfile, CostTier, RateHints};

use crate::connectors::registry::Registration;
use crate::connectors::seam::{Connector, ConnectorResult, FireError, FireOpts, Found};

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Step {
    /// `n` results with URLs under `https://<id>.test/<query>/<i>`.
    Found(usize),
    /// These exact results.
    Results(Vec<ConnectorResult>),
    Empty,
    Fail(FireError),
    /// Waits, then takes the inner step.
    Delay(Duration, Box<Step>),
}

/// A connector that plays a script.
#[derive(Debug)]
pub struct ScriptedConnector {
    id: String,
    script: Mutex<VecDeque<Step>>,
    calls: AtomicUsize,
    queries: Mutex<Vec<String>>,
}

impl ScriptedConnector {
    pub fn new(id: &str, script: impl IntoIterator<Item = Step>) -> Arc<Self> {
        Arc::new(Self {
            id: id.to_owned(),
            script: Mutex::new(script.into_iter().collect()),
            calls: AtomicUsize::new(0),
            queries: Mutex::default(),
        })
    }

    /// How many times it was called.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The queries it was called with, in order.
    pub fn queries(&self) -> Vec<String> {
        self.queries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A registration for it serving `capabilities`.
    pub fn registration(id: &str, tier: CostTier, capabilities: &[Capability]) -> Registration {
        Registration {
            profile: ConnectorProfile {
                id: id.to_owned(),
                display_name: format!("Scripted {id}"),
                short_label: id.chars().take(8).collect(),
                capabilities: capabilities.to_vec(),
                cost_tier: tier,
                requires_env: Vec::new(),
                rate_hints: RateHints::default(),
                cost: None,
            },
            suspends_on_errors: true,
        }
    }

    fn next_step(&self) -> Step {
        let mut script = self.script.lock().unwrap_or_else(|e| e.into_inner());
        if script.len() > 1 {
            script.pop_front().unwrap_or(Step::Empty)
        } else {
            script.front().cloned().unwrap_or(Step::Empty)
        }
    }
}

#[async_trait]
impl Connector for ScriptedConnector {
    async fn fire(
        &self,
        _intent: &Capability,
        query: &str,
        _opts: &FireOpts,
    ) -> Result<Found, FireError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.queries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(query.to_owned());
        let mut step = self.next_step();
        loop {
            match step {
                Step::Delay(wait, inner) => {
                    tokio::time::sleep(wait).await;
                    step = *inner;
                }
                Step::Found(n) => {
                    let slug: String = query
                        .chars()
                        .map(|c| {
                            if c.is_ascii_alphanumeric() {
                                c.to_ascii_lowercase()
                            } else {
                                '-'
                            }
                        })
                        .collect();
                    return Ok((0..n)
                        .map(|i| ConnectorResult {
                            url: format!("https://{}.test/{slug}/{i}", self.id),
                            title: format!("{query} result {i}"),
                            snippet: format!("found by {}", self.id),
                            raw: serde_json::Value::Null,
                        })
                        .collect());
                }
                Step::Results(results) => return Ok(results.into()),
                Step::Empty => return Ok(Found::default()),
                Step::Fail(e) => return Err(e),
            }
        }
    }
}
