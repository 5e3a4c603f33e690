//! The typed verbs' routes: each its own input and output types, so the
//! OpenAPI document shows them as the registry lists them. They answer the
//! envelope every call does; a pending one is read at `GET /api/jobs/{id}`.

use axum::extract::State;
use axum::response::Response;

use model::{
    CallResult, DiscoverRequest, Envelope, MapsSearchRequest, Place, PlaceRequest, Review,
    ReviewsRequest, ScrapeRequest, ScrapedPage,
};

use super::error::ErrorBody;
use super::extract::{ApiJson, Caller};
use super::jobs::answered;
use super::ApiError;
use crate::router::AppState;

/// `POST /api/capabilities/web.scrape/call` `{"urls": [...], "connector"?,
/// "async"?}`: reads each address's page through the connectors serving
/// `crawl.extract` (the site crawler through the outbound guard first).
/// One result per address, in the order asked: `ok` with the page's main
/// text and metadata, or `failed` with why; a failed page never fails the
/// batch. More than five addresses (or `async`) answer `pending` at once;
/// progress counts addresses.
#[utoipa::path(
    post, path = "/api/capabilities/web.scrape/call", tag = "calls",
    request_body = ScrapeRequest,
    responses(
        (status = 200, description = "Every page read or failed (or the call cancelled)", body = Envelope<ScrapedPage>),
        (status = 202, description = "Still reading: read it again by its job_id", body = Envelope<ScrapedPage>),
        (status = 400, description = "Bad input; the detail names the field", body = ErrorBody),
        (status = 404, description = "No connector serves crawl.extract here", body = ErrorBody),
        (status = 429, description = "The workspace has too many calls walking; Retry-After says when to ask again", body = ErrorBody),
    )
)]
pub async fn scrape(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<ScrapeRequest>,
) -> Result<Response, ApiError> {
    Ok(answered(state.engine.scrape(&who, body).await?))
}

/// `POST /api/capabilities/web.discover/call` `{"query": "...", "top_k"?,
/// "connector"?, "async"?}`: pages about the query from the connectors
/// serving `search.web` (cheapest first), each result naming its
/// connector (`connector_id`, the provider). `failed` when none answered.
#[utoipa::path(
    post, path = "/api/capabilities/web.discover/call", tag = "calls",
    request_body = DiscoverRequest,
    responses(
        (status = 200, description = "The search ended: completed, failed or cancelled", body = Envelope<CallResult>),
        (status = 202, description = "Still searching: read it again by its job_id", body = Envelope<CallResult>),
        (status = 400, description = "Bad input; the detail names the field", body = ErrorBody),
        (status = 404, description = "No connector serves search.web here", body = ErrorBody),
        (status = 429, description = "The workspace has too many calls walking; Retry-After says when to ask again", body = ErrorBody),
    )
)]
pub async fn discover(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<DiscoverRequest>,
) -> Result<Response, ApiError> {
    Ok(answered(state.engine.discover(&who, body).await?))
}

/// `POST /api/capabilities/maps.search/call` `{"query": "...", "near"?,
/// "max_results"?, "connector"?, "async"?}`: places matching the query
/// from the connectors serving `maps.search` (OpenStreetMap's Nominatim
/// first: free, one request a second; then SerpApi's and Google's with
/// their keys). Each place's `id` is what `maps.place` and `maps.reviews`
/// take.
#[utoipa::path(
    post, path = "/api/capabilities/maps.search/call", tag = "calls",
    request_body = MapsSearchRequest,
    responses(
        (status = 200, description = "The search ended: completed, failed or cancelled", body = Envelope<Place>),
        (status = 202, description = "Still searching: read it again by its job_id", body = Envelope<Place>),
        (status = 400, description = "Bad input; the detail names the field", body = ErrorBody),
        (status = 404, description = "No connector serves maps.search here", body = ErrorBody),
        (status = 429, description = "The workspace has too many calls walking; Retry-After says when to ask again", body = ErrorBody),
    )
)]
pub async fn maps_search(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<MapsSearchRequest>,
) -> Result<Response, ApiError> {
    Ok(answered(state.engine.maps_search(&who, body).await?))
}

/// `POST /api/capabilities/maps.place/call` `{"place_id": "osm:N240109189",
/// "connector"?, "async"?}`: the place read again from a connector that
/// reads its id system.
#[utoipa::path(
    post, path = "/api/capabilities/maps.place/call", tag = "calls",
    request_body = PlaceRequest,
    responses(
        (status = 200, description = "Read, or failed with each connector's reason", body = Envelope<Place>),
        (status = 202, description = "Still reading: read it again by its job_id", body = Envelope<Place>),
        (status = 400, description = "Bad input; the detail names the field", body = ErrorBody),
        (status = 404, description = "No connector serves maps.place here", body = ErrorBody),
        (status = 429, description = "The workspace has too many calls walking; Retry-After says when to ask again", body = ErrorBody),
    )
)]
pub async fn maps_place(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<PlaceRequest>,
) -> Result<Response, ApiError> {
    Ok(answered(state.engine.maps_place(&who, body).await?))
}

/// `POST /api/capabilities/maps.reviews/call` `{"place_id": "google:...",
/// "max_results"?, "connector"?, "async"?}`: what people wrote about the
/// place, from a connector that reads its id system.
#[utoipa::path(
    post, path = "/api/capabilities/maps.reviews/call", tag = "calls",
    request_body = ReviewsRequest,
    responses(
        (status = 200, description = "Read, or failed with each connector's reason", body = Envelope<Review>),
        (status = 202, description = "Still reading: read it again by its job_id", body = Envelope<Review>),
        (status = 400, description = "Bad input; the detail names the field", body = ErrorBody),
        (status = 404, description = "No connector serves maps.reviews here", body = ErrorBody),
        (status = 429, description = "The workspace has too many calls walking; Retry-After says when to ask again", body = ErrorBody),
    )
)]
pub async fn maps_reviews(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<ReviewsRequest>,
) -> Result<Response, ApiError> {
    Ok(answered(state.engine.maps_reviews(&who, body).await?))
}
