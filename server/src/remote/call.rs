//! `switchyard call VERB ...`: any verb of the registry, its body made as
//! its kind takes it, waited for unless `--async`, each kind of result
//! printed for people; `switchyard verbs [VERB]`: what the registry says
//! each verb takes and gives.

use std::io::Write;

use model::{CallOutput, CapabilityView, Envelope, EnvelopeStatus, PageStatus};
use serde_json::Value;

use super::{one_line, parse, print, urlencode, Door, Exit, Failure, Outcome, POLL};
use crate::cli::{CallArgs, VerbsArgs};

/// A verb call's body, as its kind takes it.
fn call_body(args: &CallArgs) -> serde_json::Value {
    let mut body = match args.capability.as_str() {
        "web.scrape" => serde_json::json!({ "urls": args.query }),
        "maps.place" | "maps.reviews" => serde_json::json!({ "place_id": args.query.join(" ") }),
        _ => serde_json::json!({ "query": args.query.join(" ") }),
    };
    if let Some(near) = &args.near {
        body["near"] = near.as_str().into();
    }
    body["async"] = args.run_async.into();
    if let Some(n) = args.max_results {
        let limit = match args.capability.as_str() {
            "web.discover" => "top_k",
            _ => "max_results",
        };
        body[limit] = n.into();
    }
    if let Some(c) = &args.connector {
        body["connector"] = c.as_str().into();
    }
    body
}

pub(super) async fn call(args: CallArgs, out: &mut impl Write) -> Outcome {
    let door = Door::new(&args.remote)?;
    let what = format!("call {}", args.capability);
    let path = format!("/api/capabilities/{}/call", urlencode(&args.capability));
    let asked = args.query.join(" ");
    let mut answer = door.post(&path, call_body(&args), &what).await?;
    let mut envelope: Envelope<CallOutput> = parse(&answer, &what)?;
    // Wait for a slow call unless asked not to.
    while envelope.status == EnvelopeStatus::Pending && !args.run_async {
        let Some(id) = envelope.job_id else { break };
        tokio::time::sleep(POLL).await;
        answer = door.get(&format!("/api/jobs/{id}"), &what).await?;
        envelope = parse(&answer, &what)?;
    }
    if door.json {
        print(out, answer.text.trim_end())?;
    } else {
        let id = envelope
            .job_id
            .map(|id| format!(" (call {id})"))
            .unwrap_or_default();
        match envelope.status {
            EnvelopeStatus::Pending => print(
                out,
                format!(
                    "{} {asked:?}: still walking{id}; read it with GET /api/jobs/{}",
                    args.capability,
                    envelope.job_id.unwrap_or_default()
                ),
            )?,
            status => {
                let n = envelope.results.len();
                print(
                    out,
                    format!(
                        "{} {asked:?}: {n} result{}, {}{id}",
                        args.capability,
                        if n == 1 { "" } else { "s" },
                        status_name(status)
                    ),
                )?;
                for (i, r) in envelope.results.iter().enumerate() {
                    print_output(out, i + 1, r)?;
                }
            }
        }
    }
    let pages_failed = envelope
        .results
        .iter()
        .any(|r| matches!(r, CallOutput::Page(p) if p.status == PageStatus::Failed));
    match (envelope.status, envelope.error) {
        (EnvelopeStatus::Failed, Some(error)) => {
            Err(Failure(Exit::Failed, format!("{what}: {error}")))
        }
        (EnvelopeStatus::Failed | EnvelopeStatus::Cancelled, None) => Ok(Exit::Failed),
        _ if pages_failed => Ok(Exit::SomePagesFailed),
        _ => Ok(Exit::Ok),
    }
}

/// One result of a call, for people.
fn print_output(out: &mut impl Write, n: usize, output: &CallOutput) -> Result<(), Failure> {
    match output {
        CallOutput::Found(r) => {
            print(out, format!("{n:>3}. {}", one_line(&r.title, 100)))?;
            print(out, format!("     {}", r.url))?;
            if !r.snippet.trim().is_empty() {
                print(out, format!("     {}", one_line(&r.snippet, 160)))?;
            }
            print(out, format!("     via {}", r.connector_id))
        }
        CallOutput::Page(p) => {
            print(out, format!("{n:>3}. {}", p.url))?;
            match (&p.status, &p.error) {
                (PageStatus::Failed, error) => print(
                    out,
                    format!(
                        "     not read: {}",
                        one_line(error.as_deref().unwrap_or(""), 300)
                    ),
                ),
                (PageStatus::Ok, _) => {
                    print(out, format!("     {}", one_line(&p.metadata.title, 100)))?;
                    print(
                        out,
                        format!(
                            "     {} characters of text{}, via {}",
                            p.content.chars().count(),
                            if p.truncated { " (page cut)" } else { "" },
                            p.connector_id.as_deref().unwrap_or("?")
                        ),
                    )?;
                    print(out, format!("     {}", one_line(&p.content, 160)))
                }
            }
        }
        CallOutput::Place(p) => {
            print(out, format!("{n:>3}. {}", one_line(&p.name, 100)))?;
            if !p.address.is_empty() {
                print(out, format!("     {}", one_line(&p.address, 160)))?;
            }
            let mut facts: Vec<String> = Vec::new();
            if let (Some(lat), Some(lon)) = (p.lat, p.lon) {
                facts.push(format!("{lat:.5}, {lon:.5}"));
            }
            if let Some(rating) = p.rating {
                facts.push(format!("rated {rating:.1}"));
            }
            facts.extend(p.phone.iter().map(|phone| one_line(phone, 40)));
            facts.extend(p.website.iter().map(|site| one_line(site, 100)));
            if !facts.is_empty() {
                print(out, format!("     {}", facts.join(" · ")))?;
            }
            print(out, format!("     id {} via {}", p.id, p.provider))
        }
        CallOutput::Review(r) => {
            let rating = r.rating.map(|x| format!("{x:.0}/5 ")).unwrap_or_default();
            print(out, format!("{n:>3}. {rating}{}", one_line(&r.author, 60)))?;
            print(out, format!("     {}", one_line(&r.text, 300)))?;
            print(out, format!("     via {}", r.provider))
        }
    }
}

pub(super) fn status_name(status: EnvelopeStatus) -> &'static str {
    match status {
        EnvelopeStatus::Completed => "completed",
        EnvelopeStatus::Pending => "pending",
        EnvelopeStatus::Cancelled => "cancelled",
        EnvelopeStatus::Failed => "failed",
    }
}

/// `switchyard verbs [VERB]`.
pub(super) async fn verbs(args: VerbsArgs, out: &mut impl Write) -> Outcome {
    let door = Door::new(&args.remote)?;
    let answer = door.get("/api/capabilities", "verbs").await?;
    let verbs: Vec<CapabilityView> = parse(&answer, "verbs")?;
    let Some(name) = &args.verb else {
        if door.json {
            print(out, answer.text.trim_end())?;
            return Ok(Exit::Ok);
        }
        let width = verbs.iter().map(|v| v.name.len()).max().unwrap_or(4);
        for v in &verbs {
            let state = match &v.unavailable {
                None => format!("via {}", v.chain.join(", ")),
                Some(why) => format!("unavailable: {why}"),
            };
            print(out, format!("{:width$}  {}: {state}", v.name, v.label))?;
        }
        return Ok(Exit::Ok);
    };
    let Some(verb) = verbs.iter().find(|v| &v.name == name) else {
        return Err(Failure(
            Exit::NotFound,
            format!("verbs: no verb {name:?} in this workspace (`switchyard verbs` lists them)"),
        ));
    };
    if door.json {
        let one = serde_json::to_string_pretty(verb).unwrap_or_default();
        print(out, one)?;
        return Ok(Exit::Ok);
    }
    print(out, format!("{} — {}", verb.name, verb.label))?;
    print(
        out,
        format!(
            "walks {} ({}); one use is a {}",
            verb.runs_through,
            match &verb.unavailable {
                None => format!("now via {}", verb.chain.join(", ")),
                Some(why) => format!("unavailable: {why}"),
            },
            verb.billing_unit
        ),
    )?;
    print(out, "takes:")?;
    print_fields(out, &verb.input_schema)?;
    print(out, "gives, per result:")?;
    print_fields(out, &verb.output_schema)?;
    Ok(Exit::Ok)
}

/// A schema's fields, one a line: name, type, whether required, what it is.
fn print_fields(out: &mut impl Write, schema: &Value) -> Result<(), Failure> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Ok(());
    };
    for (field, spec) in properties {
        let kind = match &spec["type"] {
            Value::String(t) => t.clone(),
            Value::Array(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect::<Vec<_>>()
                .join(" or "),
            _ => "object".to_owned(),
        };
        let need = if required.contains(&field.as_str()) {
            "required"
        } else {
            "optional"
        };
        let about = spec["description"]
            .as_str()
            .map(|d| one_line(d, 120))
            .unwrap_or_default();
        print(out, format!("  {field} ({kind}, {need}) {about}"))?;
    }
    Ok(())
}
