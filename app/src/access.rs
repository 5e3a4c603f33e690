//! What every server function does first: find the engine and the caller.
//! Server functions are public endpoints; each one asks for the caller here
//! and checks that what it touches is in the caller's workspace.

#[cfg(feature = "ssr")]
pub mod ssr {
    use engine::ops::OpError;
    use engine::store::Owned;
    use engine::tenancy::Principal;
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
        engine::ops::require_admin(&who).map_err(fail)?;
        Ok(who)
    }

    /// The engine and the caller, for a server function whose operation
    /// checks what the caller may touch itself (the operations layer's).
    pub fn door() -> Result<(engine::Engine, Principal), ServerFnError> {
        Ok((engine()?, caller()?))
    }

    /// The engine and the caller, after checking `owned` is in the caller's
    /// workspace (anything else is not found).
    pub async fn reach(owned: Owned) -> Result<(engine::Engine, Principal), ServerFnError> {
        let engine = engine()?;
        let who = caller()?;
        engine.authorize(&who, owned).await.map_err(fail)?;
        Ok((engine, who))
    }

    /// A failure as a person reads it, answered with the status of its kind
    /// (the operations layer's one mapping); internal details stay in the
    /// log.
    pub fn fail(e: impl Into<OpError>) -> ServerFnError {
        let e = e.into();
        set_status(
            http::StatusCode::from_u16(e.status())
                .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR),
        );
        match e {
            OpError::Internal(source) => {
                tracing::error!(error = %source, "A request failed.");
                ServerFnError::new("the server could not do that; try again")
            }
            other => ServerFnError::new(other.to_string()),
        }
    }
}
