//! The wall clock in Unix milliseconds, in the browser and on the server.

#[cfg(feature = "hydrate")]
pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

#[cfg(not(feature = "hydrate"))]
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// "just now", "4 min ago", "2 h ago", "3 days ago".
pub fn ago(ms: i64) -> String {
    let secs = ((now_ms() - ms) / 1000).max(0);
    match secs {
        0..=59 => "just now".to_owned(),
        60..=3599 => format!("{} min ago", secs / 60),
        3600..=86_399 => format!("{} h ago", secs / 3600),
        _ => format!("{} days ago", secs / 86_400),
    }
}
