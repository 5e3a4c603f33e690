//! "Augment this set →": the bundle over every record as a job, with its
//! progress live from the event stream.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::JobStatus;

use super::api::{cancel_fanout, fanout_estimate, start_fanout};
use super::board::Board;
use crate::clock::now_ms;

#[component]
pub fn FanoutBar(set_id: i64, board: Board) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    let running = move || {
        board
            .job
            .with(|j| j.as_ref().is_some_and(|j| j.status == JobStatus::Running))
    };
    let start = move |_| {
        error.set(None);
        spawn_local(async move {
            // Fires that cost money: say how many, what they may cost and
            // what the budgets have left, and ask first.
            // Without the estimate, nothing starts.
            match fanout_estimate(set_id).await {
                Ok(estimate)
                    if estimate.lines.iter().any(model::EstimateLine::costs)
                        && !confirm(&confirmation(&estimate)) =>
                {
                    return;
                }
                Ok(_) => {}
                Err(e) => {
                    error.set(Some(format!("What the fan-out would cost is unknown: {e}")));
                    return;
                }
            }
            match start_fanout(set_id).await {
                Ok(job) => board.job.set(Some(job)),
                Err(e) => error.set(Some(e.to_string())),
            }
        });
    };
    let cancel = move |_| {
        if let Some(id) = board.job.with_untracked(|j| j.as_ref().map(|j| j.id)) {
            spawn_local(async move {
                if let Ok(job) = cancel_fanout(id).await {
                    board.job.set(Some(job));
                }
            });
        }
    };
    view! {
        <div class="fanout">
            <button class="primary" on:click=start disabled=running>"Augment this set →"</button>
            {move || board.job.get().map(|job| {
                let eta = eta(&job);
                let pct = (job.progress.done * 100).checked_div(job.progress.total).unwrap_or(100);
                view! {
                    <div class="job" data-job=job.id data-job-status=job.status.name()>
                        <progress max=job.progress.total value=job.progress.done aria-label="Fan-out progress"></progress>
                        <span class="job-figures">
                            {format!("{pct} % · {} of {} fires · found {} · nothing {} · errors {} · {}",
                                job.progress.done, job.progress.total, job.found, job.not_found, job.errors, job.status.name())}
                            {eta}
                        </span>
                        {(job.status == JobStatus::Running).then(|| view! { <button on:click=cancel>"Cancel"</button> })}
                    </div>
                }
            })}
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </div>
    }
}

/// The question before a fan-out that costs money.
fn confirmation(estimate: &model::FanoutEstimate) -> String {
    let mut text = format!(
        "This fan-out runs over {} records and may fire:\n",
        estimate.records
    );
    for line in &estimate.lines {
        text += &format!("• {}\n", line.describe());
    }
    for status in &estimate.budgets {
        let scope = status.budget.connector_id.as_deref().map_or_else(
            || format!("every connector in {}", status.budget.unit),
            str::to_owned,
        );
        text += &format!(
            "Budget for {scope}: {} left ({}).\n",
            status.left().in_unit(&status.budget.unit),
            status.describe()
        );
    }
    text + "A spent budget stops its connector; the chain walks on. Go ahead?"
}

#[cfg(feature = "hydrate")]
fn confirm(message: &str) -> bool {
    window().confirm_with_message(message).unwrap_or(false)
}

#[cfg(not(feature = "hydrate"))]
fn confirm(_message: &str) -> bool {
    false
}

/// " · about 2 min left", from the pace so far; nothing before the first fire
/// or once the job ended.
fn eta(job: &model::Job) -> Option<String> {
    if job.status != JobStatus::Running || job.progress.done == 0 {
        return None;
    }
    let elapsed = (now_ms() - job.created_at).max(0) as u64;
    let left_ms = elapsed * (job.progress.total - job.progress.done) / job.progress.done;
    Some(match left_ms / 1000 {
        0..=59 => format!(" · about {} s left", (left_ms / 1000).max(1)),
        s => format!(" · about {} min left", s.div_ceil(60)),
    })
}
