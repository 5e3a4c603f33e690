//! Record sets: list, CSV import, delete, records with their chips, export.

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use engine::import::ImportLimits;
use model::{ExportedRecord, ImportReport, RecordFilter, RecordSetSummary, RecordsPage};
use serde::Deserialize;

use super::error::ErrorBody;
use super::extract::{ApiBytes, ApiQuery, Caller};
use super::ApiError;
use crate::router::AppState;
use engine::ops::OpError;

/// `GET /api/record-sets`
#[utoipa::path(
    get, path = "/api/record-sets", tag = "record sets",
    responses((status = 200, body = Vec<RecordSetSummary>))
)]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<RecordSetSummary>>, ApiError> {
    Ok(Json(state.engine.record_sets(&who).await?))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ImportParams {
    pub name: String,
    pub bundle: String,
}

/// `POST /api/record-sets?name=N&bundle=B` with a CSV body.
#[utoipa::path(
    post, path = "/api/record-sets", tag = "record sets",
    params(ImportParams),
    request_body(content = String, content_type = "text/csv", description = "The CSV file: a name column and any others"),
    responses((status = 201, body = ImportReport), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 413, description = "The body is over the limit", body = ErrorBody), (status = 429, description = "The workspace has too many imports running; Retry-After says when to ask again", body = ErrorBody))
)]
pub async fn import(
    State(state): State<AppState>,
    Caller(who): Caller,
    ApiQuery(params): ApiQuery<ImportParams>,
    body: ApiBytes,
) -> Result<(StatusCode, Json<ImportReport>), ApiError> {
    let limits = ImportLimits::default();
    let report = state
        .engine
        .import_record_set(
            &who,
            &params.name,
            &params.bundle,
            body.bytes.to_vec(),
            limits,
        )
        .await?;
    Ok((StatusCode::CREATED, Json(report)))
}

/// `DELETE /api/record-sets/{id}`
#[utoipa::path(
    delete, path = "/api/record-sets/{id}", tag = "record sets",
    params(("id" = i64, Path, description = "The record set")),
    responses((status = 204, description = "Deleted"), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn remove(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
) -> Result<StatusCode, ApiError> {
    state.engine.delete_record_set(&who, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct Page {
    #[serde(default)]
    pub offset: i64,
    #[serde(default = "default_limit")]
    pub limit: i64,
    #[serde(default)]
    pub filter: RecordFilter,
    #[serde(default)]
    pub search: String,
}

fn default_limit() -> i64 {
    100
}

/// `GET /api/record-sets/{id}/records?offset=0&limit=100&filter=all&search=`:
/// a page of records with their chips; `total` counts every match.
#[utoipa::path(
    get, path = "/api/record-sets/{id}/records", tag = "record sets",
    params(("id" = i64, Path, description = "The record set"), Page),
    responses((status = 200, body = RecordsPage), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn records(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
    ApiQuery(page): ApiQuery<Page>,
) -> Result<Json<RecordsPage>, ApiError> {
    Ok(Json(
        state
            .engine
            .records_of(&who, id, page.filter, &page.search, page.offset, page.limit)
            .await?,
    ))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportParams {
    #[serde(default = "default_format")]
    pub format: String,
}

fn default_format() -> String {
    "json".to_owned()
}

/// `GET /api/record-sets/{id}/export?format=csv|json`: every record with its
/// accepted items (the curated layer) and their provenance.
#[utoipa::path(
    get, path = "/api/record-sets/{id}/export", tag = "record sets",
    params(("id" = i64, Path, description = "The record set"), ExportParams),
    responses((status = 200, description = "Every record with its accepted items", content((Vec<ExportedRecord> = "application/json"), (String = "text/csv"))), (status = 400, description = "Bad input; the detail names the field", body = ErrorBody), (status = 404, description = "Not in the caller's workspace", body = ErrorBody))
)]
pub async fn export(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Caller(who): Caller,
    ApiQuery(params): ApiQuery<ExportParams>,
) -> Result<Response, ApiError> {
    let format = params.format.to_ascii_lowercase();
    if format != "csv" && format != "json" {
        return Err(ApiError::invalid(format!(
            "format: expected csv or json, not {:?}",
            params.format
        )));
    }
    let (set, exported) = state.engine.export_record_set(&who, id).await?;
    let stem: String = set
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    if format == "json" {
        let disposition = format!("attachment; filename=\"{stem}.json\"");
        return Ok(([(header::CONTENT_DISPOSITION, disposition)], Json(exported)).into_response());
    }
    let csv = to_csv(&exported).map_err(|e| ApiError::from(OpError::Internal(e.into())))?;
    let disposition = format!("attachment; filename=\"{stem}.csv\"");
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        csv,
    )
        .into_response())
}

/// One row per accepted item; a record without any gets one row with empty
/// item columns. Record fields follow the record's name, in file order.
fn to_csv(records: &[ExportedRecord]) -> Result<String, csv::Error> {
    let mut field_names: Vec<&str> = Vec::new();
    for r in records {
        for f in &r.fields {
            if !field_names.contains(&f.name.as_str()) {
                field_names.push(&f.name);
            }
        }
    }
    let mut out = csv::Writer::from_writer(Vec::new());
    // Column names came from an imported file: as untrusted as its cells.
    let mut header: Vec<String> = vec!["record_id".to_owned(), "name".to_owned()];
    header.extend(field_names.iter().map(|n| csv_safe(n)));
    header.extend(
        [
            "intent",
            "state",
            "url",
            "title",
            "snippet",
            "connectors",
            "first_seen_at",
            "triaged_by",
            "triaged_at",
        ]
        .map(str::to_owned),
    );
    out.write_record(&header)?;
    for r in records {
        let mut base = vec![r.id.to_string(), csv_safe(&r.name)];
        for name in &field_names {
            base.push(
                r.fields
                    .iter()
                    .find(|f| f.name == *name)
                    .map(|f| csv_safe(&f.value))
                    .unwrap_or_default(),
            );
        }
        if r.accepted.is_empty() {
            let mut row = base.clone();
            row.extend(std::iter::repeat_n(String::new(), 9));
            out.write_record(&row)?;
        }
        for item in &r.accepted {
            let mut connectors: Vec<&str> = item
                .evidence
                .iter()
                .map(|e| e.connector_id.as_str())
                .collect();
            connectors.dedup();
            let mut row = base.clone();
            row.extend([
                item.intent.name().to_owned(),
                item.state.name().to_owned(),
                csv_safe(&item.url),
                csv_safe(&item.title),
                csv_safe(&item.snippet),
                connectors.join(" "),
                item.first_seen_at.to_string(),
                csv_safe(item.triaged_by.as_deref().unwrap_or_default()),
                item.triaged_at.map(|t| t.to_string()).unwrap_or_default(),
            ]);
            out.write_record(&row)?;
        }
    }
    let bytes = out.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Provider text opened in a spreadsheet must not run as a formula.
pub(super) fn csv_safe(text: &str) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_cell_of_an_export_runs_as_a_formula_not_even_a_column_name() {
        let records = vec![ExportedRecord {
            id: 1,
            name: "=HYPERLINK(\"http://evil.example\")".to_owned(),
            fields: vec![model::Field {
                name: "=cmd|' /C calc'!A0".to_owned(),
                value: "@SUM(1+1)".to_owned(),
            }],
            accepted: Vec::new(),
        }];
        let csv = to_csv(&records).unwrap();
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let header = reader.headers().unwrap().clone();
        let row = reader.records().next().unwrap().unwrap();
        for cell in header.iter().chain(row.iter()) {
            assert!(
                !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                "{cell:?} in {csv}"
            );
        }
        assert_eq!(&header[2], "'=cmd|' /C calc'!A0");
    }
}
