//! Live: what everyone viewing a set sees change. `events` is the bus every
//! change is published on once (shared between processes through the store);
//! `presence` is who is viewing which set right now.

pub mod events;
pub mod presence;
