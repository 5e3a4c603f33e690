//! The caller's own account (`/me`) and the workspace's members (`/members`,
//! changed by admins only).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use model::{Member, PersonalChain, Role, Viewer};
use serde::{Deserialize, Serialize};

use super::error::ErrorBody;
use super::extract::{AdminCaller, ApiJson, Caller};
use super::ApiError;
use crate::router::AppState;

/// `GET /api/me`: who the caller is, where, and their own pack labels.
#[utoipa::path(
    get, path = "/api/me", tag = "account",
    responses((status = 200, body = Viewer))
)]
pub async fn me(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Viewer>, ApiError> {
    Ok(Json(state.engine.viewer(&who).await?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PackLabelBody {
    /// The caller's own short label for the pack; `null` or blank restores
    /// the pack's.
    pub label: Option<String>,
}

/// `PUT /api/me/pack-labels/{pack}` `{"label": "fb" | null}`
#[utoipa::path(
    put, path = "/api/me/pack-labels/{pack}", tag = "account",
    params(("pack" = String, Path, description = "The pack")),
    request_body = PackLabelBody,
    responses((status = 200, body = Viewer), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn set_pack_label(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(pack): Path<String>,
    ApiJson(body): ApiJson<PackLabelBody>,
) -> Result<Json<Viewer>, ApiError> {
    state
        .engine
        .set_pack_label(&who, &pack, body.label.as_deref())
        .await?;
    Ok(Json(state.engine.viewer(&who).await?))
}

/// `GET /api/me/chains`: the caller's own orders of packs' connectors in
/// their workspace.
#[utoipa::path(
    get, path = "/api/me/chains", tag = "account",
    responses((status = 200, body = Vec<PersonalChain>))
)]
pub async fn my_chains(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<PersonalChain>>, ApiError> {
    Ok(Json(state.engine.my_chains(&who).await?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PersonalChainBody {
    /// Connector ids in the order the caller's fires of the pack try them
    /// (one: always that one); empty restores the workspace's chain.
    pub connectors: Vec<String>,
}

/// `PUT /api/me/packs/{pack}/chain` `{"connectors": ["serpapi", "searxng"]}`:
/// the caller's own order of a pack's connectors. It comes after a fire's
/// pick and a record's "always start with", before the bundle's and the
/// pack's chain, for the caller's fires and chips only.
#[utoipa::path(
    put, path = "/api/me/packs/{pack}/chain", tag = "account",
    params(("pack" = String, Path, description = "The pack")),
    request_body = PersonalChainBody,
    responses((status = 200, body = PersonalChain), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 404, description = "No such pack in the caller's workspace", body = ErrorBody))
)]
pub async fn set_my_chain(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(pack): Path<String>,
    ApiJson(body): ApiJson<PersonalChainBody>,
) -> Result<Json<PersonalChain>, ApiError> {
    Ok(Json(
        state
            .engine
            .set_my_chain(&who, &pack, &body.connectors)
            .await?,
    ))
}

/// `GET /api/members`: the caller's workspace's members.
#[utoipa::path(
    get, path = "/api/members", tag = "members",
    responses((status = 200, body = Vec<Member>))
)]
pub async fn members(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<Member>>, ApiError> {
    Ok(Json(state.engine.members(&who).await?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMember {
    pub email: String,
    pub role: Role,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AddedMember {
    pub user_id: i64,
    /// Set when the person has no password yet: the path (after the site's
    /// address) of a one-time link to choose one, valid 7 days. Hand it to
    /// them; it is not kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_password_link: Option<String>,
}

/// `POST /api/members` `{"email": "...", "role": "member"}` (admins): adds a
/// person. A new account has no password: the answer carries a link for the
/// person to choose one. An existing account only gains the membership.
#[utoipa::path(
    post, path = "/api/members", tag = "members",
    request_body = NewMember,
    responses((status = 201, body = AddedMember), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody))
)]
pub async fn add_member(
    State(state): State<AppState>,
    AdminCaller(who): AdminCaller,
    ApiJson(body): ApiJson<NewMember>,
) -> Result<(StatusCode, Json<AddedMember>), ApiError> {
    let added = state
        .engine
        .add_member(&who, &body.email, body.role)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(AddedMember {
            user_id: added.user_id,
            set_password_link: added.set_password_link,
        }),
    ))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleBody {
    pub role: Role,
}

/// `PUT /api/members/{id}` `{"role": "admin"}` (admins)
#[utoipa::path(
    put, path = "/api/members/{id}", tag = "members",
    params(("id" = i64, Path, description = "The member's user id")),
    request_body = RoleBody,
    responses((status = 204, description = "Changed"), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn set_role(
    State(state): State<AppState>,
    AdminCaller(who): AdminCaller,
    Path(user_id): Path<i64>,
    ApiJson(body): ApiJson<RoleBody>,
) -> Result<StatusCode, ApiError> {
    state
        .engine
        .set_member_role(&who, user_id, body.role)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /api/members/{id}` (admins): their sessions and tokens in
/// this workspace stop at once.
#[utoipa::path(
    delete, path = "/api/members/{id}", tag = "members",
    params(("id" = i64, Path, description = "The member's user id")),
    responses((status = 204, description = "Removed"), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 403, description = "Only an admin may do this", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn remove_member(
    State(state): State<AppState>,
    AdminCaller(who): AdminCaller,
    Path(user_id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    state.engine.remove_member(&who, user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
