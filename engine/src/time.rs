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

/// The UTC month holding `ms`, as `YYYY-MM` (budgets count by it).
pub fn utc_month(ms: i64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1_000))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!("{:04}-{:02}", at.year(), u8::from(at.month()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_turn_at_utc_midnight() {
        assert_eq!(utc_month(0), "1970-01");
        // 2026-12-03T20:00:00Z, 2024-02-29T23:59:59.999Z, 2025-01-01T00:00Z.
        assert_eq!(utc_month(1_796_328_000_000), "2026-12");
        assert_eq!(utc_month(1_709_251_199_999), "2024-02");
        assert_eq!(utc_month(1_709_251_200_000), "2024-03");
        assert_eq!(utc_month(1_735_689_600_000), "2025-01");
        assert_eq!(utc_month(1_735_689_599_999), "2024-12");
    }

    #[test]
    fn days_start_at_utc_midnight() {
        assert_eq!(utc_day_start(0), 0);
        assert_eq!(utc_day_start(86_399_999), 0);
        assert_eq!(utc_day_start(86_400_000), 86_400_000);
        assert_eq!(utc_day_start(-1), -86_400_000);
    }
}
