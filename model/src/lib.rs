//! Wire types shared by the server and the browser: everything here compiles to
//! WebAssembly and carries no server-only dependency.

pub mod account;
pub mod attention;
pub mod bulk;
pub mod call;
pub mod capability;
pub mod connector;
pub mod event;
pub mod fire;
pub mod glance;
pub mod health;
pub mod item;
pub mod job;
pub mod manifest;
pub mod maps;
pub mod pack;
pub mod receipt;
pub mod record;
pub mod record_cap;
pub mod record_set;
pub mod spend;
pub mod template;
pub mod verbs;

pub use account::{Member, Role, Viewer, WorkspaceRef};
pub use attention::{Attention, AttentionKind};
pub use bulk::{BulkExpect, BulkLine, BulkOutcome, BulkPreview, BulkSelection, BulkSkip, MAX_BULK};
pub use call::{CallAttempt, CallOutput, CallRequest, CallResult};
pub use capability::{BuiltinCapability, Capability, CapabilityView, InvalidCapability};
pub use connector::{
    ConnectorInfo, ConnectorMenu, ConnectorProfile, ConnectorSource, ConnectorStats,
    ConnectorStatus, CostTier, HourCount, InventoryRow, MenuEntry, RateHints, StatusChange,
    MAX_DAILY_CAP, MAX_PER_SECOND, MIN_PER_SECOND,
};
pub use event::{Event, EventKind};
pub use fire::{
    AttemptEnd, ChipState, FireOutcome, FireReport, HistoryEntry, Skipped, TriggeredBy, Unanswered,
};
pub use glance::{
    Candidate, CompactLine, CompactPage, ConnectorFacet, FilterCount, PackFacet, SetFacets,
};
pub use health::Health;
pub use item::{Evidence, Gone, Item, Revision, TriageState, TriageVerb};
pub use job::{
    Envelope, EnvelopeStatus, EstimateLine, EstimatedSpend, FanoutEstimate, Job, JobEnvelope,
    JobStatus, Progress, RefreshPlan, RefreshSchedule, WorkKind, CALL_IDS_FROM,
};
pub use manifest::{
    check_secret_name, ManifestDraft, ManifestForm, ManifestFormat, ManifestTest, Problem,
    SavedManifest, SecretInfo, SecretValue, TestReport, TestResult,
};
pub use maps::{MapsSearchRequest, Place, PlaceRequest, Review, ReviewsRequest};
pub use pack::{
    BundleConfig, BundleMember, ChainRule, PackConfig, PersonalChain, WorkspaceCatalog,
};
pub use receipt::{Receipt, RequestReceipt};
pub use record::{
    Chip, ExportedRecord, Field, ImportReport, Record, RecordFilter, RecordsPage, Rejection,
    TriagePage,
};
pub use record_cap::{RecordCap, RecordCapStatus, SpendQuestion};
pub use record_set::RecordSetSummary;
pub use spend::{
    check_unit, describe_spent, Amount, Budget, BudgetStatus, Charge, Cost, NextCost, PaidBy,
    SpendBucket, SpendReport, SpentToday, UnitSpend,
};
pub use template::secret_names;
pub use verbs::{
    DiscoverRequest, PageMetadata, PageStatus, ScrapeRequest, ScrapedPage, Verb, VerbKind,
    VerbMode, MAX_SCRAPE_URLS, MAX_URL_BYTES, VERBS,
};
