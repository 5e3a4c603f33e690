//! "Augment this set →": the bundle over every record as a job, with its
//! progress live from the event stream. A fan-out that costs money first
//! shows what it may fire and spend and what the budgets have left, and
//! may limit each record's paid fires.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::JobStatus;

use super::api::{cancel_fanout, fanout_estimate, start_fanout};
use super::board::Board;
use crate::clock::now_ms;

/// Starts the fan-out and shows its job, or the error.
fn launch(
    set_id: i64,
    paid_per_record: Option<u32>,
    board: Board,
    error: RwSignal<Option<String>>,
) {
    spawn_local(async move {
        match start_fanout(set_id, paid_per_record).await {
            Ok(job) => board.see_job(Some(job)),
            Err(e) => error.set(Some(e.to_string())),
        }
    });
}

#[component]
pub fn FanoutBar(set_id: i64, board: Board) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    // Asked for a fan-out: what it would cost is being read, or shown while
    // the person decides.
    let asking = RwSignal::new(false);
    let running = move || {
        board
            .job
            .with(|j| j.as_ref().is_some_and(|j| j.status == JobStatus::Running))
    };
    let start = move |_| {
        error.set(None);
        asking.set(true);
    };
    let cancel = move |_| {
        if let Some(id) = board.job.with_untracked(|j| j.as_ref().map(|j| j.id)) {
            spawn_local(async move {
                if let Ok(job) = cancel_fanout(id).await {
                    board.see_job(Some(job));
                }
            });
        }
    };
    view! {
        <div class="fanout">
            <button class="primary" on:click=start disabled=move || running() || asking.get()>"Augment this set →"</button>
            <Suspense>
                {move || asking.get().then(|| Suspend::new(ask(set_id, board, asking, error)))}
            </Suspense>
            {move || board.job.get().map(|job| {
                let eta = eta(&job);
                let pct = (job.progress.done * 100).checked_div(job.progress.total).unwrap_or(100);
                view! {
                    <div class="job" data-job=job.id data-job-status=job.status.name()>
                        <progress max=job.progress.total value=job.progress.done aria-label="Fan-out progress"></progress>
                        <span class="job-figures">
                            {format!("{pct} % · {} of {} fires · found {} · nothing {} · errors {} · {}",
                                job.progress.done, job.progress.total, job.found, job.not_found, job.errors, job.status.name())}
                            {job.paid_per_record.map(|n| format!(" · at most {n} paid fires per record"))}
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

/// The question before a fan-out, or the reason it cannot be asked.
async fn ask(
    set_id: i64,
    board: Board,
    asking: RwSignal<bool>,
    error: RwSignal<Option<String>>,
) -> AnyView {
    confirm(set_id, board, asking, error)
        .await
        .unwrap_or_else(|_| {
            asking.set(false);
            error.set(Some(crate::chunk::NOT_LOADED.to_owned()));
            ().into_any()
        })
}

crate::chunk::lazy_view! {
    /// Before a fan-out starts: fires that cost money are counted, priced
    /// and set against what the budgets have left, and the person is asked
    /// first; a free fan-out starts at once, and without the estimate
    /// nothing starts. A chunk of its own, fetched when a person first asks
    /// for a fan-out.
    confirm: async fn confirm(
        set_id: i64,
        board: Board,
        asking: RwSignal<bool>,
        error: RwSignal<Option<String>>,
    ) {
        match fanout_estimate(set_id).await {
            Ok(estimate) if estimate.lines.iter().any(model::EstimateLine::costs) => {
                view! { <Confirmation estimate set_id board asking error/> }.into_any()
            }
            Ok(_) => {
                asking.set(false);
                launch(set_id, None, board, error);
                ().into_any()
            }
            Err(e) => {
                asking.set(false);
                error.set(Some(format!("What the fan-out would cost is unknown: {e}")));
                ().into_any()
            }
        }
    }
}

/// The question before a fan-out that costs money: what it may fire and
/// spend per connector, what the budgets have left, and an optional limit
/// of paid fires per record.
#[component]
fn Confirmation(
    estimate: model::FanoutEstimate,
    set_id: i64,
    board: Board,
    asking: RwSignal<bool>,
    error: RwSignal<Option<String>>,
) -> impl IntoView {
    let limit = NodeRef::<leptos::html::Input>::new();
    let go = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let text = limit.get().map(|i| i.value()).unwrap_or_default();
        let paid_per_record = match text.trim() {
            "" => None,
            n => match n.parse::<u32>() {
                Ok(n) => Some(n),
                Err(_) => {
                    error.set(Some(format!(
                        "Paid fires per record: {n:?} is not a whole number 0 or more"
                    )));
                    return;
                }
            },
        };
        asking.set(false);
        launch(set_id, paid_per_record, board, error);
    };
    view! {
        <form class="fanout-confirm" role="dialog" aria-label="Confirm the fan-out" on:submit=go>
            <p>{format!("This fan-out runs over {} records and may fire:", estimate.records)}</p>
            <ul class="estimate">
                {estimate.lines.iter().map(|line| view! {
                    <li data-connector=line.connector_id.clone() data-costs=line.costs().then_some("true")>{line.describe()}</li>
                }).collect_view()}
            </ul>
            {estimate.budgets.iter().map(|status| {
                let scope = status.budget.covers(status.budget.connector_id.as_deref().unwrap_or_default());
                view! {
                    <p class="budget-left">{format!(
                        "Budget for {scope}: {} left ({}).",
                        status.left().in_unit(&status.budget.unit),
                        status.describe()
                    )}</p>
                }
            }).collect_view()}
            <p class="muted">"A spent budget stops its connector; the chain walks on."</p>
            <label>"At most "
                <input node_ref=limit type="number" min="0" step="1" size="4"/>
                " paid fires per record (empty: no limit)"
            </label>
            <div class="confirm-actions">
                <button type="submit" class="primary">"Start the fan-out"</button>
                <button type="button" on:click=move |_| asking.set(false)>"Not now"</button>
            </div>
        </form>
    }
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
