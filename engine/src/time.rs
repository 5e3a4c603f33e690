//! The clock: every stored time is Unix milliseconds, read from one
//! [`Clock`] per store so that a test can move it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The time the engine reads: the system's, plus how far a test moved it.
///
/// Every part of one engine shares its store's clock, so moving it moves
/// every reading at once (leases, budgets' months, daily caps, sessions,
/// schedules, presence). Outside tests it is the system clock.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    ahead_ms: Arc<AtomicI64>,
}

impl Clock {
    /// Milliseconds since the Unix epoch, now.
    pub fn now_ms(&self) -> i64 {
        system_now_ms().saturating_add(self.ahead_ms.load(Ordering::Relaxed))
    }

    /// How long until the next UTC day begins (when daily caps free again).
    pub fn until_next_utc_day(&self) -> std::time::Duration {
        let now = self.now_ms();
        let next = utc_day_start(now) + 86_400_000;
        std::time::Duration::from_millis(u64::try_from(next - now).unwrap_or(0))
    }

    /// Moves this clock, and every reading made through it, `by` ahead: as
    /// if that long went by. Time keeps running from there.
    #[cfg(any(test, feature = "test-support"))]
    pub fn advance(&self, by: std::time::Duration) {
        let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.ahead_ms.fetch_add(by, Ordering::Relaxed);
    }
}

/// The system clock in Unix milliseconds: only [`Clock`] reads it.
fn system_now_ms() -> i64 {
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
    utc_timestamp(ms)[..7].to_owned()
}

/// Where a UTC month (`YYYY-MM`) starts and the next begins, in Unix ms.
pub fn month_bounds(month: &str) -> Result<(i64, i64), String> {
    let bad = || format!("{month:?} is not a month: write YYYY-MM, e.g. 2026-12");
    let (year, number) = month.split_once('-').ok_or_else(bad)?;
    if year.len() != 4 || number.len() != 2 {
        return Err(bad());
    }
    let year: i32 = year.parse().map_err(|_| bad())?;
    let number: u8 = number.parse().map_err(|_| bad())?;
    let start = |year: i32, number: u8| -> Result<i64, String> {
        let month = time::Month::try_from(number).map_err(|_| bad())?;
        let day = time::Date::from_calendar_date(year, month, 1).map_err(|_| bad())?;
        Ok(day.midnight().assume_utc().unix_timestamp() * 1_000)
    };
    let next = if number == 12 {
        start(year + 1, 1)?
    } else {
        start(year, number + 1)?
    };
    Ok((start(year, number)?, next))
}

/// The UTC day holding `ms`, as `YYYY-MM-DD`.
pub fn utc_date(ms: i64) -> String {
    utc_timestamp(ms)[..10].to_owned()
}

/// `ms` as an RFC 3339 UTC time to the second, `YYYY-MM-DDTHH:MM:SSZ`,
/// for files people open in a spreadsheet.
pub fn utc_timestamp(ms: i64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1_000))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        at.year().clamp(0, 9999),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
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
    fn a_month_runs_from_its_first_midnight_to_the_next_month_s() {
        assert_eq!(
            month_bounds("2024-02"),
            Ok((1_706_745_600_000, 1_709_251_200_000))
        );
        assert_eq!(month_bounds("2024-12").unwrap().1, 1_735_689_600_000);
        assert_eq!(utc_date(1_709_251_199_999), "2024-02-29");
        assert_eq!(utc_timestamp(1_709_251_199_999), "2024-02-29T23:59:59Z");
        for bad in ["2024-13", "2024-2", "24-02", "december", ""] {
            assert!(month_bounds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_moved_clock_moves_every_reading_through_it_and_keeps_running() {
        let clock = Clock::default();
        let shared = clock.clone();
        let before = clock.now_ms();
        clock.advance(std::time::Duration::from_secs(3_600));
        let after = shared.now_ms();
        assert!(after >= before + 3_600_000, "{before} then {after}");
        assert!(after < before + 3_660_000, "{before} then {after}");
        assert!(Clock::default().now_ms() < after, "other clocks stay");
        assert!(shared.until_next_utc_day() <= std::time::Duration::from_secs(86_400));
    }

    #[test]
    fn days_start_at_utc_midnight() {
        assert_eq!(utc_day_start(0), 0);
        assert_eq!(utc_day_start(86_399_999), 0);
        assert_eq!(utc_day_start(86_400_000), 86_400_000);
        assert_eq!(utc_day_start(-1), -86_400_000);
    }
}
