//! A connector's last day at a glance, as small SVG charts drawn here (no
//! chart library): attempts per hour stacked by outcome, and the p50 and
//! p95 latency hour by hour.

use leptos::prelude::*;
use model::HourCount;

/// Bar width and chart height, in pixels.
const BAR: usize = 4;
const HEIGHT: i64 = 28;

/// The outcomes a bar stacks, bottom up: (CSS class, words, count).
fn stack(h: &HourCount) -> [(&'static str, &'static str, u32); 4] {
    [
        ("bar-found", "found", h.found),
        ("bar-empty", "nothing found", h.not_found()),
        ("bar-error", "errors", h.errors()),
        ("bar-limited", "rate-limited", h.rate_limited),
    ]
}

/// The rectangles of one hour's bar: `(class, y, height)`, bottom up, each
/// outcome as tall as its share of the busiest hour (`peak`).
pub fn bar_segments(h: &HourCount, peak: u32) -> Vec<(&'static str, i64, i64)> {
    let peak = i64::from(peak.max(1));
    let mut top = HEIGHT;
    let mut done = 0i64;
    stack(h)
        .into_iter()
        .filter(|(_, _, n)| *n > 0)
        .map(|(class, _, n)| {
            // Rounded from the running total, so the segments add up to the bar.
            done += i64::from(n);
            let y = HEIGHT - done * HEIGHT / peak;
            let segment = (class, y, top - y);
            top = y;
            segment
        })
        .collect()
}

/// A latency polyline's points ("x,y x,y ..."), one per hour that had
/// attempts, scaled to `ceiling` ms; hours without any leave a gap by
/// starting a new line.
pub fn latency_lines(
    hours: &[HourCount],
    pick: impl Fn(&HourCount) -> Option<i64>,
    ceiling: i64,
) -> Vec<String> {
    let ceiling = ceiling.max(1);
    let mut lines = Vec::new();
    let mut current: Vec<String> = Vec::new();
    for (i, h) in hours.iter().enumerate() {
        match pick(h) {
            Some(ms) => {
                let x = i * BAR + BAR / 2;
                let y = HEIGHT - ms.clamp(0, ceiling) * HEIGHT / ceiling;
                current.push(format!("{x},{y}"));
            }
            None if !current.is_empty() => lines.push(std::mem::take(&mut current).join(" ")),
            None => {}
        }
    }
    if !current.is_empty() {
        lines.push(current.join(" "));
    }
    lines
}

/// The last day's attempts per hour, stacked by outcome.
pub fn outcome_chart(hours: &[HourCount]) -> impl IntoView {
    let peak = hours.iter().map(|h| h.attempts).max().unwrap_or(0).max(1);
    let total: u32 = hours.iter().map(|h| h.attempts).sum();
    let label =
        format!("Attempts per hour over the last day: {total} in all, at most {peak} in one hour");
    let bars = hours
        .iter()
        .enumerate()
        .filter(|(_, h)| h.attempts > 0)
        .map(|(i, h)| {
            let x = (i * BAR).to_string();
            let said = stack(h)
                .iter()
                .filter(|(_, _, n)| *n > 0)
                .map(|(_, words, n)| format!("{n} {words}"))
                .collect::<Vec<_>>()
                .join(", ");
            let rects = bar_segments(h, peak)
                .into_iter()
                .map(|(class, y, height)| {
                    view! {
                        <rect class=class x=x.clone() y=y.to_string() width=(BAR - 1).to_string() height=height.to_string()></rect>
                    }
                })
                .collect_view();
            view! {
                <g>
                    <title>{format!("{} h ago: {} attempts ({said})", hours.len() - i, h.attempts)}</title>
                    {rects}
                </g>
            }
        })
        .collect_view();
    frame("hour-chart", label, hours.len(), bars)
}

/// The last day's p50 and p95 latency, hour by hour.
pub fn latency_chart(hours: &[HourCount]) -> impl IntoView {
    let ceiling = hours.iter().filter_map(|h| h.p95_ms).max().unwrap_or(0);
    let latest = hours.iter().rev().find(|h| h.p50_ms.is_some());
    let label = match latest {
        None => "No latency to show for the last day".to_owned(),
        Some(h) => format!(
            "Latency per hour over the last day, up to {ceiling} ms; latest hour p50 {} ms, p95 {} ms",
            h.p50_ms.unwrap_or(0),
            h.p95_ms.unwrap_or(0)
        ),
    };
    let line = |class: &'static str, points: Vec<String>| {
        points
            .into_iter()
            .map(|p| view! { <polyline class=class points=p></polyline> })
            .collect_view()
    };
    let lines = view! {
        {line("p95", latency_lines(hours, |h| h.p95_ms, ceiling))}
        {line("p50", latency_lines(hours, |h| h.p50_ms, ceiling))}
    };
    frame("latency-chart", label, hours.len(), lines)
}

/// A chart's SVG: one column per hour, a base line, and `label` both read
/// out (aria-label) and shown on hover (title).
fn frame(class: &'static str, label: String, hours: usize, marks: impl IntoView) -> impl IntoView {
    let width = hours * BAR;
    let title = label.clone();
    view! {
        <svg class=class role="img" aria-label=label
            width=width.to_string() height=HEIGHT.to_string()
            viewBox=format!("0 0 {width} {HEIGHT}")>
            <title>{title}</title>
            <line class="axis" x1="0" y1=HEIGHT.to_string() x2=width.to_string() y2=HEIGHT.to_string()></line>
            {marks}
        </svg>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour(found: u32, empty: u32, errors: u32, limited: u32) -> HourCount {
        HourCount {
            attempts: found + empty + errors + limited,
            found,
            failed: errors + limited,
            rate_limited: limited,
            ..HourCount::default()
        }
    }

    #[test]
    fn a_bar_stacks_its_outcomes_to_its_share_of_the_busiest_hour() {
        // The busiest hour fills the chart, bottom up: found, nothing, errors, limits.
        let busy = hour(7, 7, 7, 7);
        let segments = bar_segments(&busy, 28);
        assert_eq!(
            segments,
            vec![
                ("bar-found", 21, 7),
                ("bar-empty", 14, 7),
                ("bar-error", 7, 7),
                ("bar-limited", 0, 7)
            ]
        );
        // Half as busy: half as tall, and outcomes it lacks are left out.
        let half = hour(14, 0, 0, 0);
        assert_eq!(bar_segments(&half, 28), vec![("bar-found", 14, 14)]);
        // Rounding never loses the bar's top: the segments add up.
        let odd = hour(1, 1, 1, 0);
        let total: i64 = bar_segments(&odd, 7).iter().map(|(_, _, h)| h).sum();
        assert_eq!(total, 3 * HEIGHT / 7);
        assert!(bar_segments(&HourCount::default(), 7).is_empty());
    }

    #[test]
    fn latency_lines_break_where_an_hour_had_no_attempts() {
        let at = |ms: Option<i64>| HourCount {
            attempts: u32::from(ms.is_some()),
            p50_ms: ms,
            ..HourCount::default()
        };
        let hours = [at(Some(100)), at(Some(200)), at(None), at(Some(50))];
        let lines = latency_lines(&hours, |h| h.p50_ms, 200);
        assert_eq!(lines, vec!["2,14 6,0".to_owned(), "14,21".to_owned()]);
        // Slower than the ceiling stays on the chart.
        assert_eq!(
            latency_lines(&[at(Some(900))], |h| h.p50_ms, 200),
            vec!["2,0"]
        );
        assert!(latency_lines(&[at(None)], |h| h.p50_ms, 200).is_empty());
    }
}
