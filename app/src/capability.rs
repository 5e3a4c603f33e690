//! The pages' door to capability calls: a query through a capability's
//! chain with no record, answered in the same envelope as the REST and MCP
//! doors.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use model::{CallRequest, CallResult, Envelope};

#[cfg(feature = "ssr")]
use crate::access::ssr;

/// Walks `capability`'s chain for `request.query` as the signed-in person.
#[server(input = Json)]
pub async fn call_capability(
    capability: String,
    request: CallRequest,
) -> Result<Envelope<CallResult>, ServerFnError> {
    let (engine, who) = ssr::door()?;
    let envelope = engine
        .call_capability(&who, &capability, request)
        .await
        .map_err(ssr::fail)?;
    // A search's results are all search results.
    Ok(envelope.filter_map(|r| match r {
        model::CallOutput::Found(found) => Some(found),
        _ => None,
    }))
}
