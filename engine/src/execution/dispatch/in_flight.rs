//! The fires running in this process, with their cancel tokens: the
//! heartbeat renews their leases and a cancel reaches them here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::{lock, Dispatcher};

/// The fires running in this process, by id, with their cancel tokens.
pub(super) type InFlightTable = Arc<Mutex<HashMap<i64, CancellationToken>>>;

/// A fire's place in the in-flight table (whose leases the heartbeat
/// renews), taken when its row is written and left however its future ends.
#[derive(Default)]
pub(super) struct InFlight {
    entry: Option<(InFlightTable, i64)>,
}

impl InFlight {
    pub(super) fn enter(&mut self, table: &InFlightTable, fire_id: i64, cancel: CancellationToken) {
        lock(table).insert(fire_id, cancel);
        self.entry = Some((table.clone(), fire_id));
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some((table, fire_id)) = self.entry.take() {
            lock(&table).remove(&fire_id);
        }
    }
}

impl Dispatcher {
    /// Cancels a fire in flight in this process. `false` when it is not.
    pub fn cancel(&self, fire_id: i64) -> bool {
        match lock(&self.in_flight).get(&fire_id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// The fires running in this process now (their leases are renewed).
    pub fn in_flight(&self) -> Vec<i64> {
        lock(&self.in_flight).keys().copied().collect()
    }
}
