//! The store's own upkeep in a serving process: a task done again and
//! again until the process stops (the SQLite log's checkpoints, the sets'
//! tallies folded).

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::StoreError;

/// Runs `turn` every `period` (the first at once) until `stop` is
/// cancelled. A turn that fails is logged as `failed` with its error and
/// tried again at the next; a turn that runs late delays the next.
pub(super) async fn every<F, T>(
    period: Duration,
    stop: &CancellationToken,
    failed: &str,
    mut turn: F,
) where
    F: FnMut() -> T,
    T: Future<Output = Result<(), StoreError>>,
{
    let mut every = tokio::time::interval(period);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            () = stop.cancelled() => return,
        }
        if let Err(e) = turn().await {
            tracing::warn!(error = %e, "{failed}");
        }
    }
}
