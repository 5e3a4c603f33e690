//! The members page: who belongs to the workspace and with which role. Admins
//! add people (someone without a password gets a one-time link to choose
//! one, shown to the admin to pass on; nobody's password is ever shown),
//! change roles and take people out.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_meta::Title;
use model::{Member, Role};

#[cfg(feature = "ssr")]
use crate::access::ssr;
use crate::error_view::{error_list, notice_line};
use crate::pages::ViewerResource;

#[server]
pub async fn list_members() -> Result<Vec<Member>, ServerFnError> {
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    engine.members(&who).await.map_err(ssr::fail)
}

/// Adds a person; returns the set-password link (a path) of someone who
/// has no password yet.
#[server]
pub async fn add_member(email: String, role: Role) -> Result<Option<String>, ServerFnError> {
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    let added = engine
        .add_member(&who, &email, role)
        .await
        .map_err(ssr::fail)?;
    Ok(added.set_password_link)
}

/// What the admin is told after adding someone.
fn added_message(address: &str, link: Option<String>) -> String {
    match link {
        Some(path) => {
            let origin = window().location().origin().unwrap_or_default();
            format!(
                "Added {address}. They choose their password with this link, which works once, \
                 for 7 days; send it to them: {origin}{path}"
            )
        }
        None => format!("Added {address}. They sign in with their own password."),
    }
}

#[server]
pub async fn set_member_role(user_id: i64, role: Role) -> Result<(), ServerFnError> {
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine
        .set_member_role(&who, user_id, role)
        .await
        .map_err(ssr::fail)
}

#[server]
pub async fn remove_member(user_id: i64) -> Result<(), ServerFnError> {
    let (engine, who) = (ssr::engine()?, ssr::admin()?);
    engine.remove_member(&who, user_id).await.map_err(ssr::fail)
}

#[component]
pub fn MembersPage() -> impl IntoView {
    let ViewerResource(viewer) = expect_context::<ViewerResource>();
    let version = RwSignal::new(0u32);
    let members = crate::wire::resource(move || version.get(), |_| list_members());
    let message = RwSignal::new(None::<Result<String, String>>);
    let done = move |result: Result<String, ServerFnError>| match result {
        Ok(text) => {
            message.set(Some(Ok(text)));
            version.update(|v| *v += 1);
        }
        Err(e) => message.set(Some(Err(e.to_string()))),
    };
    let email = NodeRef::<leptos::html::Input>::new();
    let role = NodeRef::<leptos::html::Select>::new();
    let on_add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let address = email.get().map(|i| i.value()).unwrap_or_default();
        let role = match role.get().map(|s| s.value()).as_deref() {
            Some("admin") => Role::Admin,
            _ => Role::Member,
        };
        spawn_local(async move {
            let result = add_member(address.clone(), role)
                .await
                .map(|link| added_message(&address, link));
            done(result);
        });
    };
    view! {
        <Title text="Members"/>
        <h1>"Members"</h1>
        {notice_line(message)}
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    let is_admin = matches!(viewer.await, Ok(Some(v)) if v.is_admin());
                    members.await.map(|list| {
                        let rows = list
                            .into_iter()
                            .map(|m| {
                                let (id, email) = (m.user_id, m.email.clone());
                                let other = if m.role == Role::Admin { Role::Member } else { Role::Admin };
                                let controls = is_admin.then(|| {
                                    let email2 = email.clone();
                                    view! {
                                        <button on:click=move |_| {
                                            let email = email.clone();
                                            spawn_local(async move {
                                                done(set_member_role(id, other).await.map(|()| format!("{email} is now {other}.")));
                                            });
                                        }>{format!("Make {other}")}</button>
                                        <button on:click=move |_| {
                                            let email = email2.clone();
                                            spawn_local(async move {
                                                done(remove_member(id).await.map(|()| format!("{email} is no longer a member.")));
                                            });
                                        }>"Remove"</button>
                                    }
                                });
                                view! {
                                    <tr data-member=m.email.clone()>
                                        <td>{m.email.clone()}</td>
                                        <td class="role">{m.role.name()}</td>
                                        <td>{controls}</td>
                                    </tr>
                                }
                            })
                            .collect_view();
                        view! {
                            <table class="members">
                                <thead><tr><th>"Email"</th><th>"Role"</th><th></th></tr></thead>
                                <tbody>{rows}</tbody>
                            </table>
                            {is_admin.then(|| view! {
                                <form class="add-member" on:submit=on_add>
                                    <label>"Email " <input node_ref=email type="email" required/></label>
                                    <label>"Role "
                                        <select node_ref=role>
                                            <option value="member" selected>"member"</option>
                                            <option value="admin">"admin"</option>
                                        </select>
                                    </label>
                                    <button type="submit">"Add member"</button>
                                </form>
                            })}
                        }
                    })
                })}
            </ErrorBoundary>
        </Transition>
    }
}
