//! Limits on work in flight per owner (a workspace, a person): a slot is
//! taken for as long as the work runs and given back when its guard goes,
//! however the work ends; and turns, for what an owner checks then writes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Slots in use, by owner. Cheap to clone; clones share the counts.
#[derive(Clone, Debug, Default)]
pub struct Slots(Arc<Mutex<HashMap<i64, usize>>>);

/// One slot of an owner, given back when dropped.
#[derive(Debug)]
pub struct Slot {
    slots: Slots,
    owner: i64,
}

impl Slots {
    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<i64, usize>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot of `owner`, unless it holds `most` already.
    pub fn take(&self, owner: i64, most: usize) -> Option<Slot> {
        let mut counts = self.counts();
        let held = counts.entry(owner).or_default();
        if *held >= most {
            return None;
        }
        *held += 1;
        Some(Slot {
            slots: self.clone(),
            owner,
        })
    }

    /// A slot of `owner`, or the refusal every door answers 429 with:
    /// `detail` names the limit, `retry_after` says when to try again.
    pub fn take_or_refuse(
        &self,
        owner: i64,
        most: usize,
        retry_after: std::time::Duration,
        detail: impl FnOnce() -> String,
    ) -> Result<Slot, super::OpError> {
        self.take(owner, most)
            .ok_or_else(|| super::OpError::Limited {
                detail: detail(),
                retry_after,
            })
    }

    /// How many slots `owner` holds now.
    pub fn held(&self, owner: i64) -> usize {
        self.counts().get(&owner).copied().unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.slots.counts();
        if let Some(held) = counts.get_mut(&self.owner) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                counts.remove(&self.owner);
            }
        }
    }
}

/// One turn at a time per owner: what one owner checks and then writes
/// (a count of running work, then the work) cannot be interleaved by two of
/// its own requests. Other owners never wait for it.
#[derive(Clone, Debug, Default)]
pub struct Turnstiles(Arc<Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>>);

impl Turnstiles {
    /// Waits for `owner`'s turn; it lasts as long as the guard.
    pub async fn turn(&self, owner: i64) -> tokio::sync::OwnedMutexGuard<()> {
        let gate = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(owner)
            .or_default()
            .clone();
        gate.lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_holds_at_most_its_slots_and_others_are_unaffected() {
        let slots = Slots::default();
        let a1 = slots.take(1, 2).unwrap();
        let _a2 = slots.take(1, 2).unwrap();
        assert!(slots.take(1, 2).is_none(), "the third of owner 1");
        let _b = slots.take(2, 2).expect("owner 2 is not slowed");
        drop(a1);
        assert_eq!(slots.held(1), 1);
        assert!(
            slots.take(1, 2).is_some(),
            "a slot given back is free again"
        );
    }
}
