//! Connectors: everything that answers a fire. `seam` is the trait every
//! connector implements and what it returns; `registry` is the runtime set
//! of them (register, switch off, health); `lens` is how one workspace sees
//! that set (its admins' switches are operations: `ops::connectors`); `manifest` turns
//! declarative files into connectors; `builtin` holds the coded adapters and
//! shipped manifests. Shared plumbing: `http` (requests and their limits),
//! `guard` (where outbound requests may go), `receipts` (what an attempt
//! sent) and `env` (keys read from the environment).

pub mod builtin;
pub mod env;
pub mod guard;
pub mod health;
pub mod http;
pub mod lens;
pub mod manifest;
pub mod receipts;
pub mod registry;
#[cfg(any(test, feature = "test-support"))]
pub mod scripted;
pub mod seam;
