//! `web.scrape`: each address's page read by the connectors serving
//! `crawl.extract` (the site crawler through the outbound guard, Tavily's
//! extract, any manifest declaring it). Each address walks the chain on its
//! own, a few at once, its attempts kept as the call's receipts; a page
//! that cannot be read is a failed row with its reasons, never a failed
//! batch. The answer lists the pages in the order asked.

use futures::stream::{self, StreamExt};
use model::{
    AttemptEnd, CallOutput, Capability, Envelope, PageMetadata, PageStatus, Progress,
    ScrapeRequest, ScrapedPage, Skipped, WorkKind, MAX_SCRAPE_URLS, MAX_URL_BYTES,
};
use tokio_util::sync::CancellationToken;

use crate::connectors::builtin::page::PageText;
use crate::connectors::lens::Lens;
use crate::connectors::seam::{ConnectorResult, FireOpts};
use crate::execution::dispatch::walk::{Ledger, Subject};
use crate::execution::flow::Priority;
use crate::packs::chain::{self, ChainRequest};
use crate::store::{CallStatus, StoreError};
use crate::tenancy::Principal;
use crate::urlnorm::parse_web_url;
use crate::Engine;

use super::ledger::Receipts;
use super::{Launch, OpError};

/// Addresses of one call read at once (each connector's rate paces them
/// further).
const AT_ONCE: usize = 4;

impl Engine {
    /// `web.scrape`: reads each address's page (see the module's doc).
    /// More addresses than [`super::CallConfig::inline_urls`] answer
    /// `pending` at once; the envelope's progress counts addresses.
    pub async fn scrape(
        &self,
        who: &Principal,
        req: ScrapeRequest,
    ) -> Result<Envelope<CallOutput>, OpError> {
        let verb = model::verbs::SCRAPE;
        let ws = who.workspace_id;
        if req.urls.is_empty() || req.urls.len() > MAX_SCRAPE_URLS {
            return Err(OpError::Invalid(format!(
                "urls: give 1 to {MAX_SCRAPE_URLS} addresses to read"
            )));
        }
        let intent = Capability::from(verb.runs_through);
        let explicit = self.check_connector(ws, &intent, req.connector.as_deref())?;
        let scope = self.dispatcher.scope(Some(ws)).await?;
        let chain = chain::resolve(
            &ChainRequest {
                intent: Some(&intent),
                explicit: explicit.as_deref(),
                ..ChainRequest::default()
            },
            &scope.candidates(&self.registry),
        );
        let urls: Vec<String> = req.urls.iter().map(|u| u.trim().to_owned()).collect();
        let listed = urls.join("\n");
        let launch = Launch {
            name: verb.name,
            query: &listed,
            explicit: explicit.as_deref(),
            max_results: urls.len() as u32,
            total: urls.len() as u64,
            run_async: req.run_async || urls.len() > self.calls.inline_urls,
        };
        let actor = who.email.clone();
        self.launch(who, launch, move |engine, id, cancel| async move {
            let batch = Batch {
                id,
                workspace_id: ws,
                actor: &actor,
                intent: &intent,
                to_try: &chain.to_try,
                skipped: &chain.skipped,
                lens: &scope.lens,
                cancel: &cancel,
            };
            engine.scrape_batch(&batch, urls).await
        })
        .await
    }

    /// Reads every address of a stored `web.scrape` call and stores how
    /// it ended.
    async fn scrape_batch(
        &self,
        batch: &Batch<'_>,
        urls: Vec<String>,
    ) -> Result<Envelope<CallOutput>, StoreError> {
        let total = urls.len() as u64;
        let mut done = 0u64;
        // Progress counts addresses from the start, for any process reading it.
        crate::store::retrying(|| self.store.set_call_done(batch.id, 0)).await?;
        let mut pages = Vec::with_capacity(urls.len());
        let mut reads = stream::iter(urls)
            .map(|url| self.read_one(batch, url))
            .buffered(AT_ONCE);
        while let Some(page) = reads.next().await {
            pages.push(CallOutput::Page(page?));
            done += 1;
            crate::store::retrying(|| self.store.set_call_done(batch.id, done)).await?;
        }
        let status = if batch.cancel.is_cancelled() {
            CallStatus::Cancelled
        } else {
            CallStatus::Completed
        };
        self.store
            .finish_call(batch.id, &status, &pages, None)
            .await?;
        tracing::info!(
            call = batch.id,
            pages = pages.len(),
            status = status.name(),
            "Scrape finished."
        );
        Ok(Envelope {
            status: super::envelope_status(&status),
            job_id: Some(batch.id),
            kind: Some(WorkKind::Call),
            progress: Progress { done, total },
            results: pages,
            error: None,
            job: None,
        })
    }

    /// One address walked through the chain: the first connector that
    /// reads it gives the page; otherwise the page failed, with why.
    async fn read_one(&self, batch: &Batch<'_>, url: String) -> Result<ScrapedPage, StoreError> {
        if url.len() > MAX_URL_BYTES || parse_web_url(&url).is_none() {
            return Ok(failed(
                url,
                None,
                format!("not an http(s) address of at most {MAX_URL_BYTES} bytes"),
            ));
        }
        if batch.cancel.is_cancelled() {
            return Ok(failed(url, None, "cancelled before it was read".to_owned()));
        }
        let mut ledger = PageLedger {
            receipts: Receipts::new(&self.store, batch.id, batch.actor),
            tried: Vec::new(),
            skipped: batch.skipped.to_vec(),
            read: None,
        };
        let subject = Subject {
            workspace_id: Some(batch.workspace_id),
            lens: batch.lens,
            intent: batch.intent,
            query: &url,
            opts: FireOpts {
                record_name: url.clone(),
                max_results: 1,
                ..FireOpts::default()
            },
            priority: Priority::Person,
            paid_cap: None,
            record_day: None,
        };
        let cancelled = self
            .dispatcher
            .walk_chain(&mut ledger, batch.to_try, subject, batch.cancel, &mut None)
            .await?;
        Ok(ledger.page(url, cancelled))
    }
}

/// What every address of one call shares.
struct Batch<'a> {
    id: i64,
    workspace_id: i64,
    actor: &'a str,
    intent: &'a Capability,
    to_try: &'a [String],
    skipped: &'a [Skipped],
    lens: &'a Lens,
    cancel: &'a CancellationToken,
}

fn failed(url: String, connector_id: Option<String>, error: String) -> ScrapedPage {
    ScrapedPage {
        url,
        status: PageStatus::Failed,
        content: String::new(),
        metadata: PageMetadata::default(),
        truncated: false,
        connector_id,
        error: Some(error),
    }
}

/// One address's walk: each attempt's receipt, and the page once a
/// connector has read it.
struct PageLedger<'a> {
    receipts: Receipts<'a>,
    /// Every closed attempt: its connector and how it ended.
    tried: Vec<(String, AttemptEnd)>,
    skipped: Vec<Skipped>,
    /// The connector that read the page, and what it gave.
    read: Option<(String, ConnectorResult)>,
}

impl PageLedger<'_> {
    /// The page as read, or why it was not.
    fn page(self, url: String, cancelled: bool) -> ScrapedPage {
        if let Some((connector_id, found)) = self.read {
            return read_page(url, connector_id, found);
        }
        let last = self.tried.last().map(|(id, _)| id.clone());
        if cancelled {
            return failed(url, last, "cancelled before it was read".to_owned());
        }
        let reasons: Vec<String> = self
            .tried
            .iter()
            .map(|(id, end)| {
                let why = end.error.as_deref().unwrap_or("found no page there");
                format!("{id}: {why}")
            })
            .chain(
                self.skipped
                    .iter()
                    .map(|s| format!("{} (not tried): {}", s.connector_id, s.reason)),
            )
            .collect();
        let error = if reasons.is_empty() {
            "no connector can read pages now".to_owned()
        } else {
            reasons.join("; ")
        };
        failed(url, last, error)
    }
}

/// A page from what a connector gave: its text from the result's `raw`
/// when the connector writes [`PageText`] there, else its snippet (a
/// manifest's result).
fn read_page(url: String, connector_id: String, found: ConnectorResult) -> ScrapedPage {
    let text: PageText = serde_json::from_value(found.raw).unwrap_or_default();
    let content = if text.content.is_empty() {
        found.snippet.clone()
    } else {
        text.content
    };
    ScrapedPage {
        url,
        status: PageStatus::Ok,
        content,
        metadata: PageMetadata {
            title: found.title,
            description: text.description.unwrap_or_default(),
            language: text.language,
            canonical_url: text.canonical_url,
        },
        truncated: text.truncated,
        connector_id: Some(connector_id),
        error: None,
    }
}

#[async_trait::async_trait]
impl Ledger for PageLedger<'_> {
    fn skipped(&mut self, skipped: Skipped) {
        if !self
            .skipped
            .iter()
            .any(|s| s.connector_id == skipped.connector_id)
        {
            self.skipped.push(skipped);
        }
    }

    async fn open(&mut self, connector_id: &str) -> Result<(), StoreError> {
        self.receipts.open(connector_id).await
    }

    async fn close(
        &mut self,
        end: &AttemptEnd,
        results: Vec<ConnectorResult>,
        _last: bool,
    ) -> Result<(), StoreError> {
        let Some(connector_id) = self.receipts.close(end).await? else {
            return Ok(());
        };
        if self.read.is_none() {
            if let Some(first) = results.into_iter().next() {
                self.read = Some((connector_id.clone(), first));
            }
        }
        self.tried.push((connector_id, end.clone()));
        Ok(())
    }
}
