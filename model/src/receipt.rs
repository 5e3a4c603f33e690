//! Receipts: what an attempt asked of a provider and what came back, kept
//! with the attempt so "why did this connector say that" has an answer.
//! A receipt holds no secret: a request is its method, host, path and the
//! names of its parameters, never their values; its hashes (spec/001's
//! request and payload hashes) tell two requests or two answers apart
//! without keeping either.

use serde::{Deserialize, Serialize};

/// The requests one attempt made, and which version of its connector made
/// them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Receipt {
    /// `switchyard 0.1.0` for a coded adapter, `manifest 1a2b3c4d5e6f`
    /// (its content's digest) for a manifest.
    pub version: String,
    /// In the order they were sent; empty when the attempt sent none
    /// (refused before it went out, or answered from within).
    #[serde(default)]
    pub requests: Vec<RequestReceipt>,
}

/// One request of an attempt, without its secrets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RequestReceipt {
    pub method: String,
    pub host: String,
    pub path: String,
    /// The query parameters' names, in order; their values are not kept.
    #[serde(default)]
    pub params: Vec<String>,
    /// The HTTP status; absent when no answer came (refused connection,
    /// timeout, cancelled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The answer's body as read.
    pub bytes: u64,
    /// From sending to the body read (or to giving up).
    pub latency_ms: u64,
    /// SHA-256 (hex) of the request with the call's secrets replaced by
    /// `***`: its method, host, path, each query parameter's name and
    /// value, and its body. Equal hashes: the same question was asked.
    /// Absent on receipts from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_hash: Option<String>,
    /// SHA-256 (hex) of the answer's body as read, when one was read
    /// whole. Equal hashes: the provider answered the same bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_hash: Option<String>,
}

impl RequestReceipt {
    /// `GET api.example.com/v1/search?q&limit → 200, 1.2 KiB, 340 ms`.
    pub fn describe(&self) -> String {
        let params = if self.params.is_empty() {
            String::new()
        } else {
            format!("?{}", self.params.join("&"))
        };
        let status = self
            .status
            .map_or_else(|| "no answer".to_owned(), |s| s.to_string());
        let size = if self.bytes < 1024 {
            format!("{} B", self.bytes)
        } else {
            format!("{:.1} KiB", self.bytes as f64 / 1024.0)
        };
        format!(
            "{} {}{}{params} → {status}, {size}, {} ms",
            self.method, self.host, self.path, self.latency_ms
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_as_one_line_without_values() {
        let r = RequestReceipt {
            method: "GET".into(),
            host: "api.example.com".into(),
            path: "/v1/search".into(),
            params: vec!["q".into(), "limit".into()],
            status: Some(200),
            bytes: 1229,
            latency_ms: 340,
            request_hash: Some("ab".repeat(32)),
            payload_hash: None,
        };
        assert_eq!(
            r.describe(),
            "GET api.example.com/v1/search?q&limit → 200, 1.2 KiB, 340 ms"
        );
        let lost = RequestReceipt {
            status: None,
            bytes: 0,
            params: Vec::new(),
            ..r
        };
        assert_eq!(
            lost.describe(),
            "GET api.example.com/v1/search → no answer, 0 B, 340 ms"
        );
    }
}
