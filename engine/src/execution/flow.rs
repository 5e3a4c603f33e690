//! Flow control: how many fires each connector may have in flight.
//!
//! Every connector has a window. With a rate hint the window follows Little's
//! law: the hint times the observed service time of a fire (the provider's
//! latency and the fire's own writes around the call, not its wait for the
//! throttle), with headroom, and two more waiting at the throttle so no slot
//! the hint allows goes unused. A 429 halves the window and answers grow it
//! back (AIMD, as TCP and Vector's adaptive concurrency do). A connector
//! without a hint gets a default window. One per-process ceiling bounds the
//! fan-out fires of every job.
//!
//! Jobs wait for the window in arrival order, each job loop with one fire
//! waiting at a time, so jobs share a connector evenly. A person's click
//! never waits here: it counts in the window but takes its place at once
//! (and the throttle lets it ahead of every fan-out fire, see `throttle`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::connectors::registry::ConnectorHandle;

/// Flow-control settings, with their defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowConfig {
    /// The most fan-out fires one process has in flight, over all jobs and
    /// connectors (`--max-inflight`).
    pub max_inflight: usize,
    /// The window of a connector that declares no rate hint.
    pub default_window: usize,
    /// How much more than Little's law a window allows, for service times
    /// that vary from one fire to the next.
    pub headroom: f64,
    /// The service time assumed before a connector's first answer.
    pub initial_latency: Duration,
}

impl Default for FlowConfig {
    fn default() -> Self {
        Self {
            max_inflight: 256,
            default_window: 16,
            headroom: 1.25,
            initial_latency: Duration::from_millis(100),
        }
    }
}

/// How often a waiting fire looks again at a window nothing was released from.
const RECHECK: Duration = Duration::from_millis(20);

/// Fires a window keeps waiting at the throttle beyond Little's law, so the
/// next slot the rate hint allows always finds one ready.
const AT_THE_THROTTLE: usize = 2;

/// How a call through a permit ended, for the window to learn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// The provider answered (found or not).
    Answered,
    /// The provider said 429: too many, too fast.
    RateLimited,
    /// Anything else (timeout, error, cancelled): says nothing about load.
    Other,
}

/// The window of one connector.
#[derive(Debug)]
struct Window {
    in_flight: usize,
    /// The AIMD bound: the process ceiling until a 429 halves it.
    aimd: f64,
    /// Smoothed service time of answered fires, in seconds.
    latency: Option<f64>,
    /// When each place held now was taken, by permit.
    holds: HashMap<u64, Instant>,
    rate: Option<f64>,
    /// Background fires waiting for a place, oldest first, by permit.
    waiting: VecDeque<(u64, oneshot::Sender<()>)>,
}

impl Window {
    fn new(ceiling: usize) -> Self {
        Self {
            in_flight: 0,
            aimd: ceiling as f64,
            latency: None,
            holds: HashMap::new(),
            rate: None,
            waiting: VecDeque::new(),
        }
    }

    /// The fires this window allows in flight now.
    fn limit(&self, config: &FlowConfig, now: Instant) -> usize {
        let target = match self.rate {
            Some(rate) => {
                // Before the first answer, the oldest place still held is
                // a lower bound of the service time.
                let latency = self.latency.unwrap_or_else(|| {
                    let oldest = self
                        .holds
                        .values()
                        .map(|t| now.duration_since(*t))
                        .max()
                        .unwrap_or_default();
                    oldest.max(config.initial_latency).as_secs_f64()
                });
                let little = (rate * latency * config.headroom).ceil();
                if little.is_finite() {
                    (little as usize).saturating_add(AT_THE_THROTTLE)
                } else {
                    config.max_inflight
                }
            }
            None => config.default_window,
        };
        target
            .min(self.aimd.floor() as usize)
            .min(config.max_inflight)
            .max(1)
    }
}

#[derive(Debug)]
struct State {
    windows: HashMap<String, Window>,
    next_permit: u64,
}

/// Flow control shared by every fire of the process. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Flow {
    state: Arc<Mutex<State>>,
    ceiling: Arc<Semaphore>,
    config: FlowConfig,
}

pub use crate::execution::throttle::Priority;

/// A place in one connector's window. Dropping it gives the place back.
#[derive(Debug)]
pub struct Permit {
    flow: Flow,
    connector: String,
    id: u64,
    priority: Priority,
    /// When the place was taken, and how long the fire then waited for the
    /// throttle: the rest is its service time.
    acquired: Instant,
    throttled: Duration,
    finished: bool,
}

impl Flow {
    pub fn new(config: FlowConfig) -> Self {
        let config = FlowConfig {
            max_inflight: config.max_inflight.max(1),
            default_window: config.default_window.max(1),
            headroom: if config.headroom.is_finite() && config.headroom >= 1.0 {
                config.headroom
            } else {
                1.0
            },
            ..config
        };
        Self {
            state: Arc::new(Mutex::new(State {
                windows: HashMap::new(),
                next_permit: 0,
            })),
            ceiling: Arc::new(Semaphore::new(config.max_inflight)),
            config,
        }
    }

    pub fn config(&self) -> FlowConfig {
        self.config
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Up to `most` (at least one) places under the process ceiling for a
    /// job's fires, waiting for the first; `None` once `cancel` fires.
    pub async fn ceiling(
        &self,
        most: usize,
        cancel: &CancellationToken,
    ) -> Option<OwnedSemaphorePermit> {
        let first = tokio::select! {
            p = self.ceiling.clone().acquire_owned() => p.ok()?,
            () = cancel.cancelled() => return None,
        };
        let mut places = first;
        let more = most.saturating_sub(1).min(self.ceiling.available_permits());
        if more > 0 {
            if let Ok(extra) = self.ceiling.clone().try_acquire_many_owned(more as u32) {
                places.merge(extra);
            }
        }
        Some(places)
    }

    /// A place in `handle`'s window. A person's fire takes it at once; a
    /// background fire waits its turn, or gets `None` when `cancel` fires
    /// first.
    pub async fn acquire(
        &self,
        handle: &ConnectorHandle,
        priority: Priority,
        cancel: &CancellationToken,
    ) -> Option<Permit> {
        let connector = handle.registration.profile.id.as_str();
        let rate = handle.registration.profile.rate_hints.per_second;
        let waiting = {
            let mut state = self.state();
            let id = state.next_permit;
            state.next_permit += 1;
            let config = self.config;
            let window = state
                .windows
                .entry(connector.to_owned())
                .or_insert_with(|| Window::new(config.max_inflight));
            window.rate = rate;
            if priority == Priority::Person {
                window.in_flight += 1;
                window.holds.insert(id, Instant::now());
                return Some(self.permit(connector, id, priority));
            }
            // In line behind whoever waits already; a free place is handed
            // over at once.
            let (tx, rx) = oneshot::channel();
            window.waiting.push_back((id, tx));
            Flow::wake(&config, window);
            (rx, id)
        };
        let (mut rx, id) = waiting;
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    // A place handed over just as the cancel came is given back.
                    rx.close();
                    if rx.try_recv().is_ok() {
                        drop(self.permit(connector, id, priority));
                    }
                    return None;
                }
                got = &mut rx => return got.ok().map(|()| self.permit(connector, id, priority)),
                // Before a connector's first answer its window grows with
                // the age of the places held, with nothing released to say so.
                () = tokio::time::sleep(RECHECK) => {
                    let config = self.config;
                    if let Some(window) = self.state().windows.get_mut(connector) {
                        Flow::wake(&config, window);
                    }
                }
            }
        }
    }

    fn permit(&self, connector: &str, id: u64, priority: Priority) -> Permit {
        Permit {
            flow: self.clone(),
            connector: connector.to_owned(),
            id,
            priority,
            acquired: Instant::now(),
            throttled: Duration::ZERO,
            finished: false,
        }
    }

    /// Hands free places to waiting fires, oldest first.
    fn wake(config: &FlowConfig, window: &mut Window) {
        let now = Instant::now();
        while window.in_flight < window.limit(config, now) {
            let Some((id, next)) = window.waiting.pop_front() else {
                return;
            };
            // A waiter that gave up (cancelled) leaves its turn to the next.
            if next.send(()).is_ok() {
                window.in_flight += 1;
                window.holds.insert(id, now);
            }
        }
    }

    /// The window of a connector now: `(in flight, allowed)`.
    pub fn window(&self, connector: &str) -> Option<(usize, usize)> {
        let state = self.state();
        let w = state.windows.get(connector)?;
        Some((w.in_flight, w.limit(&self.config, Instant::now())))
    }

    /// Fires waiting for a connector's window now.
    pub fn waiting(&self, connector: &str) -> usize {
        self.state().windows.get(connector).map_or(0, |w| {
            w.waiting.iter().filter(|(_, t)| !t.is_closed()).count()
        })
    }
}

impl Permit {
    /// The connector whose window this place is in.
    pub fn connector(&self) -> &str {
        &self.connector
    }

    /// Waits until the connector's rate hint allows one more call (a
    /// person's ahead of background ones, people's by turns of
    /// `workspace`). The wait does not count in the fire's service time.
    pub async fn throttle(&mut self, handle: &ConnectorHandle, workspace: Option<i64>) {
        let started = Instant::now();
        handle.throttle(self.priority, workspace).await;
        self.throttled += started.elapsed();
    }

    /// Waits for `wait` (a slot of a rate shared with other processes); the
    /// wait does not count in the fire's service time either.
    pub async fn hold(&mut self, wait: impl std::future::Future<Output = ()>) {
        let started = Instant::now();
        wait.await;
        self.throttled += started.elapsed();
    }

    /// Gives the place back with what the call taught about the provider.
    pub fn finish(mut self, signal: Signal) {
        self.release(signal);
    }

    fn release(&mut self, signal: Signal) {
        if self.finished {
            return;
        }
        self.finished = true;
        let config = self.flow.config;
        let mut state = self.flow.state();
        let Some(window) = state.windows.get_mut(&self.connector) else {
            return;
        };
        window.holds.remove(&self.id);
        let limit = window.limit(&config, Instant::now());
        match signal {
            Signal::Answered => {
                let sample = self
                    .acquired
                    .elapsed()
                    .saturating_sub(self.throttled)
                    .as_secs_f64();
                window.latency = Some(match window.latency {
                    Some(avg) => avg * 0.8 + sample * 0.2,
                    None => sample,
                });
                // Additive increase: one more place per window of answers.
                window.aimd =
                    (window.aimd + 1.0 / window.aimd.max(1.0)).min(config.max_inflight as f64);
            }
            Signal::RateLimited => {
                // Multiplicative decrease, from what was actually allowed.
                window.aimd = (window.aimd.min(limit as f64) / 2.0).max(1.0);
            }
            Signal::Other => {}
        }
        window.in_flight = window.in_flight.saturating_sub(1);
        Flow::wake(&config, window);
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.release(Signal::Other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connectors::scripted::{ScriptedConnector, Step};
    use crate::store::Store;
    use model::{BuiltinCapability as B, CostTier};

    async fn handle(rate: Option<f64>) -> ConnectorHandle {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        let registry =
            crate::connectors::registry::Registry::new(store, crate::live::events::EventBus::new());
        let mut reg = ScriptedConnector::registration("c", CostTier::Free, &[B::SearchWeb.into()]);
        reg.profile.rate_hints.per_second = rate;
        registry
            .register(reg, ScriptedConnector::new("c", [Step::Empty]))
            .unwrap();
        registry.by_id("c").unwrap()
    }

    fn window(rate: Option<f64>, latency: Option<f64>, aimd: f64) -> Window {
        Window {
            rate,
            latency,
            aimd,
            ..Window::new(256)
        }
    }

    #[test]
    fn a_window_follows_littles_law_with_headroom() {
        let config = FlowConfig::default();
        let now = Instant::now();
        // 200/s at 50 ms: 10 in flight, 12.5 with headroom, rounded up, and
        // two waiting at the throttle.
        assert_eq!(
            window(Some(200.0), Some(0.05), 256.0).limit(&config, now),
            15
        );
        // 20/s at 1.5 s: 30 in flight, 37.5 with headroom.
        assert_eq!(window(Some(20.0), Some(1.5), 256.0).limit(&config, now), 40);
        // No hint: the default window.
        assert_eq!(window(None, Some(1.5), 256.0).limit(&config, now), 16);
        // The ceiling and the AIMD bound cap it; it never reaches zero.
        assert_eq!(
            window(Some(1e6), Some(10.0), 256.0).limit(&config, now),
            256
        );
        assert_eq!(window(Some(200.0), Some(0.05), 3.0).limit(&config, now), 3);
        assert_eq!(window(Some(0.001), Some(0.001), 0.5).limit(&config, now), 1);
    }

    #[test]
    fn before_the_first_answer_the_oldest_place_held_bounds_the_service_time() {
        let config = FlowConfig::default();
        let now = Instant::now();
        let mut w = window(Some(20.0), None, 256.0);
        // Nothing out yet: the initial guess (100 ms): 2.5 -> 3, +2.
        assert_eq!(w.limit(&config, now), 5);
        w.holds.insert(1, now - Duration::from_secs(1));
        // A place held for a second: at least 20 x 1 s x 1.25 = 25, +2.
        assert_eq!(w.limit(&config, now), 27);
    }

    #[tokio::test]
    async fn a_429_halves_the_window_and_answers_grow_it_back() {
        let flow = Flow::new(FlowConfig::default());
        let h = handle(Some(100.0)).await;
        let never = CancellationToken::new();
        let mut p = flow
            .acquire(&h, Priority::Background, &never)
            .await
            .unwrap();
        p.throttle(&h, None).await;
        p.finish(Signal::Answered);
        let (_, before) = flow.window("c").unwrap();
        let p = flow
            .acquire(&h, Priority::Background, &never)
            .await
            .unwrap();
        p.finish(Signal::RateLimited);
        let (_, halved) = flow.window("c").unwrap();
        assert_eq!(halved, (before / 2).max(1), "from {before}");
        for _ in 0..200 {
            let p = flow
                .acquire(&h, Priority::Background, &never)
                .await
                .unwrap();
            p.finish(Signal::Answered);
        }
        let (_, grown) = flow.window("c").unwrap();
        assert!(grown > halved, "{halved} -> {grown}");
    }

    #[tokio::test]
    async fn background_fires_wait_in_order_and_people_never_wait() {
        let flow = Flow::new(FlowConfig {
            default_window: 2,
            ..FlowConfig::default()
        });
        let h = handle(None).await;
        let never = CancellationToken::new();
        let a = flow
            .acquire(&h, Priority::Background, &never)
            .await
            .unwrap();
        let b = flow
            .acquire(&h, Priority::Background, &never)
            .await
            .unwrap();
        assert_eq!(flow.window("c"), Some((2, 2)));

        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for n in 0..3 {
            let (mine, h, order, never) = (flow.clone(), h.clone(), order.clone(), never.clone());
            waiters.push(tokio::spawn(async move {
                let p = mine
                    .acquire(&h, Priority::Background, &never)
                    .await
                    .unwrap();
                order.lock().unwrap().push(n);
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(p);
            }));
            // Let each queue before the next.
            while flow.waiting("c") < n + 1 {
                tokio::task::yield_now().await;
            }
        }
        // A person takes a place although the window is full.
        let person = flow.acquire(&h, Priority::Person, &never).await.unwrap();
        assert_eq!(flow.window("c"), Some((3, 2)));
        drop(person);
        drop(a);
        drop(b);
        for w in waiters {
            w.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
        assert_eq!(flow.window("c"), Some((0, 2)));
    }

    #[tokio::test]
    async fn a_cancelled_waiter_leaves_and_gives_its_turn_away() {
        let flow = Flow::new(FlowConfig {
            default_window: 1,
            ..FlowConfig::default()
        });
        let h = handle(None).await;
        let never = CancellationToken::new();
        let held = flow
            .acquire(&h, Priority::Background, &never)
            .await
            .unwrap();
        let cancel = CancellationToken::new();
        let waiter = {
            let (flow, h, cancel) = (flow.clone(), h.clone(), cancel.clone());
            tokio::spawn(async move { flow.acquire(&h, Priority::Background, &cancel).await })
        };
        while flow.waiting("c") == 0 {
            tokio::task::yield_now().await;
        }
        cancel.cancel();
        assert!(waiter.await.unwrap().is_none());
        drop(held);
        // The place is free again for the next one.
        let next = flow.acquire(&h, Priority::Background, &never).await;
        assert!(next.is_some());
        assert_eq!(flow.window("c"), Some((1, 1)));
    }

    #[tokio::test]
    async fn the_ceiling_hands_out_what_is_free_and_stops_on_cancel() {
        let flow = Flow::new(FlowConfig {
            max_inflight: 4,
            ..FlowConfig::default()
        });
        let never = CancellationToken::new();
        let three = flow.ceiling(3, &never).await.unwrap();
        assert_eq!(three.num_permits(), 3);
        let rest = flow.ceiling(10, &never).await.unwrap();
        assert_eq!(rest.num_permits(), 1);
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert!(flow.ceiling(1, &cancel).await.is_none());
        drop(three);
        assert_eq!(flow.ceiling(10, &never).await.unwrap().num_permits(), 3);
    }
}
