//! The workspace's monthly budgets on the inventory page: each with this
//! month's spend as a meter, warned past 80 %. Admins set a budget for one
//! priced connector or for every connector in a unit, and remove them. A
//! call that would pass a budget does not go out; the chain walks on.

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::{Amount, Budget, BudgetStatus, ConnectorInfo};

use crate::clock::ago;
use crate::error_view::{error_list, Notice};

/// The budgets, and the priced connectors a budget may be set for.
#[server]
pub async fn list_budgets() -> Result<(Vec<BudgetStatus>, Vec<ConnectorInfo>), ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    let budgets = engine.budgets_of(&who).await.map_err(ssr::fail)?;
    let priced = engine
        .connectors(&who)
        .await
        .map_err(ssr::fail)?
        .into_iter()
        .filter(|c| c.profile.cost.is_some())
        .collect();
    Ok((budgets, priced))
}

/// Sets or changes a budget (admins).
#[server]
pub async fn save_budget(budget: Budget) -> Result<BudgetStatus, ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine.set_budget(&who, budget).await.map_err(ssr::fail)
}

/// Removes a budget (admins).
#[server]
pub async fn drop_budget(connector_id: Option<String>, unit: String) -> Result<(), ServerFnError> {
    use crate::access::ssr;
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine
        .remove_budget(&who, connector_id.as_deref(), &unit)
        .await
        .map_err(ssr::fail)
}

/// What a budget covers, in words.
fn scope(budget: &Budget, priced: &[ConnectorInfo]) -> String {
    let id = budget.connector_id.as_deref().unwrap_or_default();
    budget.covers(
        priced
            .iter()
            .find(|c| c.profile.id == id)
            .map_or(id, |c| c.profile.display_name.as_str()),
    )
}

#[component]
fn BudgetLine(
    status: BudgetStatus,
    label: String,
    is_admin: bool,
    notice: Notice,
    version: RwSignal<u32>,
) -> impl IntoView {
    let percent = status.percent();
    let state = if percent >= 100 {
        "spent"
    } else if status.warns() {
        "warn"
    } else {
        "ok"
    };
    let remove = is_admin.then(|| {
        let (connector_id, unit) = (
            status.budget.connector_id.clone(),
            status.budget.unit.clone(),
        );
        let label = label.clone();
        view! {
            <button type="button" class="remove" on:click=move |_| {
                let (connector_id, unit, label) = (connector_id.clone(), unit.clone(), label.clone());
                spawn_local(async move {
                    notice.set(Some(match drop_budget(connector_id, unit).await {
                        Ok(()) => Ok(format!("The budget for {label} is removed.")),
                        Err(e) => Err(e.to_string()),
                    }));
                    version.update(|v| *v += 1);
                });
            }>"Remove"</button>
        }
    });
    view! {
        <tr data-budget=status.budget.connector_id.clone().unwrap_or_else(|| "*".to_owned()) data-state=state>
            <td>{label.clone()}</td>
            <td class="spent">
                <meter min="0" max="100" low="80" high="99" optimum="0" value=percent.min(100).to_string()
                    aria-label=format!("{percent} % of the budget for {label} spent")></meter>
                " "{status.describe()}
                {(state != "ok").then(|| view! { <strong class="budget-warning">{format!(" · {percent} %")}</strong> })}
            </td>
            <td class="muted">{format!("set by {} {}", status.set_by, ago(status.set_at))}</td>
            <td>{remove}</td>
        </tr>
    }
}

#[component]
pub fn Budgets(is_admin: bool, notice: Notice, version: RwSignal<u32>) -> impl IntoView {
    let data = crate::wire::resource(move || version.get(), |_| list_budgets());
    view! {
        <section class="budgets" aria-labelledby="budgets-title">
            <h2 id="budgets-title">"Budgets"</h2>
            <p class="muted">"What this workspace may spend per UTC month. A call that would pass a budget does not go out: the chain walks on to the next connector, and the chip says which budget is spent."</p>
            <Transition fallback=|| ()>
                <ErrorBoundary fallback=error_list>
                    {move || Suspend::new(async move {
                        data.await.map(|(budgets, priced)| {
                            let lines = if budgets.is_empty() {
                                view! { <p class="empty">"No budgets yet."</p> }.into_any()
                            } else {
                                view! {
                                    <table class="budgets-table"><tbody>
                                        {budgets.into_iter().map(|status| {
                                            let label = scope(&status.budget, &priced);
                                            view! { <BudgetLine status label is_admin notice version/> }
                                        }).collect_view()}
                                    </tbody></table>
                                }.into_any()
                            };
                            view! {
                                {lines}
                                {is_admin.then(|| view! { <BudgetForm priced notice version/> })}
                            }
                        })
                    })}
                </ErrorBoundary>
            </Transition>
        </section>
    }
}

/// Sets a budget: for one priced connector (in its unit), or for every
/// connector in a unit.
#[component]
fn BudgetForm(priced: Vec<ConnectorInfo>, notice: Notice, version: RwSignal<u32>) -> impl IntoView {
    let scope = RwSignal::new(String::new());
    let unit = NodeRef::<leptos::html::Input>::new();
    let limit = NodeRef::<leptos::html::Input>::new();
    let units: Vec<String> = {
        let mut units: Vec<String> = priced
            .iter()
            .filter_map(|c| c.profile.cost.as_ref().map(|cost| cost.unit.clone()))
            .collect();
        units.sort();
        units.dedup();
        units
    };
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let (Some(unit), Some(limit)) = (unit.get(), limit.get()) else {
            return;
        };
        let monthly_limit = match Amount::parse_decimal(&limit.value()) {
            Ok(amount) => amount,
            Err(e) => {
                notice.set(Some(Err(format!("Monthly limit: {e}"))));
                return;
            }
        };
        let connector_id = Some(scope.get_untracked()).filter(|s| !s.is_empty());
        let budget = Budget {
            unit: if connector_id.is_some() {
                String::new()
            } else {
                unit.value().trim().to_owned()
            },
            connector_id,
            monthly_limit,
        };
        spawn_local(async move {
            notice.set(Some(match save_budget(budget).await {
                Ok(status) => Ok(format!("Budget set: {}.", status.describe())),
                Err(e) => Err(e.to_string()),
            }));
            version.update(|v| *v += 1);
        });
    };
    view! {
        <form class="set-budget" on:submit=on_submit>
            <label>"For "
                <select on:change=move |ev| scope.set(event_target_value(&ev)) aria-label="What the budget covers">
                    <option value="">"every connector in a unit"</option>
                    {priced.iter().map(|c| {
                        let price = c.profile.cost.as_ref().map(model::Cost::describe).unwrap_or_default();
                        view! { <option value=c.profile.id.clone()>{format!("{} ({price})", c.profile.display_name)}</option> }
                    }).collect_view()}
                </select>
            </label>
            <label class:hidden=move || !scope.get().is_empty()>"Unit "
                <input node_ref=unit list="budget-units" placeholder="USD" size="10"/>
                <datalist id="budget-units">
                    {units.into_iter().map(|u| view! { <option value=u/> }).collect_view()}
                </datalist>
            </label>
            <label>"Monthly limit " <input node_ref=limit type="number" min="0" step="any" required size="8"/></label>
            <button type="submit">"Set budget"</button>
        </form>
    }
}
