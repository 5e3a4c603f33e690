//! Browser sessions kept in Switchyard's own database through the engine's
//! store (SQLite or PostgreSQL alike), so they survive restarts and are shared
//! by every process. Rows are keyed by the SHA-256 of the session id: the
//! database never holds a usable cookie value.

use async_trait::async_trait;
use engine::tenancy::credentials::secret_hash;
use engine::tenancy::credentials::Sessions;
use time::OffsetDateTime;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{Error, Result};
use tower_sessions::SessionStore;

#[derive(Clone, Debug)]
pub struct DbSessionStore {
    sessions: Sessions,
}

impl DbSessionStore {
    pub fn new(sessions: Sessions) -> Self {
        Self { sessions }
    }
}

fn key(id: &Id) -> String {
    secret_hash(&id.to_string())
}

fn expires_ms(record: &Record) -> i64 {
    i64::try_from(record.expiry_date.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// The signed-in user a session belongs to, kept beside it so a new
/// password can end the person's other sessions.
fn user_of(record: &Record) -> Option<i64> {
    record
        .data
        .get(super::USER_ID)
        .and_then(serde_json::Value::as_i64)
}

fn backend(e: impl std::fmt::Display) -> Error {
    Error::Backend(e.to_string())
}

#[async_trait]
impl SessionStore for DbSessionStore {
    async fn create(&self, record: &mut Record) -> Result<()> {
        let data = serde_json::to_string(&record.data).map_err(|e| Error::Encode(e.to_string()))?;
        // A colliding id (astronomically unlikely) gets a fresh one.
        while !self
            .sessions
            .insert(&key(&record.id), user_of(record), &data, expires_ms(record))
            .await
            .map_err(backend)?
        {
            record.id = Id::default();
        }
        Ok(())
    }

    /// Saves a session this request loaded. One deleted meanwhile (signed
    /// out elsewhere, ended by a new password) stays deleted: the browser's
    /// next request finds no session.
    async fn save(&self, record: &Record) -> Result<()> {
        let data = serde_json::to_string(&record.data).map_err(|e| Error::Encode(e.to_string()))?;
        let saved = self
            .sessions
            .save(&key(&record.id), user_of(record), &data, expires_ms(record))
            .await
            .map_err(backend)?;
        if !saved {
            tracing::debug!("A session ended while a request held it; it is not brought back.");
        }
        Ok(())
    }

    async fn load(&self, id: &Id) -> Result<Option<Record>> {
        let Some((data, expires_at)) = self.sessions.load(&key(id)).await.map_err(backend)? else {
            return Ok(None);
        };
        let data = serde_json::from_str(&data).map_err(|e| Error::Decode(e.to_string()))?;
        let expiry_date =
            OffsetDateTime::from_unix_timestamp_nanos(i128::from(expires_at) * 1_000_000)
                .map_err(|e| Error::Decode(e.to_string()))?;
        Ok(Some(Record {
            id: *id,
            data,
            expiry_date,
        }))
    }

    async fn delete(&self, id: &Id) -> Result<()> {
        self.sessions.delete(&key(id)).await.map_err(backend)
    }
}
