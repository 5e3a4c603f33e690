//! The spend page: what the workspace spent in a month, per unit, by day,
//! connector, person and record set, as small SVG charts drawn here (no
//! chart library), with every billed attempt as CSV: the answer to "why did
//! this cost that", and the calls that got no answer, for review. It
//! follows the live stream: a budget passing its
//! warning line, or any fire's attempt, reads the figures again.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;
use model::{Amount, EventKind, SpendBucket, SpendReport, UnitSpend};

use crate::error_view::error_list;

/// What the workspace spent in `month` (`YYYY-MM`; this one when empty).
#[server]
pub async fn load_spend(month: String) -> Result<SpendReport, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    engine
        .spend_report(&who, Some(&month))
        .await
        .map_err(ssr::fail)
}

/// Chart sizes, in pixels.
const DAY_BAR: i64 = 12;
const DAYS_HEIGHT: i64 = 60;
const ROW_WIDTH: i64 = 220;

/// Each amount's length on a scale where the largest is `full` (a bar of
/// a non-zero amount is at least one pixel).
pub fn scaled(amounts: &[Amount], full: i64) -> Vec<i64> {
    let peak = amounts.iter().map(|a| a.micros()).max().unwrap_or(0).max(1);
    amounts
        .iter()
        .map(|a| {
            let micros = a.micros().max(0);
            let length = i64::try_from(i128::from(micros) * i128::from(full) / i128::from(peak))
                .unwrap_or(full);
            if micros > 0 {
                length.max(1)
            } else {
                0
            }
        })
        .collect()
}

/// The month before or after `month` (`YYYY-MM`), for the links.
pub fn step_month(month: &str, forward: bool) -> Option<String> {
    let (year, number) = month.split_once('-')?;
    let (year, number): (i32, i32) = (year.parse().ok()?, number.parse().ok()?);
    let index = year * 12 + (number - 1) + if forward { 1 } else { -1 };
    Some(format!(
        "{:04}-{:02}",
        index.div_euclid(12),
        index.rem_euclid(12) + 1
    ))
}

/// Spend by day: one bar per day of the month.
fn days_chart(unit: &str, days: &[SpendBucket]) -> impl IntoView {
    let heights = scaled(
        &days.iter().map(|d| d.amount).collect::<Vec<_>>(),
        DAYS_HEIGHT,
    );
    let width = i64::try_from(days.len()).unwrap_or(31) * DAY_BAR;
    let label = format!("{unit} spent per day");
    view! {
        <svg class="spend-days" role="img" aria-label=label width=width height=DAYS_HEIGHT + 1
            viewBox=format!("0 0 {width} {}", DAYS_HEIGHT + 1)>
            {days.iter().zip(heights).enumerate().map(|(i, (day, h))| {
                let x = i64::try_from(i).unwrap_or(0) * DAY_BAR;
                view! {
                    <rect class="bar" x=x + 1 y=DAYS_HEIGHT - h width=DAY_BAR - 2 height=h>
                        <title>{format!("{}: {} in {} attempts", day.key, day.amount.in_unit(unit), day.attempts)}</title>
                    </rect>
                }
            }).collect_view()}
            <line class="axis" x1="0" x2=width y1=DAYS_HEIGHT y2=DAYS_HEIGHT/>
        </svg>
    }
}

/// A breakdown as horizontal bars, largest first, each with its amount.
fn bars(title: &'static str, unit: &str, buckets: &[SpendBucket]) -> impl IntoView {
    let lengths = scaled(
        &buckets.iter().map(|b| b.amount).collect::<Vec<_>>(),
        ROW_WIDTH,
    );
    let row = 18;
    let height = i64::try_from(buckets.len()).unwrap_or(0) * row;
    let label = format!("{unit} spent by {title}");
    view! {
        <figure class="spend-bars">
            <figcaption>{format!("By {title}")}</figcaption>
            <svg role="img" aria-label=label width=ROW_WIDTH + 160 height=height
                viewBox=format!("0 0 {} {height}", ROW_WIDTH + 160)>
                {buckets.iter().zip(lengths).enumerate().map(|(i, (b, w))| {
                    let y = i64::try_from(i).unwrap_or(0) * row;
                    view! {
                        <g class="spend-row">
                            <rect class="bar" x="0" y=y + 2 width=w height=row - 6/>
                            <text x=w + 4 y=y + row - 5>
                                {format!("{} · {} ({} attempts)", b.key, b.amount.in_unit(unit), b.attempts)}
                            </text>
                        </g>
                    }
                }).collect_view()}
            </svg>
        </figure>
    }
}

#[component]
fn UnitSection(spend: UnitSpend) -> impl IntoView {
    let unit = spend.unit.clone();
    let keys = spend
        .by_key
        .iter()
        .map(|b| format!("{} with the {}'s key", b.amount.in_unit(&unit), b.key))
        .collect::<Vec<_>>()
        .join(" · ");
    view! {
        <section class="spend-unit" data-unit=unit.clone()>
            <h2>{spend.total.in_unit(&unit)}<span class="muted">{format!(" in {} billed attempts", spend.attempts)}</span></h2>
            <p class="muted">{keys}</p>
            {days_chart(&unit, &spend.by_day)}
            <div class="spend-breakdowns">
                {bars("connector", &unit, &spend.by_connector)}
                {bars("person", &unit, &spend.by_person)}
                {bars("record set", &unit, &spend.by_record_set)}
            </div>
        </section>
    }
}

#[component]
pub fn SpendPage() -> impl IntoView {
    let query = use_query_map();
    let month = move || query.with(|q| q.get("month").unwrap_or_default());
    // Bumped by the live stream: the figures read again, at most every few
    // seconds while fires land.
    let version = RwSignal::new(0u32);
    let stale = StoredValue::new(false);
    crate::live::subscribe("/api/events", move |event| {
        let billed = match &event.kind {
            EventKind::FireNews { attempts, .. } => attempts.iter().any(|entry| {
                entry.end.charge.is_some() || entry.end.outcome == Some(model::FireOutcome::Unknown)
            }),
            EventKind::BudgetChanged { .. } => true,
            _ => false,
        };
        if billed && !stale.get_value() {
            stale.set_value(true);
            #[cfg(feature = "hydrate")]
            set_timeout(
                move || {
                    stale.set_value(false);
                    version.update(|v| *v += 1);
                },
                std::time::Duration::from_secs(3),
            );
        }
    });
    let report = crate::wire::resource(move || (month(), version.get()), |(m, _)| load_spend(m));
    view! {
        <Title text="Spend"/>
        <h1>"Spend"</h1>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    report.await.map(|report| {
                        let before = step_month(&report.month, false).unwrap_or_default();
                        let after = step_month(&report.month, true).unwrap_or_default();
                        let export = format!("/api/spend/export?month={}", report.month);
                        view! {
                            <p class="spend-month">
                                <A href=format!("/spend?month={before}")>"← "{before.clone()}</A>
                                " "<strong>{report.month.clone()}</strong>" (UTC) "
                                <A href=format!("/spend?month={after}")>{after.clone()}" →"</A>
                                " · "<a href=export download>"Every billed attempt as CSV"</a>
                            </p>
                            {if report.units.is_empty() {
                                view! { <p class="empty">"Nothing billed this month. Connectors with a price (on the inventory) count here."</p> }.into_any()
                            } else {
                                report.units.into_iter().map(|spend| view! { <UnitSection spend/> }).collect_view().into_any()
                            }}
                        }
                    })
                })}
            </ErrorBoundary>
        </Transition>
        <super::unanswered::UnansweredCalls version/>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_largest_and_show_every_amount_spent() {
        let amounts = [Amount::units(10), Amount::from_micros(1), Amount::ZERO];
        assert_eq!(scaled(&amounts, 60), [60, 1, 0]);
        assert_eq!(scaled(&[], 60), Vec::<i64>::new());
    }

    #[test]
    fn months_step_across_years() {
        assert_eq!(step_month("2026-12", true).as_deref(), Some("2027-01"));
        assert_eq!(step_month("2026-01", false).as_deref(), Some("2025-12"));
        assert_eq!(step_month("nonsense", true), None);
    }
}
