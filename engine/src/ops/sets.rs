//! Operations on record sets: listing, importing and deleting them, reading
//! a page of records (alone, or with what the triage view shows under
//! them), exporting the curated layer, and naming a bundle's packs.

use model::{
    ExportedRecord, ImportReport, Item, RecordFilter, RecordSetSummary, RecordsPage, TriagePage,
};

use crate::import::{parse_csv_in_batches, ImportError, ImportLimits, ParsedCsv};
use crate::read_models::{PageAsked, MAX_PAGE};
use crate::store::{NewRecordSet, Owned, StoreError};
use crate::tenancy::Principal;
use crate::Engine;

use super::OpError;

/// Imports one workspace may have running at once in a process: each holds
/// a file of up to 20 MiB and a blocking thread.
pub const MAX_IMPORTS_AT_ONCE: usize = 2;

impl Engine {
    /// The record sets of the caller's workspace, newest first.
    pub async fn record_sets(&self, who: &Principal) -> Result<Vec<RecordSetSummary>, OpError> {
        Ok(self.store.list_record_sets(who.workspace_id).await?)
    }

    /// Deletes a record set with everything found for it.
    pub async fn delete_record_set(&self, who: &Principal, set_id: i64) -> Result<(), OpError> {
        self.authorize(who, Owned::RecordSet(set_id)).await?;
        Ok(self.store.delete_record_set(set_id).await?)
    }

    /// A page of a set's records with their chips, the packs labelled as
    /// the caller labels them. `total` counts every match.
    pub async fn records_of(
        &self,
        who: &Principal,
        set_id: i64,
        filter: RecordFilter,
        search: &str,
        offset: i64,
        limit: i64,
    ) -> Result<RecordsPage, OpError> {
        let page = PageAsked {
            set_id,
            filter,
            search,
            offset,
            limit,
        };
        self.check_page(who, &page).await?;
        let since = match filter {
            RecordFilter::Changed => self.store.last_visit(who.user_id, set_id).await?,
            _ => None,
        };
        self.page_for(who, &page, since).await
    }

    /// What the triage view shows for a page: the records, the items under
    /// them, the set's newest job, the event id its live stream resumes
    /// after, and when the caller's previous visit ended. Reading it is a
    /// visit.
    pub async fn triage_page(
        &self,
        who: &Principal,
        set_id: i64,
        filter: RecordFilter,
        search: &str,
        offset: i64,
        limit: i64,
    ) -> Result<TriagePage, OpError> {
        // Taken before anything is read: an event after it may or may not be
        // in what follows, and the stream delivers it either way.
        let event_id = self.events.next_id().saturating_sub(1);
        let asked = PageAsked {
            set_id,
            filter,
            search,
            offset,
            limit,
        };
        self.check_page(who, &asked).await?;
        let since = self
            .store
            .visit_set(who.user_id, set_id, self.store.now_ms())
            .await?;
        let page = self.page_for(who, &asked, since).await?;
        let ids: Vec<i64> = page.records.iter().map(|r| r.id).collect();
        let items = self.store.items_of(&ids).await?;
        let job = self.store.jobs_of(set_id).await?.into_iter().next();
        Ok(TriagePage {
            page,
            items,
            job,
            event_id,
            since,
        })
    }

    /// The caller may read the set, and the page is one that can be asked.
    pub(super) async fn check_page(
        &self,
        who: &Principal,
        page: &PageAsked<'_>,
    ) -> Result<(), OpError> {
        self.authorize(who, Owned::RecordSet(page.set_id)).await?;
        if page.offset < 0 || !(1..=MAX_PAGE).contains(&page.limit) {
            return Err(OpError::Invalid(format!(
                "offset must be 0 or more and limit 1 to {MAX_PAGE}"
            )));
        }
        Ok(())
    }

    /// A checked page as `who` sees it (their chip labels); `since` is when
    /// their previous visit ended, for the changed filter.
    async fn page_for(
        &self,
        who: &Principal,
        page: &PageAsked<'_>,
        since: Option<i64>,
    ) -> Result<RecordsPage, OpError> {
        let mut read = self.records_page(who.user_id, page, since).await?;
        self.relabel(who, &mut read.packs).await?;
        Ok(read)
    }

    /// The chips of some records of a set the caller may read (ids that
    /// are not the set's are left out), each with the connector a plain
    /// click fires first: what a page reads again when chips changed.
    pub async fn chips_of_records(
        &self,
        who: &Principal,
        set_id: i64,
        record_ids: &[i64],
    ) -> Result<Vec<(i64, Vec<model::Chip>)>, OpError> {
        self.authorize(who, Owned::RecordSet(set_id)).await?;
        Ok(self.chips_of(who.user_id, set_id, record_ids).await?)
    }

    /// Every record of a set with its accepted items (the curated layer)
    /// and their provenance, and the set itself.
    pub async fn export_record_set(
        &self,
        who: &Principal,
        set_id: i64,
    ) -> Result<(RecordSetSummary, Vec<ExportedRecord>), OpError> {
        self.authorize(who, Owned::RecordSet(set_id)).await?;
        let set = self.store.record_set(set_id).await?;
        let mut exported = Vec::new();
        let mut offset = 0;
        loop {
            let page = self.store.records(set_id, offset, 1000).await?;
            if page.is_empty() {
                break;
            }
            offset += page.len() as i64;
            let ids: Vec<i64> = page.iter().map(|r| r.id).collect();
            let mut items = self.store.items_of(&ids).await?;
            items.retain(|i| i.state.is_accepted());
            for r in page {
                let accepted: Vec<Item> = items
                    .iter()
                    .filter(|i| i.record_id == r.id)
                    .cloned()
                    .collect();
                exported.push(ExportedRecord {
                    id: r.id,
                    name: r.name,
                    fields: r.fields,
                    accepted,
                });
            }
        }
        Ok((set, exported))
    }

    /// Validates and stores a CSV file as a new record set of the caller's
    /// workspace under `bundle_id`.
    /// Bad lines are reported and the good ones stored; a file where no line
    /// is good stores nothing.
    pub async fn import_record_set(
        &self,
        who: &Principal,
        name: &str,
        bundle_id: &str,
        csv: Vec<u8>,
        limits: ImportLimits,
    ) -> Result<ImportReport, OpError> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(OpError::Invalid(
                "name: give the record set a name of 1 to 200 characters".to_owned(),
            ));
        }
        let catalog = self.catalog_in(Some(who.workspace_id)).await?;
        if catalog.bundle(bundle_id).is_none() {
            let known: Vec<String> = catalog
                .bundles()
                .iter()
                .map(|b| b.bundle_id.clone())
                .collect();
            return Err(OpError::Invalid(format!(
                "bundle: no bundle {bundle_id:?} (known: {})",
                known.join(", ")
            )));
        }
        let _slot = self.imports.take_or_refuse(
            who.workspace_id,
            MAX_IMPORTS_AT_ONCE,
            std::time::Duration::from_secs(5),
            || format!("imports: this workspace has {MAX_IMPORTS_AT_ONCE} imports running; try again when one ends"),
        )?;
        let mut writing = self
            .store
            .begin_record_set(who.workspace_id, name, bundle_id, false)
            .await?;
        let (imported, parsed) = match write_parsed(&mut writing, csv, limits).await {
            Ok(done) => done,
            Err(e) => {
                // Nothing of a refused file is kept.
                if let Err(gone) = writing.abandon().await {
                    tracing::warn!(error = %gone, "Deleting a refused import failed; the sweep will.");
                }
                return Err(e);
            }
        };
        let id = writing.commit().await?;
        tracing::info!(
            record_set = id,
            imported,
            rejected = parsed.rejected_count,
            "Record set imported."
        );
        Ok(ImportReport {
            id,
            imported,
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

/// Parses `csv` on a blocking thread (20 MB is CPU work) and writes its
/// records into `writing` a batch at a time while it reads on, so an import
/// holds a few batches, never the whole file's records; how many were
/// written, and what the parser reports. A file with no good line is an
/// error.
async fn write_parsed(
    writing: &mut NewRecordSet,
    csv: Vec<u8>,
    limits: ImportLimits,
) -> Result<(u64, ParsedCsv), OpError> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(2);
    let parser = tokio::task::spawn_blocking(move || {
        parse_csv_in_batches(&csv, limits, |batch| tx.blocking_send(batch).is_ok())
    });
    let mut imported = 0u64;
    let mut written = Ok(());
    while let Some(batch) = rx.recv().await {
        imported += batch.len() as u64;
        written = writing.add(&batch).await;
        if written.is_err() {
            break;
        }
    }
    drop(rx);
    let parsed = parser
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "The CSV parser stopped.");
            OpError::Invalid("CSV: the file could not be read".to_owned())
        })?
        .map_err(|e| match e {
            ImportError::TooLarge { .. }
            | ImportError::TooManyRecords { .. }
            | ImportError::TooMuchStored { .. } => OpError::TooLarge(e.to_string()),
            other => OpError::Invalid(format!("CSV: {other}")),
        })?;
    written?;
    if imported == 0 {
        return Err(OpError::Invalid(match parsed.rejected.first() {
            Some(r) => format!(
                "CSV: no line could be imported ({} rejected; line {}: {})",
                parsed.rejected_count, r.line, r.reason
            ),
            None => "CSV: the file has a header but no records".to_owned(),
        }));
    }
    Ok((imported, parsed))
}
