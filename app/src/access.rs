//! What every server function does first: find the engine and the caller.
//! Server functions are public endpoints; each one asks for the caller here
//! and checks that what it touches is in the caller's workspace.

#[cfg(feature = "ssr")]
pub mod ssr {
    use engine::store::{Owned, Principal};
    use leptos::prelude::*;

    pub fn engine() -> Result<engine::Engine, ServerFnError> {
        use_context::<engine::Engine>()
            .ok_or_else(|| ServerFnError::new("the engine is not available"))
    }

    fn set_status(status: http::StatusCode) {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(status);
        }
    }

    /// The signed-in caller, if any (the sign-in page renders without one).
    pub fn signed_in() -> Option<Principal> {
        use_context::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>().cloned())
    }

    /// The signed-in caller, or an error answered 401.
    pub fn caller() -> Result<Principal, ServerFnError> {
        signed_in().ok_or_else(|| {
            set_status(http::StatusCode::UNAUTHORIZED);
            ServerFnError::new("sign in first")
        })
    }

    /// The caller when they are an admin of their workspace; 403 otherwise.
    pub fn admin() -> Result<Principal, ServerFnError> {
        let who = caller()?;
        if who.is_admin() {
            Ok(who)
        } else {
            set_status(http::StatusCode::FORBIDDEN);
            Err(ServerFnError::new(format!(
                "only an admin of workspace {:?} may do this",
                who.workspace_name
            )))
        }
    }

    /// The engine and the caller, after checking `owned` is in the caller's
    /// workspace (anything else is not found).
    pub async fn reach(owned: Owned) -> Result<(engine::Engine, Principal), ServerFnError> {
        let engine = engine()?;
        let who = caller()?;
        engine.authorize(&who, owned).await.map_err(fail)?;
        Ok((engine, who))
    }

    /// A failure as a person reads it; internal details stay in the log.
    pub fn fail(e: impl std::fmt::Display) -> ServerFnError {
        let text = e.to_string();
        if text.contains("not found") || text.starts_with("no pack") {
            set_status(http::StatusCode::NOT_FOUND);
            ServerFnError::new(text)
        } else {
            tracing::error!(error = %text, "A request failed.");
            ServerFnError::new("the server could not do that; try again")
        }
    }
}
