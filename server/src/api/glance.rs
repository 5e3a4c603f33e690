//! Big sets at a glance through the REST door: the compact lines (one per
//! record) and the set's facets.

use axum::extract::{Path, State};
use axum::Json;
use model::{CompactPage, SetFacets};

use super::error::ErrorBody;
use super::extract::{ApiQuery, Caller};
use super::record_sets::Page;
use super::ApiError;
use crate::router::AppState;

/// `GET /api/record-sets/{id}/lines?offset=0&limit=100&filter=all&search=`:
/// one line per record (its chips' states in the packs' order and its best
/// candidate, ranked by how many connectors found it, then by how well its
/// title names the record); `total` counts every match.
#[utoipa::path(
    get, path = "/api/record-sets/{id}/lines", tag = "record sets",
    params(("id" = i64, Path, description = "The record set"), Page),
    responses((status = 200, body = CompactPage), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn lines(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
    ApiQuery(page): ApiQuery<Page>,
) -> Result<Json<CompactPage>, ApiError> {
    Ok(Json(
        state
            .engine
            .compact_page(
                &who,
                id,
                (page.filter, &page.search),
                page.offset,
                page.limit,
            )
            .await?,
    ))
}

/// `GET /api/record-sets/{id}/facets`: how many records each filter shows,
/// each pack's chips per state, what each connector found (and in how many
/// records it found a single untriaged item), and how many items are
/// triaged.
#[utoipa::path(
    get, path = "/api/record-sets/{id}/facets", tag = "record sets",
    params(("id" = i64, Path, description = "The record set")),
    responses((status = 200, body = SetFacets), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn facets(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<Json<SetFacets>, ApiError> {
    Ok(Json(state.engine.set_facets(&who, id).await?))
}
