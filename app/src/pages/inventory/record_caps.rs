//! What one record may cost a day, on the inventory page: the workspace's
//! cap per unit, read by every member and set or removed by admins. A
//! click that would take a record past it asks "spend more?" beside the
//! chip instead of spending.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::{Amount, RecordCap, RecordCapStatus};

use crate::clock::ago;
use crate::error_view::{error_list, Notice};

#[server]
pub async fn list_record_caps() -> Result<Vec<RecordCapStatus>, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    engine.record_caps_of(&who).await.map_err(ssr::fail)
}

/// Sets or changes the cap of a unit (admins).
#[server]
pub async fn save_record_cap(cap: RecordCap) -> Result<RecordCapStatus, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine.set_record_cap(&who, cap).await.map_err(ssr::fail)
}

/// Removes the cap of a unit (admins).
#[server]
pub async fn drop_record_cap(unit: String) -> Result<(), ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine
        .remove_record_cap(&who, &unit)
        .await
        .map_err(ssr::fail)
}

/// "0.30 USD per record a day".
fn describe(cap: &RecordCap) -> String {
    format!("{} per record a day", cap.daily_limit.in_unit(&cap.unit))
}

#[component]
fn CapLine(
    status: RecordCapStatus,
    is_admin: bool,
    notice: Notice,
    version: RwSignal<u32>,
) -> impl IntoView {
    let unit = status.cap.unit.clone();
    let remove = is_admin.then(|| {
        let unit = unit.clone();
        view! {
            <button type="button" class="remove" on:click=move |_| {
                let unit = unit.clone();
                spawn_local(async move {
                    notice.set(Some(match drop_record_cap(unit.clone()).await {
                        Ok(()) => Ok(format!("Records may cost any amount of {unit} a day now.")),
                        Err(e) => Err(e.to_string()),
                    }));
                    version.update(|v| *v += 1);
                });
            }>"Remove"</button>
        }
    });
    view! {
        <tr data-record-cap=unit>
            <td>{describe(&status.cap)}</td>
            <td class="muted">{format!("set by {} {}", status.set_by, ago(status.set_at))}</td>
            <td>{remove}</td>
        </tr>
    }
}

#[component]
pub fn RecordCaps(is_admin: bool, notice: Notice, version: RwSignal<u32>) -> impl IntoView {
    let data = crate::wire::resource(move || version.get(), |_| list_record_caps());
    view! {
        <section class="record-caps" aria-labelledby="record-caps-title">
            <h2 id="record-caps-title">"What one record may cost a day"</h2>
            <p class="muted">"Per unit and UTC day. A click that would take a record past it asks \"spend more?\" beside the chip; fan-outs walk past its paid connectors."</p>
            <Transition fallback=|| ()>
                <ErrorBoundary fallback=error_list>
                    {move || Suspend::new(async move {
                        data.await.map(|caps| view! {
                            {if caps.is_empty() {
                                view! { <p class="empty">"No cap: a record may cost any amount a day."</p> }.into_any()
                            } else {
                                view! {
                                    <table class="record-caps-table"><tbody>
                                        {caps.into_iter().map(|status| view! { <CapLine status is_admin notice version/> }).collect_view()}
                                    </tbody></table>
                                }.into_any()
                            }}
                            {is_admin.then(|| view! { <CapForm notice version/> })}
                        })
                    })}
                </ErrorBoundary>
            </Transition>
        </section>
    }
}

/// Sets the cap of a unit.
#[component]
fn CapForm(notice: Notice, version: RwSignal<u32>) -> impl IntoView {
    let unit = NodeRef::<leptos::html::Input>::new();
    let limit = NodeRef::<leptos::html::Input>::new();
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let (Some(unit), Some(limit)) = (unit.get(), limit.get()) else {
            return;
        };
        let daily_limit = match Amount::parse_decimal(&limit.value()) {
            Ok(amount) => amount,
            Err(e) => {
                notice.set(Some(Err(format!("Per record per day: {e}"))));
                return;
            }
        };
        let cap = RecordCap {
            unit: unit.value().trim().to_owned(),
            daily_limit,
        };
        spawn_local(async move {
            notice.set(Some(match save_record_cap(cap).await {
                Ok(status) => Ok(format!("Cap set: {}.", describe(&status.cap))),
                Err(e) => Err(e.to_string()),
            }));
            version.update(|v| *v += 1);
        });
    };
    view! {
        <form class="set-record-cap" on:submit=on_submit>
            <label>"Unit " <input node_ref=unit placeholder="USD" size="10" required/></label>
            <label>"Per record per day " <input node_ref=limit type="number" min="0" step="any" required size="8"/></label>
            <button type="submit">"Set cap"</button>
        </form>
    }
}
