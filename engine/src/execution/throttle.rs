//! The rate throttle of one connector: calls spaced by its per-second hint,
//! shared by every caller in the process, with a person's call ahead of any
//! background one (a job's). A fast hint carries 20 ms of credit (4 calls at
//! 200 a second, none below 100 a second): a waiter that the timer wakes a
//! millisecond late does not lose its slot for good, so a fan-out reaches
//! the hint, and no second ever holds more than the hint plus that credit. Background calls pass one at a time and step
//! aside while a person waits, so a click waits for at most one fan-out
//! call, however long the fan-out's queue. People's calls take turns by
//! workspace: a workspace with a backlog (hundreds of async calls) passes
//! one call, then every other workspace waiting passes one. A workspace
//! that starts waiting goes ahead of those that have had a turn since they
//! began, and whose turn it is is decided when a slot comes free, not when
//! a call starts waiting for it: another workspace's click takes the next
//! free slot, not the one after the backlog's call already waiting. A
//! backlog gets what the others leave.

use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::Notify;

/// How much of a fast hint's time may be caught up at once.
const CREDIT: Duration = Duration::from_millis(20);

/// How much before its slot a background call without credit wakes: about
/// what the timer may be late by.
const EARLY: Duration = Duration::from_millis(1);

/// Whose call waits: a person's goes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    Person,
    Background,
}

/// Spaces a connector's calls by its rate hint.
#[derive(Debug)]
pub struct Throttle {
    /// Whether the hint carries credit (see the module's note); without it a
    /// background call wakes [`EARLY`] before its slot and yields until it,
    /// since a call the timer wakes late would lose that time for good.
    credit: bool,
    limiter: DefaultDirectRateLimiter,
    clock: DefaultClock,
    /// Background calls take turns through this.
    turn: tokio::sync::Mutex<()>,
    /// People waiting now; background calls wait while there are any.
    people: AtomicUsize,
    people_gone: Notify,
    /// Whose person's call goes next.
    turns: Mutex<Turns>,
    turn_passed: Notify,
}

/// Whose turn it is among people's waiting calls: workspaces in turn, each
/// workspace's calls in arrival order. `None` is a caller of no workspace.
#[derive(Debug, Default)]
struct Turns {
    /// Workspaces with calls waiting, the next to pass first.
    order: VecDeque<Queued>,
    /// Each workspace's waiting calls, by ticket, oldest first.
    waiting: HashMap<Option<i64>, VecDeque<u64>>,
    next_ticket: u64,
}

/// A workspace in line.
#[derive(Debug)]
struct Queued {
    workspace: Option<i64>,
    /// Whether it has passed a call since it began waiting.
    had_a_turn: bool,
}

impl Turns {
    /// Puts a call of `workspace` in line: its ticket, and whether it took
    /// the front from a call that was next until now.
    fn join(&mut self, workspace: Option<i64>) -> (u64, bool) {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let queue = self.waiting.entry(workspace).or_default();
        let mut took_the_front = false;
        if queue.is_empty() {
            // Ahead of those that have had a turn, behind those that have not.
            let at = self
                .order
                .iter()
                .position(|q| q.had_a_turn)
                .unwrap_or(self.order.len());
            took_the_front = at == 0 && !self.order.is_empty();
            self.order.insert(
                at,
                Queued {
                    workspace,
                    had_a_turn: false,
                },
            );
        }
        queue.push_back(ticket);
        (ticket, took_the_front)
    }

    fn is_next(&self, ticket: u64) -> bool {
        self.order
            .front()
            .and_then(|q| self.waiting.get(&q.workspace))
            .and_then(VecDeque::front)
            == Some(&ticket)
    }

    /// Takes `ticket` out, whether it `passed` or gave up; a workspace
    /// whose call was next goes to the back of the line.
    fn leave(&mut self, workspace: Option<i64>, ticket: u64, passed: bool) {
        let Some(queue) = self.waiting.get_mut(&workspace) else {
            return;
        };
        let was_next = queue.front() == Some(&ticket)
            && self.order.front().map(|q| q.workspace) == Some(workspace);
        queue.retain(|t| *t != ticket);
        if queue.is_empty() {
            self.waiting.remove(&workspace);
            self.order.retain(|q| q.workspace != workspace);
        } else if was_next {
            if let Some(front) = self.order.front_mut() {
                front.had_a_turn |= passed;
            }
            self.order.rotate_left(1);
        }
    }
}

/// A person's call in line, taken out however its wait ends.
struct InLine<'a> {
    throttle: &'a Throttle,
    workspace: Option<i64>,
    ticket: u64,
    passed: bool,
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        self.throttle
            .turns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .leave(self.workspace, self.ticket, self.passed);
        self.throttle.turn_passed.notify_waiters();
    }
}

/// A person waiting, counted until the wait ends however it ends.
struct Waiting<'a>(&'a Throttle);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.0.people.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.people_gone.notify_waiters();
        }
    }
}

impl Throttle {
    /// A throttle allowing `per_second` calls a second, evenly spaced
    /// (`None` for a hint that is not a positive number, or whose spacing
    /// no timer can hold: checked profiles stay far inside either end, and
    /// a stored row that does not must never panic the server).
    pub fn new(per_second: f64) -> Option<Self> {
        if !(per_second.is_finite() && per_second > 0.0) {
            return None;
        }
        let credit =
            NonZeroU32::new((per_second * CREDIT.as_secs_f64()) as u32).unwrap_or(NonZeroU32::MIN);
        let spacing = Duration::try_from_secs_f64(1.0 / per_second).ok()?;
        let quota = Quota::with_period(spacing)?.allow_burst(credit);
        Some(Self {
            credit: credit.get() > 1,
            limiter: RateLimiter::direct(quota),
            clock: DefaultClock::default(),
            turn: tokio::sync::Mutex::new(()),
            people: AtomicUsize::new(0),
            people_gone: Notify::new(),
            turns: Mutex::new(Turns::default()),
            turn_passed: Notify::new(),
        })
    }

    /// Waits until one more call is allowed; a person's call of
    /// `workspace` waits for its workspace's turn (see the module's note).
    pub async fn wait(&self, priority: Priority, workspace: Option<i64>) {
        match priority {
            Priority::Person => {
                self.people.fetch_add(1, Ordering::SeqCst);
                let _waiting = Waiting(self);
                let (ticket, took_the_front) = self.turns().join(workspace);
                let mut in_line = InLine {
                    throttle: self,
                    workspace,
                    ticket,
                    passed: false,
                };
                if took_the_front {
                    // The call next until now is not: it goes back to waiting.
                    self.turn_passed.notify_waiters();
                }
                loop {
                    let changed = self.turn_passed.notified();
                    tokio::pin!(changed);
                    changed.as_mut().enable();
                    if !self.turns().is_next(in_line.ticket) {
                        changed.await;
                        continue;
                    }
                    // Next now; the slot is taken only when it is free, and
                    // only if this call is still next then.
                    match self.limiter.check() {
                        Ok(()) => break,
                        Err(not_until) => {
                            let wait = not_until.wait_time_from(self.clock.now());
                            tokio::select! {
                                () = tokio::time::sleep(wait) => {}
                                () = changed => {}
                            }
                        }
                    }
                }
                in_line.passed = true;
                drop(in_line);
            }
            Priority::Background => {
                let _turn = self.turn.lock().await;
                loop {
                    self.people_leave().await;
                    match self.limiter.check() {
                        Ok(()) => return,
                        Err(not_until) => {
                            let wait = not_until.wait_time_from(self.clock.now());
                            if self.credit || wait > EARLY {
                                tokio::time::sleep(wait.saturating_sub(self.early())).await;
                            } else {
                                tokio::task::yield_now().await;
                            }
                        }
                    }
                }
            }
        }
    }

    fn turns(&self) -> std::sync::MutexGuard<'_, Turns> {
        self.turns.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn early(&self) -> Duration {
        if self.credit {
            Duration::ZERO
        } else {
            EARLY
        }
    }

    /// Returns once no person waits.
    async fn people_leave(&self) {
        loop {
            let gone = self.people_gone.notified();
            tokio::pin!(gone);
            gone.as_mut().enable();
            if self.people.load(Ordering::SeqCst) == 0 {
                return;
            }
            gone.await;
        }
    }

    /// Takes a call's place now if one is free (tests).
    pub fn try_now(&self) -> bool {
        self.limiter.check().is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_hint_that_is_not_a_positive_number_throttles_nothing() {
        assert!(Throttle::new(0.0).is_none());
        assert!(Throttle::new(-1.0).is_none());
        assert!(Throttle::new(f64::NAN).is_none());
        // A spacing of 10^30 seconds, or of nothing at all: no panic.
        assert!(Throttle::new(1e-30).is_none());
        assert!(Throttle::new(f64::MIN_POSITIVE).is_none());
        assert!(Throttle::new(1e300).is_none());
        let t = Throttle::new(2.0).unwrap();
        assert!(t.try_now());
        assert!(!t.try_now(), "spaced half a second apart, no burst");
    }

    #[test]
    fn a_fast_hint_carries_twenty_milliseconds_of_credit() {
        let fast = Throttle::new(200.0).unwrap();
        for n in 0..4 {
            assert!(fast.try_now(), "call {n} of the credit");
        }
        assert!(!fast.try_now(), "then one every 5 ms");
        let slow = Throttle::new(99.0).unwrap();
        assert!(slow.try_now());
        assert!(!slow.try_now(), "below 100 a second, no credit");
    }

    #[tokio::test]
    async fn a_person_goes_ahead_of_every_waiting_background_call() {
        let throttle = Arc::new(Throttle::new(20.0).unwrap());
        assert!(throttle.try_now());
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiting = Vec::new();
        for n in 0..5 {
            let (t, order) = (throttle.clone(), order.clone());
            waiting.push(tokio::spawn(async move {
                t.wait(Priority::Background, None).await;
                order.lock().unwrap().push(format!("job {n}"));
            }));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        let (t, o) = (throttle.clone(), order.clone());
        let person = tokio::spawn(async move {
            t.wait(Priority::Person, None).await;
            o.lock().unwrap().push("person".to_owned());
        });
        person.await.unwrap();
        for w in waiting {
            w.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        let at = order.iter().position(|o| o == "person").unwrap();
        assert!(
            at <= 1,
            "at most the call already passing goes first: {order:?}"
        );
        assert_eq!(order.len(), 6);
    }

    #[tokio::test]
    async fn a_person_who_stops_waiting_does_not_hold_the_queue() {
        let throttle = Arc::new(Throttle::new(5.0).unwrap());
        assert!(throttle.try_now());
        let t = throttle.clone();
        let gave_up = tokio::spawn(async move { t.wait(Priority::Person, None).await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        gave_up.abort();
        let _ = gave_up.await;
        tokio::time::timeout(
            Duration::from_secs(2),
            throttle.wait(Priority::Background, None),
        )
        .await
        .expect("the background call passes once the person is gone");
    }

    #[tokio::test]
    async fn a_workspace_with_a_backlog_takes_turns_with_everyone_else() {
        let throttle = Arc::new(Throttle::new(50.0).unwrap());
        assert!(throttle.try_now());
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiting = Vec::new();
        let call = |workspace: i64, n: usize| {
            let (t, order) = (throttle.clone(), order.clone());
            tokio::spawn(async move {
                t.wait(Priority::Person, Some(workspace)).await;
                order.lock().unwrap().push((workspace, n));
            })
        };
        // Workspace 1 floods; then workspaces 2 and 3 ask once each.
        for n in 0..30 {
            waiting.push(call(1, n));
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
        waiting.push(call(2, 0));
        waiting.push(call(3, 0));
        for w in waiting {
            w.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        let at = |ws: i64| order.iter().position(|(w, _)| *w == ws).unwrap();
        let passed_before = order.iter().take_while(|(w, _)| *w == 1).count();
        // What passed before they asked (about 30 ms at 50 a second), then
        // at most one more of the flood each.
        assert!(at(2) <= passed_before + 2, "{order:?}");
        assert!(at(3) <= passed_before + 3, "{order:?}");
        assert!(passed_before < 10, "{order:?}");
        // The flood itself keeps its own order.
        let flood: Vec<usize> = order
            .iter()
            .filter(|(w, _)| *w == 1)
            .map(|(_, n)| *n)
            .collect();
        assert_eq!(flood, (0..30).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn another_workspaces_call_takes_the_next_free_slot_not_the_one_after_the_backlog() {
        // Ten a second: a slot every 100 ms, far apart from any timer's error.
        let throttle = Arc::new(Throttle::new(10.0).unwrap());
        assert!(throttle.try_now());
        let order = Arc::new(Mutex::new(Vec::new()));
        let call = |workspace: i64, n: usize| {
            let (t, order) = (throttle.clone(), order.clone());
            tokio::spawn(async move {
                t.wait(Priority::Person, Some(workspace)).await;
                order.lock().unwrap().push((workspace, n));
            })
        };
        let mut waiting: Vec<_> = (0..6).map(|n| call(1, n)).collect();
        // Just after one of the backlog passed, its next call is already
        // waiting for the slot after; workspace 2 asks then.
        while order.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let passed_before = order.lock().unwrap().len();
        waiting.push(call(2, 0));
        for w in waiting {
            w.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        let at = order.iter().position(|(w, _)| *w == 2).unwrap();
        assert_eq!(at, passed_before, "{order:?}");
    }
}
