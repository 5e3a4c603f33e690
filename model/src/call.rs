//! Capability calls: a query walked through a capability's chain with no
//! record behind it, answered in the envelope every fire and job uses.

use serde::{Deserialize, Serialize};

/// `POST /api/capabilities/{capability}/call`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CallRequest {
    /// What to look for, as a person would type it.
    pub query: String,
    /// At most this many results (1 to 50; 10 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u32>,
    /// Fire exactly this connector instead of walking the chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// Answer at once with `pending` and the call's id instead of waiting.
    #[serde(default, rename = "async")]
    pub run_async: bool,
}

/// One result a call found. Provider text: show it as text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CallResult {
    pub url: String,
    pub title: String,
    pub snippet: String,
    /// The connector that found it.
    pub connector_id: String,
}

/// One result of a call, of its verb's kind: a search's result, a page
/// `web.scrape` read, a place, a review.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum CallOutput {
    Found(CallResult),
    Page(crate::ScrapedPage),
    Place(crate::Place),
    Review(crate::Review),
}

/// One attempt of a call, as its receipt keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CallAttempt {
    pub connector_id: String,
    /// Who called (a user's email).
    pub actor: String,
    /// Unix milliseconds.
    pub fired_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
    /// How it ended; empty while in flight.
    #[serde(flatten)]
    pub end: crate::AttemptEnd,
}
