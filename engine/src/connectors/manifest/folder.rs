//! The drop folder: every `*.toml` manifest in it is registered at start,
//! and adding, changing or removing a file registers, updates or unregisters
//! its connector while the server runs. A file that does not check keeps its
//! error for the inventory, and the version that last checked keeps serving.
//!
//! A registration changes only when its file's content does: reading a file
//! (this process or another one watching the same folder) is not a change,
//! and a file saved again unchanged is not either.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, EventKind};
use notify_debouncer_full::{new_debouncer, DebounceEventResult, Debouncer, RecommendedCache};
use serde::Serialize;

use model::ConnectorSource;

use super::{Format, Manifest, ManifestConnector};
use crate::connectors::guard::Outbound;
use crate::connectors::registry::{EnvLookup, Registry};

/// What became of one file in the folder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileState {
    /// The connector the file registers (from its last version that checked).
    pub connector_id: Option<String>,
    /// Why the file's current version is not serving, if it is not.
    pub error: Option<String>,
}

/// The drop folder and what each of its files did.
#[derive(Clone)]
pub struct DropFolder {
    dir: PathBuf,
    registry: Registry,
    outbound: Outbound,
    env: EnvLookup,
    files: Arc<Mutex<BTreeMap<PathBuf, FileState>>>,
    /// The content each serving file was registered from.
    serving: Arc<Mutex<BTreeMap<PathBuf, String>>>,
}

impl std::fmt::Debug for DropFolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DropFolder")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// Keeps the folder watched while it lives.
pub struct Watching(#[allow(dead_code)] Debouncer<notify::RecommendedWatcher, RecommendedCache>);

/// Whether an event may mean the file's content changed. Opening, reading
/// and closing a file without writing are not changes; they are what every
/// reload does, so reacting to them would reload forever (and every process
/// watching the folder would set the others off).
fn may_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

fn is_manifest(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "toml")
        && !path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl DropFolder {
    pub fn new(
        dir: impl Into<PathBuf>,
        registry: Registry,
        outbound: Outbound,
        env: EnvLookup,
    ) -> Self {
        Self {
            dir: dir.into(),
            registry,
            outbound,
            env,
            files: Arc::default(),
            serving: Arc::default(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every manifest file seen, with its connector or its error.
    pub fn files(&self) -> BTreeMap<String, FileState> {
        self.lock()
            .iter()
            .map(|(path, state)| (path.display().to_string(), state.clone()))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, FileState>> {
        lock(&self.files)
    }

    /// Registers every manifest in the folder (a missing folder is empty).
    pub fn load_all(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            tracing::info!(dir = %self.dir.display(), "No connectors folder; no manifests loaded.");
            return;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| is_manifest(p))
            .collect();
        paths.sort();
        for path in paths {
            self.reload(&path);
        }
    }

    /// Watches the folder from now on; changes apply within a second.
    pub fn watch(&self) -> notify::Result<Watching> {
        std::fs::create_dir_all(&self.dir).map_err(notify::Error::io)?;
        let folder = self.clone();
        let mut debouncer = new_debouncer(
            Duration::from_millis(150),
            None,
            move |result: DebounceEventResult| match result {
                Ok(events) => {
                    let mut paths: Vec<PathBuf> = events
                        .into_iter()
                        .filter(|e| may_change(&e.kind))
                        .flat_map(|e| e.event.paths)
                        .collect();
                    paths.sort();
                    paths.dedup();
                    for path in paths.iter().filter(|p| is_manifest(p)) {
                        folder.reload(path);
                    }
                }
                Err(errors) => {
                    for e in errors {
                        tracing::warn!(error = %e, "Watching the connectors folder failed.");
                    }
                }
            },
        )?;
        debouncer.watch(&self.dir, notify::RecursiveMode::NonRecursive)?;
        Ok(Watching(debouncer))
    }

    /// Applies the file as it is now: registers, updates, reports or removes.
    pub fn reload(&self, path: &Path) {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.removed(path);
                return;
            }
            Err(e) => {
                self.failed(path, format!("cannot read the file: {e}"));
                return;
            }
        };
        if self.serves(path, &text) {
            return;
        }
        let manifest = match Manifest::parse(&text, Format::Toml) {
            Ok(m) => m,
            Err(e) => {
                self.failed(path, e.to_string());
                return;
            }
        };
        let id = manifest.spec.profile.id.clone();
        let previous = self.lock().get(path).and_then(|s| s.connector_id.clone());
        if previous.as_deref() != Some(id.as_str()) {
            if let Some(taken) = self.owner_of(&id, path) {
                self.failed(
                    path,
                    format!("id {id:?} is already the connector of {taken}"),
                );
                return;
            }
        }
        let registration = manifest.registration();
        let connector =
            ManifestConnector::new(Arc::new(manifest), self.outbound.clone(), self.env.clone());
        let source = ConnectorSource::File {
            path: path.display().to_string(),
        };
        if let Err(e) = self
            .registry
            .register_from(registration, Arc::new(connector), source)
        {
            self.failed(path, e.to_string());
            return;
        }
        if let Some(old) = previous.filter(|old| old != &id) {
            let _ = self.registry.unregister(&old);
        }
        tracing::info!(file = %path.display(), connector = %id, "Manifest connector registered.");
        lock(&self.serving).insert(path.to_owned(), text);
        self.lock().insert(
            path.to_owned(),
            FileState {
                connector_id: Some(id),
                error: None,
            },
        );
    }

    /// Whether `text` is what the file's connector serves already, with no
    /// error since (an error may have been another file holding the id,
    /// which the same text may get past now).
    fn serves(&self, path: &Path, text: &str) -> bool {
        lock(&self.serving).get(path).is_some_and(|t| t == text)
            && self.lock().get(path).is_some_and(|s| s.error.is_none())
    }

    /// Who else already has `id`: another file, or a built-in connector.
    fn owner_of(&self, id: &str, path: &Path) -> Option<String> {
        let mine = ConnectorSource::File {
            path: path.display().to_string(),
        };
        self.registry
            .by_id(id)
            .filter(|h| h.source != mine)
            .map(|h| h.source.describe())
    }

    fn failed(&self, path: &Path, error: String) {
        tracing::warn!(file = %path.display(), %error, "Manifest not applied; the previous version keeps serving.");
        let mut files = self.lock();
        let state = files.entry(path.to_owned()).or_insert(FileState {
            connector_id: None,
            error: None,
        });
        state.error = Some(error);
    }

    fn removed(&self, path: &Path) {
        lock(&self.serving).remove(path);
        let Some(state) = self.lock().remove(path) else {
            return;
        };
        if let Some(id) = state.connector_id {
            let _ = self.registry.unregister(&id);
            tracing::info!(file = %path.display(), connector = %id, "Manifest removed; connector unregistered.");
        }
    }
}
