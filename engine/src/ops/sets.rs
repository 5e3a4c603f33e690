//! Operations on record sets: importing one, and naming its bundle's packs.

use model::ImportReport;

use crate::import::{parse_csv, ImportError, ImportLimits};
use crate::store::StoreError;
use crate::Engine;

/// Why an import stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportFailure {
    /// Bad input; the message names the field or the line.
    #[error("{0}")]
    Invalid(String),
    /// The file is over a size or record limit.
    #[error("{0}")]
    TooLarge(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Engine {
    /// Validates and stores a CSV file as a new record set of a workspace under
    /// `bundle_id`.
    /// Bad lines are reported and the good ones stored; a file where no line
    /// is good stores nothing.
    pub async fn import_record_set(
        &self,
        workspace_id: i64,
        name: &str,
        bundle_id: &str,
        csv: Vec<u8>,
        limits: ImportLimits,
    ) -> Result<ImportReport, ImportFailure> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(ImportFailure::Invalid(
                "name: give the record set a name of 1 to 200 characters".to_owned(),
            ));
        }
        let catalog = self.catalog_in(Some(workspace_id)).await?;
        if catalog.bundle(bundle_id).is_none() {
            let known: Vec<String> = catalog
                .bundles()
                .iter()
                .map(|b| b.bundle_id.clone())
                .collect();
            return Err(ImportFailure::Invalid(format!(
                "bundle: no bundle {bundle_id:?} (known: {})",
                known.join(", ")
            )));
        }
        // Parsing 20 MB is CPU work: it must not hold up the runtime's threads.
        let parsed = tokio::task::spawn_blocking(move || parse_csv(&csv, limits))
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "The CSV parser stopped.");
                ImportFailure::Invalid("CSV: the file could not be read".to_owned())
            })?
            .map_err(|e| match e {
                ImportError::TooLarge { .. }
                | ImportError::TooManyRecords { .. }
                | ImportError::TooMuchStored { .. } => ImportFailure::TooLarge(e.to_string()),
                other => ImportFailure::Invalid(format!("CSV: {other}")),
            })?;
        if parsed.records.is_empty() {
            return Err(ImportFailure::Invalid(match parsed.rejected.first() {
                Some(r) => format!(
                    "CSV: no line could be imported ({} rejected; line {}: {})",
                    parsed.rejected_count, r.line, r.reason
                ),
                None => "CSV: the file has a header but no records".to_owned(),
            }));
        }
        let id = self
            .store
            .create_record_set(workspace_id, name, bundle_id, false, &parsed.records)
            .await?;
        tracing::info!(
            record_set = id,
            imported = parsed.records.len(),
            rejected = parsed.rejected_count,
            "Record set imported."
        );
        Ok(ImportReport {
            id,
            imported: parsed.records.len() as u64,
            rejected: parsed.rejected,
            rejected_count: parsed.rejected_count,
        })
    }

    /// The pack ids of a record set's bundle, in roster order.
    pub async fn bundle_pack_ids(
        &self,
        set: &model::RecordSetSummary,
    ) -> Result<Vec<String>, StoreError> {
        Ok(self
            .catalog_in(set.workspace_id)
            .await?
            .bundle_packs(&set.bundle_id)
            .into_iter()
            .map(|(p, _)| p.pack_id.clone())
            .collect())
    }
}
