//! The threads manifest mappings run on: a few of their own, so a costly
//! JSONPath waits for other mappings only, never takes the runtime's
//! blocking threads (password hashing, imports), and a mapping whose fire
//! stopped waiting before its turn came is dropped without running.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

type Work = Box<dyn FnOnce() + Send>;

/// Mappings that may wait for a thread; past it, a mapping is refused at
/// once rather than queued for longer than any fire waits.
const WAITING_AT_MOST: usize = 256;

/// A fixed set of threads taking work in arrival order.
pub(crate) struct Pool {
    work: SyncSender<Work>,
    threads: usize,
}

impl Pool {
    /// `threads` threads named `{name}-{i}`.
    pub(crate) fn new(name: &str, threads: usize) -> Self {
        let (work, queue) = sync_channel::<Work>(WAITING_AT_MOST);
        let queue = Arc::new(Mutex::new(queue));
        let started = (0..threads)
            .filter(|i| {
                let queue = queue.clone();
                std::thread::Builder::new()
                    .name(format!("{name}-{i}"))
                    .spawn(move || {
                        lower_priority();
                        serve(&queue)
                    })
                    .map_err(|e| tracing::error!(error = %e, "A {name} thread could not start."))
                    .is_ok()
            })
            .count();
        Self {
            work,
            threads: started,
        }
    }

    /// Runs `work` on one of the threads and answers what it returned. A
    /// caller that stops waiting (a timeout) before the work's turn comes
    /// takes it out of the line; work already running runs to its end.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, String> {
        if self.threads == 0 {
            return Err("no thread to run it on".to_owned());
        }
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Work = Box::new(move || {
            if !answer.is_closed() {
                let _ = answer.send(work());
            }
        });
        self.work
            .try_send(job)
            .map_err(|_| format!("{WAITING_AT_MOST} others are waiting for their turn"))?;
        answered
            .await
            .map_err(|_| "it stopped without an answer".to_owned())
    }
}

/// Lowers the calling thread's CPU priority (nice 10, on Linux): the
/// work here reads one workspace's answers, and the runtime's threads, which
/// answer everyone's requests, go first when both want a core.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority read and set this thread's own
        // scheduling priority; no memory is touched.
        let set =
            unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 10) };
        if set != 0 {
            tracing::debug!("A mapping thread keeps its priority: setpriority refused.");
        }
    }
}

fn serve(queue: &Mutex<Receiver<Work>>) {
    loop {
        let next = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        let Ok(work) = next else { return };
        if catch_unwind(AssertUnwindSafe(work)).is_err() {
            tracing::error!("A manifest mapping panicked; its fire ends with an error.");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn work_runs_on_the_pools_own_threads() {
        let pool = Pool::new("mapping-test", 2);
        let name = pool
            .run(|| std::thread::current().name().map(str::to_owned))
            .await
            .unwrap();
        assert!(name.unwrap().starts_with("mapping-test-"));
        let panicked = pool.run(|| -> u8 { panic!("a bad mapping") }).await;
        assert!(panicked.is_err(), "a panic ends that work only");
        assert_eq!(pool.run(|| 7).await, Ok(7), "the thread serves on");
    }

    #[tokio::test]
    async fn work_whose_caller_stopped_waiting_before_its_turn_never_runs() {
        let pool = Pool::new("mapping-test", 1);
        let busy = pool.run(|| std::thread::sleep(Duration::from_millis(300)));
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        let queued = pool.run(move || flag.store(true, Ordering::SeqCst));
        let (busy, gave_up) = tokio::join!(
            busy,
            tokio::time::timeout(Duration::from_millis(50), queued)
        );
        assert!(busy.is_ok());
        assert!(gave_up.is_err(), "the caller stopped waiting");
        // The thread is free again and the dropped work was skipped.
        assert_eq!(pool.run(|| 1).await, Ok(1));
        assert!(!ran.load(Ordering::SeqCst));
    }
}
