//! Switchyard's server-only domain. Nothing here is linked into the browser bundle.

pub mod store;

use store::Store;

/// The handle to the whole domain that the server shares with every request:
/// cheap to clone, everything inside is shared.
#[derive(Clone, Debug)]
pub struct Engine {
    pub store: Store,
}

impl Engine {
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}
