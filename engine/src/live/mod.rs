//! Live: what everyone viewing a set sees change. `events` is the bus every
//! change is published on once (shared between processes through the store);
//! `presence` is who is viewing which set right now; `database` is whether
//! the database answers, as open streams hear it.

pub mod database;
pub mod events;
pub mod presence;
