//! Reading connector settings and keys from the environment at fire time, so
//! a rotated key is used at once. Values never leave the adapter that asked.

use crate::connector::FireError;

/// A required variable, or an error naming it (never its value).
pub fn required(name: &str) -> Result<String, FireError> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
        _ => Err(FireError::AuthFailed {
            reason: format!("{name} is not set"),
        }),
    }
}

/// An optional variable.
pub fn optional(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// A key given at construction (tests), or the variable read now.
pub fn key(given: &Option<String>, name: &str) -> Result<String, FireError> {
    match given {
        Some(k) => Ok(k.clone()),
        None => required(name),
    }
}
