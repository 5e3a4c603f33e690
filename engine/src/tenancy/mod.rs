//! Tenancy: the rules behind who may do what, and what each workspace keeps
//! to itself. `principal`: the caller every operation takes; `accounts`:
//! email and workspace names, the errors of account changes;
//! `credentials`: password hashing, tokens and links, sessions; `secrets`:
//! the sealing of each workspace's API keys; `sign_in_limits`: how password
//! guessing is slowed for the whole deployment; `attention`: what a
//! workspace's admins must act on. The operations callers use are in
//! `ops` (`ops::accounts`, `ops::credentials`, `ops::secrets`,
//! `ops::sign_in_limits`, `ops::attention`).

pub mod accounts;
pub mod attention;
pub mod credentials;
pub mod principal;
pub mod secrets;
pub mod sign_in_limits;

pub use principal::Principal;
