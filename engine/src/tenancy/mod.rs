//! Tenancy: the rules behind who may do what, and what each workspace keeps
//! to itself. `principal`: the caller every operation takes; `accounts`: email and workspace names, the errors of account
//! changes; `credentials`: password hashing, tokens and links, sessions;
//! `secrets`: the sealing of each workspace's API keys; `attention`: what
//! a workspace's admins must act on. The operations callers use are in
//! `ops` (`ops::accounts`, `ops::credentials`, `ops::secrets`,
//! `ops::attention`).

pub mod accounts;
pub mod attention;
pub mod credentials;
pub mod principal;
pub mod secrets;

pub use principal::Principal;
