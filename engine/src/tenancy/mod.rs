//! Tenancy: who may do what, and what each workspace keeps to itself.
//! `accounts` adds people to workspaces and manages their roles and labels;
//! `credentials` checks passwords, issues tokens and set-password links;
//! `secrets` seals each workspace's API keys; `attention` lists what a
//! workspace's admins must act on.

pub mod accounts;
pub mod attention;
pub mod credentials;
pub mod secrets;
