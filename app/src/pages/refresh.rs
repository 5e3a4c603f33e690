//! A record set's scheduled refresh on the record sets page: which packs
//! are fired again by themselves, how often, in which hours, and when they
//! last ran. Admins set and remove schedules; the schedules are read when
//! the row's panel is first opened.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::{RefreshPlan, RefreshSchedule};

use crate::clock::ago;
use crate::error_view::error_list;

/// A set's schedules, and the packs of its bundle (id, name) one may be
/// set for.
#[server]
pub async fn load_refreshes(
    set_id: i64,
) -> Result<(Vec<RefreshSchedule>, Vec<(String, String)>), ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = ssr::door()?;
    let schedules = engine.refreshes(&who, set_id).await.map_err(ssr::fail)?;
    let packs = engine
        .refreshable_packs(&who, set_id)
        .await
        .map_err(ssr::fail)?;
    Ok((schedules, packs))
}

/// Sets how a pack of the set is refreshed (admins).
#[server]
pub async fn save_refresh(
    set_id: i64,
    pack_id: String,
    plan: RefreshPlan,
) -> Result<RefreshSchedule, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine
        .set_refresh(&who, set_id, &pack_id, plan)
        .await
        .map_err(ssr::fail)
}

/// Stops refreshing a pack of the set (admins).
#[server]
pub async fn drop_refresh(set_id: i64, pack_id: String) -> Result<(), ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine
        .remove_refresh(&who, set_id, &pack_id)
        .await
        .map_err(ssr::fail)
}

/// The row's panel: closed until first opened.
#[component]
pub fn RefreshPanel(set_id: i64, is_admin: bool) -> impl IntoView {
    let open = RwSignal::new(false);
    view! {
        <details class="refresh" on:toggle=move |_| open.set(true)>
            <summary>"Scheduled refresh"</summary>
            <Show when=move || open.get()>
                <RefreshList set_id is_admin/>
            </Show>
        </details>
    }
}

#[component]
fn RefreshList(set_id: i64, is_admin: bool) -> impl IntoView {
    let version = RwSignal::new(0u32);
    let message = RwSignal::new(None::<Result<String, String>>);
    let data = crate::wire::resource(move || version.get(), move |_| load_refreshes(set_id));
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    data.await.map(|(schedules, packs)| {
                        let name = |id: &str| {
                            packs.iter().find(|(p, _)| p == id).map_or_else(|| id.to_owned(), |(_, n)| n.clone())
                        };
                        view! {
                            {schedules.is_empty().then(|| view! { <p class="muted">"No pack is refreshed by itself."</p> })}
                            <ul class="schedules">
                                {schedules.iter().map(|s| {
                                    let pack = s.pack_id.clone();
                                    let remove = is_admin.then(|| view! {
                                        <button type="button" class="secondary" on:click=move |_| {
                                            let pack = pack.clone();
                                            spawn_local(async move {
                                                message.set(Some(match drop_refresh(set_id, pack.clone()).await {
                                                    Ok(()) => Ok(format!("{pack} is no longer refreshed.")),
                                                    Err(e) => Err(e.to_string()),
                                                }));
                                                version.update(|v| *v += 1);
                                            });
                                        }>"Remove"</button>
                                    });
                                    view! {
                                        <li data-pack=s.pack_id.clone()>
                                            <strong>{name(&s.pack_id)}</strong>" "{s.plan.describe()}
                                            <span class="muted">{match s.last_run_at {
                                                Some(at) => format!(" · last ran {}", ago(at)),
                                                None => " · not run yet".to_owned(),
                                            }}</span>
                                            " "{remove}
                                        </li>
                                    }
                                }).collect_view()}
                            </ul>
                            {is_admin.then(|| view! { <RefreshForm set_id packs=packs.clone() message version/> })}
                        }
                    })
                })}
            </ErrorBoundary>
        </Transition>
        {move || message.get().map(|m| match m {
            Ok(text) => view! { <p class="notice" role="status">{text}</p> }.into_any(),
            Err(text) => view! { <p class="error" role="alert">{text}</p> }.into_any(),
        })}
    }
}

#[component]
fn RefreshForm(
    set_id: i64,
    packs: Vec<(String, String)>,
    message: RwSignal<Option<Result<String, String>>>,
    version: RwSignal<u32>,
) -> impl IntoView {
    let pack = RwSignal::new(packs.first().map(|(id, _)| id.clone()).unwrap_or_default());
    let days = NodeRef::<leptos::html::Input>::new();
    let from = NodeRef::<leptos::html::Input>::new();
    let to = NodeRef::<leptos::html::Input>::new();
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let read = |input: NodeRef<leptos::html::Input>| {
            input.get().map(|i| i.value()).unwrap_or_default()
        };
        let plan = (|| -> Result<RefreshPlan, String> {
            let days: u32 = read(days)
                .trim()
                .parse()
                .map_err(|_| "Every: give a whole number of days".to_owned())?;
            let hour = |text: String, what: &str| -> Result<u8, String> {
                match text.trim() {
                    "" => Ok(0),
                    t => t
                        .parse()
                        .map_err(|_| format!("{what}: give an hour from 0 to 24")),
                }
            };
            let plan = RefreshPlan {
                every_hours: days.saturating_mul(24),
                window_start: hour(read(from), "From")?,
                window_end: hour(read(to), "To")?,
            };
            plan.check()?;
            Ok(plan)
        })();
        let plan = match plan {
            Ok(plan) => plan,
            Err(e) => {
                message.set(Some(Err(e)));
                return;
            }
        };
        let pack_id = pack.get_untracked();
        spawn_local(async move {
            message.set(Some(match save_refresh(set_id, pack_id, plan).await {
                Ok(s) => Ok(format!("{} is refreshed {}.", s.pack_id, s.plan.describe())),
                Err(e) => Err(e.to_string()),
            }));
            version.update(|v| *v += 1);
        });
    };
    view! {
        <form class="set-refresh" on:submit=on_submit>
            <label>"Pack "
                <select on:change=move |ev| pack.set(event_target_value(&ev))>
                    {packs.into_iter().map(|(id, name)| view! { <option value=id>{name}</option> }).collect_view()}
                </select>
            </label>
            <label>"Every " <input node_ref=days type="number" min="1" max="365" value="7" size="3" required/>" days"</label>
            <label>"From " <input node_ref=from type="number" min="0" max="24" size="2" placeholder="0"/></label>
            <label>"to " <input node_ref=to type="number" min="0" max="24" size="2" placeholder="0"/>" h UTC"</label>
            <button type="submit">"Schedule"</button>
        </form>
    }
}
