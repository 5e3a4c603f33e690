//! Wire types shared by the server and the browser: everything here compiles to
//! WebAssembly and carries no server-only dependency.

pub mod health;
pub mod record_set;

pub use health::Health;
pub use record_set::RecordSetSummary;
