//! `GET /metrics`: the caller's workspace's connector figures in the
//! Prometheus text format (send a token: `Authorization: Bearer`). The same
//! numbers as the inventory page, read from the database, so every process
//! agrees.

use std::fmt::Write;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use model::{Attention, ConnectorInfo, ConnectorStats};

use crate::api::{ApiError, Caller};
use crate::router::AppState;

pub async fn metrics(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<impl IntoResponse, ApiError> {
    let rows = state.engine.inventory(&who).await?;
    let attention = state.engine.attention(&who).await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        render(
            &rows.iter().map(|r| r.info.clone()).collect::<Vec<_>>(),
            &rows.iter().map(|r| r.fires_today).collect::<Vec<_>>(),
            &rows
                .iter()
                .filter_map(|r| r.stats.clone())
                .collect::<Vec<_>>(),
            &attention,
        ),
    ))
}

/// A label value with `\`, `"` and line breaks escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A gauge's HELP and TYPE lines.
fn gauge(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
}

/// The exposition text.
pub fn render(
    connectors: &[ConnectorInfo],
    fires_today: &[i64],
    stats: &[ConnectorStats],
    attention: &[Attention],
) -> String {
    let mut out = String::new();
    gauge(
        &mut out,
        "switchyard_connector_up",
        "Whether the connector can fire now in this workspace (1) or not (0), with its status.",
    );
    for c in connectors {
        let _ = writeln!(
            out,
            "switchyard_connector_up{{connector=\"{}\",status=\"{}\"}} {}",
            label(&c.profile.id),
            c.status.kind(),
            u8::from(c.status.is_available())
        );
    }
    gauge(
        &mut out,
        "switchyard_connector_fires_today",
        "Fires counted today against the connector's daily cap (every workspace: one key).",
    );
    for (c, n) in connectors.iter().zip(fires_today) {
        let _ = writeln!(
            out,
            "switchyard_connector_fires_today{{connector=\"{}\"}} {n}",
            label(&c.profile.id)
        );
    }
    gauge(
        &mut out,
        "switchyard_connector_attempts",
        "Finished attempts in the last 24 hours, by outcome.",
    );
    for s in stats {
        for (outcome, n) in [
            ("found", s.found),
            ("not_found", s.not_found),
            ("error", s.errors),
            ("rate_limited", s.rate_limited),
        ] {
            let _ = writeln!(
                out,
                "switchyard_connector_attempts{{connector=\"{}\",outcome=\"{outcome}\"}} {n}",
                label(&s.connector_id)
            );
        }
    }
    gauge(
        &mut out,
        "switchyard_connector_latency_ms",
        "Attempt duration percentiles over the last 24 hours, in milliseconds.",
    );
    for s in stats {
        for (quantile, value) in [("0.5", s.p50_ms), ("0.95", s.p95_ms)] {
            if let Some(v) = value {
                let _ = writeln!(
                    out,
                    "switchyard_connector_latency_ms{{connector=\"{}\",quantile=\"{quantile}\"}} {v}",
                    label(&s.connector_id)
                );
            }
        }
    }
    gauge(&mut out, "switchyard_connector_attention", "Connectors this workspace's admins must act on (1), by why: key-refused or long-suspension; GET /api/connectors/attention says what to do.");
    for a in attention {
        let _ = writeln!(
            out,
            "switchyard_connector_attention{{connector=\"{}\",kind=\"{}\"}} 1",
            label(&a.connector_id),
            a.kind.name()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_every_series_is_typed() {
        let stats = vec![ConnectorStats {
            connector_id: "we\"ird".into(),
            attempts: 3,
            found: 2,
            errors: 1,
            p50_ms: Some(120),
            p95_ms: Some(400),
            ..Default::default()
        }];
        let refused = Attention {
            connector_id: "tavily".into(),
            display_name: "Tavily".into(),
            kind: model::AttentionKind::KeyRefused,
            own_key: false,
            since: 1,
            what: "Tavily's key was refused".into(),
            to_do: "Set TAVILY_API_KEY".into(),
        };
        let text = render(&[], &[], &stats, &[refused]);
        assert!(
            text.contains(
                "switchyard_connector_attention{connector=\"tavily\",kind=\"key-refused\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "switchyard_connector_attempts{connector=\"we\\\"ird\",outcome=\"found\"} 2"
            ),
            "{text}"
        );
        assert!(text.contains("quantile=\"0.95\"} 400"), "{text}");
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split('{').next().unwrap();
            assert!(text.contains(&format!("# TYPE {name} gauge")), "{line}");
        }
    }
}
