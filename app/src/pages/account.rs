//! Account pages: sign-in (a plain form the server handles, so it works before
//! the wasm loads), the header's account corner with the workspace switcher,
//! and the settings page where a user picks their own pack labels.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use model::{PackConfig, Viewer};

#[cfg(feature = "ssr")]
use crate::access::ssr;
use crate::error_view::error_list;

/// The signed-in person, or `None` on the sign-in page.
#[server]
pub async fn whoami() -> Result<Option<Viewer>, ServerFnError> {
    let engine = ssr::engine()?;
    let Some(who) = ssr::signed_in() else {
        return Ok(None);
    };
    engine.viewer(&who).await.map(Some).map_err(ssr::fail)
}

/// Every pack with the caller's own labels applied, and the packs as shipped.
#[server]
pub async fn load_pack_labels() -> Result<(Vec<PackConfig>, Vec<PackConfig>), ServerFnError> {
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    let shipped = engine
        .catalog_of(&who)
        .await
        .map_err(ssr::fail)?
        .packs()
        .to_vec();
    let mut mine = shipped.clone();
    engine.relabel(&who, &mut mine).await.map_err(ssr::fail)?;
    Ok((mine, shipped))
}

/// Sets (or with a blank label clears) the caller's label for a pack.
#[server]
pub async fn save_pack_label(pack_id: String, label: String) -> Result<(), ServerFnError> {
    let (engine, who) = (ssr::engine()?, ssr::caller()?);
    engine
        .set_pack_label(&who, &pack_id, Some(&label))
        .await
        .map_err(ssr::fail)
}

/// The viewer, loaded once per page and shared through context.
#[derive(Clone, Copy)]
pub struct ViewerResource(pub Resource<Result<Option<Viewer>, ServerFnError>, crate::wire::Json>);

pub fn provide_viewer() -> ViewerResource {
    let resource = ViewerResource(crate::wire::resource(|| (), |_| whoami()));
    provide_context(resource);
    resource
}

/// What the sign-in page says after `error=code` (and `wait=seconds`).
fn sign_in_message(code: &str, wait: Option<u64>) -> Option<String> {
    Some(match code {
        "invalid" => "Wrong email or password.".to_owned(),
        "limited" => match wait {
            Some(s) if s > 90 => format!(
                "Too many attempts. Wait {} minutes, then try again.",
                s.div_ceil(60)
            ),
            Some(s) => format!("Too many attempts. Wait {s} seconds, then try again."),
            None => "Too many attempts. Wait a little, then try again.".to_owned(),
        },
        "no-workspace" => {
            "This account belongs to no workspace yet. Ask an admin to add you.".to_owned()
        }
        "signed-out" => "You are signed out.".to_owned(),
        _ => return None,
    })
}

#[component]
pub fn SignInPage() -> impl IntoView {
    let query = use_query_map();
    let message = move || {
        let query = query.read();
        let wait = query.get("wait").and_then(|w| w.parse().ok());
        query
            .get("error")
            .and_then(|code| sign_in_message(&code, wait))
    };
    let next = move || query.read().get("next").unwrap_or_else(|| "/".to_owned());
    view! {
        <Title text="Sign in"/>
        <section class="sign-in">
            <h1>"Sign in"</h1>
            {move || message().map(|m| view! { <p class="notice" role="alert">{m}</p> })}
            <form method="post" action="/auth/sign-in">
                <input type="hidden" name="next" prop:value=next/>
                <label>"Email" <input type="email" name="email" autocomplete="username" required autofocus/></label>
                <label>"Password" <input type="password" name="password" autocomplete="current-password" required/></label>
                <button type="submit">"Sign in"</button>
            </form>
            <p class="muted">"No account? An admin adds you with "<code>"switchyard user add"</code>"."</p>
        </section>
    }
}

/// The header's right side: workspace switcher, who is signed in, sign out.
#[component]
pub fn AccountCorner() -> impl IntoView {
    let ViewerResource(viewer) = expect_context::<ViewerResource>();
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                let Ok(Some(v)) = viewer.await else { return ().into_any() };
                let current = v.workspace.id;
                let options = v
                    .workspaces
                    .iter()
                    .map(|w| {
                        view! {
                            <option value=w.id.to_string() selected=w.id == current>
                                {format!("{} ({})", w.name, w.role)}
                            </option>
                        }
                    })
                    .collect_view();
                view! {
                    <div class="account">
                        <form method="post" action="/auth/workspace" class="switcher">
                            <label>
                                "Workspace "
                                <select name="workspace" aria-label="Workspace">{options}</select>
                            </label>
                            <button type="submit">"Switch"</button>
                        </form>
                        <span class="who" data-email=v.email.clone()>{v.email.clone()}</span>
                        <form method="post" action="/auth/sign-out">
                            <button type="submit">"Sign out"</button>
                        </form>
                    </div>
                }
                .into_any()
            })}
        </Transition>
    }
}

#[component]
pub fn SettingsPage() -> impl IntoView {
    let version = RwSignal::new(0u32);
    let packs = crate::wire::resource(move || version.get(), |_| load_pack_labels());
    let message = RwSignal::new(None::<Result<String, String>>);
    let save = move |pack_id: String, label: String| {
        spawn_local(async move {
            match save_pack_label(pack_id.clone(), label).await {
                Ok(()) => {
                    message.set(Some(Ok(format!("Saved your label for {pack_id}."))));
                    version.update(|v| *v += 1);
                }
                Err(e) => message.set(Some(Err(e.to_string()))),
            }
        });
    };
    view! {
        <Title text="Settings"/>
        <PasswordForm/>
        <h1>"Your pack labels"</h1>
        <p class="muted">"The short label on each chip, as only you see it. Leave one blank to use the pack's own."</p>
        {move || message.get().map(|m| match m {
            Ok(text) => view! { <p class="notice" role="status">{text}</p> }.into_any(),
            Err(text) => view! { <p class="error" role="alert">{text}</p> }.into_any(),
        })}
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            <ErrorBoundary fallback=error_list>
                {move || Suspend::new(async move {
                    packs.await.map(|(mine, shipped)| {
                        let rows = mine
                            .into_iter()
                            .zip(shipped)
                            .map(|(pack, own)| {
                                let input = NodeRef::<leptos::html::Input>::new();
                                let pack_id = pack.pack_id.clone();
                                let custom = pack.short_label != own.short_label;
                                view! {
                                    <tr data-pack=pack.pack_id.clone()>
                                        <td>{pack.display_name.clone()}</td>
                                        <td><code>{own.short_label.clone()}</code></td>
                                        <td>
                                            <input
                                                node_ref=input
                                                aria-label=format!("Your label for {}", pack.display_name)
                                                maxlength="3"
                                                size="4"
                                                value=if custom { pack.short_label.clone() } else { String::new() }
                                            />
                                        </td>
                                        <td>
                                            <button on:click=move |_| {
                                                let label = input.get().map(|i| i.value()).unwrap_or_default();
                                                save(pack_id.clone(), label);
                                            }>"Save"</button>
                                        </td>
                                    </tr>
                                }
                            })
                            .collect_view();
                        view! {
                            <table class="labels">
                                <thead><tr><th>"Pack"</th><th>"Its label"</th><th>"Yours"</th><th></th></tr></thead>
                                <tbody>{rows}</tbody>
                            </table>
                        }
                    })
                })}
            </ErrorBoundary>
        </Transition>
        <super::my_chains::MyChains/>
    }
}

/// What the Settings page says after `password=outcome`.
fn password_message(outcome: &str) -> Option<(bool, &'static str)> {
    Some(match outcome {
        "changed" => (
            true,
            "Your password is changed. Your other sessions are signed out.",
        ),
        "wrong" => (false, "That is not your current password. Nothing changed."),
        "short" => (false, "Use at least 10 characters. Nothing changed."),
        "mismatch" => (false, "The two new passwords differ. Nothing changed."),
        "limited" => (
            false,
            "Too many wrong passwords from here: wait a few minutes, then try again. Nothing changed.",
        ),
        _ => return None,
    })
}

/// Changing one's own password: a plain form post, so it works before the
/// page is interactive.
#[component]
fn PasswordForm() -> impl IntoView {
    let query = use_query_map();
    let message = move || {
        query
            .read()
            .get("password")
            .and_then(|o| password_message(&o))
    };
    view! {
        <h1>"Your password"</h1>
        {move || message().map(|(ok, text)| if ok {
            view! { <p class="notice" role="status">{text}</p> }.into_any()
        } else {
            view! { <p class="error" role="alert">{text}</p> }.into_any()
        })}
        <form class="password" method="post" action="/auth/password">
            <label>"Current password" <input type="password" name="current" autocomplete="current-password" required/></label>
            <label>"New password" <input type="password" name="password" autocomplete="new-password" minlength="10" required/></label>
            <label>"New password again" <input type="password" name="again" autocomplete="new-password" minlength="10" required/></label>
            <button type="submit">"Change password"</button>
        </form>
    }
}

/// What the set-password page says after `error=code`.
fn set_password_message(code: &str) -> Option<&'static str> {
    match code {
        "link" => Some("This link was used already, has expired or is not one we made. Ask an admin for a new one."),
        "short" => Some("Use at least 10 characters."),
        "mismatch" => Some("The two passwords differ."),
        _ => None,
    }
}

/// Where a set-password link lands. The link's secret is after `#`, which
/// the browser never sends: the page copies it into the form.
#[component]
pub fn SetPasswordPage() -> impl IntoView {
    let query = use_query_map();
    let message = move || {
        query
            .read()
            .get("error")
            .and_then(|c| set_password_message(&c))
    };
    let token = RwSignal::new(String::new());
    Effect::new(move |_| {
        let hash = window().location().hash().unwrap_or_default();
        token.set(hash.trim_start_matches('#').to_owned());
    });
    view! {
        <Title text="Choose your password"/>
        <section class="sign-in">
            <h1>"Choose your password"</h1>
            {move || message().map(|m| view! { <p class="notice" role="alert">{m}</p> })}
            <form method="post" action="/auth/set-password">
                <input type="hidden" name="token" prop:value=move || token.get()/>
                <label>"Password" <input type="password" name="password" autocomplete="new-password" minlength="10" required autofocus/></label>
                <label>"Password again" <input type="password" name="again" autocomplete="new-password" minlength="10" required/></label>
                <button type="submit" disabled=move || token.get().is_empty()>"Set password and sign in"</button>
            </form>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limited_sign_in_says_how_long_to_wait() {
        let said = |wait| sign_in_message("limited", wait).unwrap();
        assert_eq!(
            said(Some(4)),
            "Too many attempts. Wait 4 seconds, then try again."
        );
        assert_eq!(
            said(Some(600)),
            "Too many attempts. Wait 10 minutes, then try again."
        );
        assert_eq!(
            said(None),
            "Too many attempts. Wait a little, then try again."
        );
        assert_eq!(
            sign_in_message("<script>", None),
            None,
            "only known codes are shown"
        );
    }

    #[test]
    fn password_forms_name_what_went_wrong_and_nothing_else() {
        assert_eq!(password_message("changed").map(|(ok, _)| ok), Some(true));
        for bad in ["wrong", "short", "mismatch", "limited"] {
            assert_eq!(
                password_message(bad).map(|(ok, _)| ok),
                Some(false),
                "{bad}"
            );
            assert!(set_password_message(bad).is_some() || ["wrong", "limited"].contains(&bad));
        }
        assert!(set_password_message("link")
            .unwrap()
            .contains("Ask an admin"));
        assert_eq!(password_message("anything"), None);
    }
}
