//! The clock: every stored time is Unix milliseconds.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A stored time as people read it in a terminal: an HTTP date in GMT.
pub fn format_utc(ms: i64) -> String {
    let at = UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    httpdate::fmt_http_date(at)
}

/// The start of the UTC day holding `ms`, in Unix milliseconds.
pub fn utc_day_start(ms: i64) -> i64 {
    const DAY: i64 = 86_400_000;
    ms.div_euclid(DAY) * DAY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_start_at_utc_midnight() {
        assert_eq!(utc_day_start(0), 0);
        assert_eq!(utc_day_start(86_399_999), 0);
        assert_eq!(utc_day_start(86_400_000), 86_400_000);
        assert_eq!(utc_day_start(-1), -86_400_000);
    }
}
