//! The compact view of a set: one line per record (its chips and its best
//! candidate), drawn only where the person looks so 10,000 records scroll
//! as lightly as 50, read a stretch at a time as they come into view; and
//! the set's facets with their counts. Both read again, a little after the
//! stream says something changed. A chunk of its own, fetched when a person
//! first opens the compact view.

use std::collections::{HashMap, HashSet};

use leptos::prelude::*;
use leptos::task::spawn_local;
use model::{BulkSelection, CompactLine, RecordFilter, SetFacets};

use super::api::{load_facets, load_lines, triage_item};
use super::board::Board;

/// A line's height in whole pixels (the stylesheet's `.line` says the
/// same).
const LINE_PX: i64 = 34;
/// How many lines one read takes.
const STRETCH: i64 = 100;
/// Lines drawn above and below what is in view, so a quick scroll does not
/// show blanks.
const AROUND: i64 = 15;
/// How long after a change heard on the stream the view reads again (a
/// fan-out's hundreds of changes a second make one read).
const SETTLE_MS: u64 = 700;

/// What the compact view shows (the filter and search of the set's view)
/// and the facets last read, which outlive a change of filter so the
/// counts stay in view while they are read again.
#[derive(Clone, Copy)]
pub struct Asked {
    pub set_id: i64,
    pub filter: RwSignal<RecordFilter>,
    pub search: RwSignal<String>,
    pub offset: RwSignal<i64>,
    pub facets: RwSignal<Option<SetFacets>>,
}

crate::chunk::lazy_view! {
    /// The compact view and its facets, a chunk of its own.
    compact_view: pub(super) async fn compact(
        asked: Asked,
        labels: Vec<String>,
        board: Board,
        bulk: RwSignal<Option<BulkSelection>>,
    ) {
        view! {
            <Facets asked board bulk/>
            <Lines asked labels board/>
        }
        .into_any()
    }
}

/// Calls `read` a little after each burst of chip and item events.
fn after_changes(board: Board, read: impl Fn() + Copy + 'static) {
    let waiting = StoredValue::new(false);
    Effect::new(move |first: Option<()>| {
        board.touched.track();
        if first.is_none() || waiting.get_value() {
            return;
        }
        waiting.set_value(true);
        set_timeout(
            move || {
                if !waiting.is_disposed() {
                    waiting.set_value(false);
                    read();
                }
            },
            std::time::Duration::from_millis(SETTLE_MS),
        );
    });
}

/// Counts that find what is left: records per filter (a click shows
/// them), chips per state, what each connector found (with the way to
/// accept its single candidates in bulk), items triaged or not.
#[component]
fn Facets(asked: Asked, board: Board, bulk: RwSignal<Option<BulkSelection>>) -> impl IntoView {
    let facets = asked.facets;
    let read = move || {
        spawn_local(async move {
            if let Ok(f) = load_facets(asked.set_id).await {
                facets.try_set(Some(f));
            }
        });
    };
    Effect::new(move |_| read());
    after_changes(board, read);
    move || {
        facets.get().map(|f| {
            let filters = f.filters.iter().map(|c| {
                let filter = c.filter;
                view! {
                    <button
                        type="button"
                        class="facet"
                        data-filter=filter_name(filter)
                        aria-pressed=move || (asked.filter.get() == filter).to_string()
                        on:click=move |_| { asked.offset.set(0); asked.filter.set(filter); }
                    >{format!("{} {}", filter_label(filter), c.records)}</button>
                }
            }).collect_view();
            let packs = f.packs.iter().map(|p| view! {
                <li data-pack=p.pack_id.clone()>
                    <strong>{p.short_label.clone()}</strong>" "
                    {p.states.iter().map(|(s, n)| format!("{} {n}", s.replace('_', " "))).collect::<Vec<_>>().join(" · ")}
                </li>
            }).collect_view();
            let connectors = f.connectors.iter().map(|c| {
                let selection = BulkSelection::SingleFrom { connector_id: c.connector_id.clone() };
                view! {
                    <li data-connector=c.connector_id.clone()>
                        {format!("{}: {} found · {} to triage · {} single", c.connector_id, c.items, c.untriaged, c.single)}
                        {(c.single > 0).then(|| view! {
                            " "<button type="button" on:click=move |_| bulk.set(Some(selection.clone()))>"decide on the single ones…"</button>
                        })}
                    </li>
                }
            }).collect_view();
            view! {
                <section class="facets" aria-label="Facets">
                    <p>{format!(
                        "{} record{} · {} item{} to triage · {} triaged",
                        f.records, plural(f.records), f.items_untriaged, plural(f.items_untriaged), f.items_triaged
                    )}</p>
                    <div class="facet-filters">{filters}</div>
                    <ul class="facet-packs">{packs}</ul>
                    <ul class="facet-connectors">{connectors}</ul>
                </section>
            }
        })
    }
}

fn plural(n: i64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn filter_name(filter: RecordFilter) -> &'static str {
    match filter {
        RecordFilter::All => "all",
        RecordFilter::Unreviewed => "unreviewed",
        RecordFilter::NothingFound => "nothing_found",
        RecordFilter::Errors => "errors",
        RecordFilter::Changed => "changed",
    }
}

fn filter_label(filter: RecordFilter) -> &'static str {
    match filter {
        RecordFilter::All => "all",
        RecordFilter::Unreviewed => "has unreviewed",
        RecordFilter::NothingFound => "nothing found",
        RecordFilter::Errors => "errors",
        RecordFilter::Changed => "new since my last visit",
    }
}

/// The lines read so far, by stretch, and how many lines there are.
#[derive(Clone, Copy)]
struct Read {
    total: RwSignal<Option<i64>>,
    stretches: RwSignal<HashMap<i64, Vec<CompactLine>>>,
    asking: StoredValue<HashSet<i64>>,
}

impl Read {
    /// Shows a decision on line `at`'s best candidate at once (the stream's
    /// re-read confirms it).
    fn decided(self, at: i64, item: &model::Item) {
        self.stretches.update(|s| {
            let line = s
                .get_mut(&(at / STRETCH))
                .and_then(|l| l.get_mut(usize::try_from(at % STRETCH).unwrap_or(usize::MAX)));
            if let Some(line) = line {
                if let Some(best) = line.best.as_mut().filter(|b| b.item_id == item.id) {
                    if best.state == model::TriageState::New && item.state != best.state {
                        line.untriaged = line.untriaged.saturating_sub(1);
                    }
                    best.state = item.state;
                    best.version = item.version;
                }
            }
        });
    }

    /// Reads stretch `n` unless it is being read.
    fn fetch(self, asked: Asked, n: i64) {
        let mut fresh = false;
        self.asking.update_value(|a| fresh = a.insert(n));
        if !fresh {
            return;
        }
        let (filter, search) = (asked.filter.get_untracked(), asked.search.get_untracked());
        spawn_local(async move {
            let page = load_lines(asked.set_id, filter, search, n * STRETCH, STRETCH).await;
            if self.asking.is_disposed() {
                return;
            }
            self.asking.update_value(|a| {
                a.remove(&n);
            });
            if let Ok(page) = page {
                self.total.set(Some(page.total));
                self.stretches.update(|s| {
                    s.insert(n, page.lines);
                });
            }
        });
    }
}

/// The stretches lines `first..last` are in (the first stretch when there
/// are none, which says how many lines there are).
fn stretches_of(first: i64, last: i64) -> std::ops::RangeInclusive<i64> {
    first / STRETCH..=(last.max(1) - 1) / STRETCH
}

#[component]
fn Lines(asked: Asked, labels: Vec<String>, board: Board) -> impl IntoView {
    let read = Read {
        total: RwSignal::new(None),
        stretches: RwSignal::new(HashMap::new()),
        asking: StoredValue::new(HashSet::new()),
    };
    let scroller = NodeRef::<leptos::html::Div>::new();
    let top = RwSignal::new(0_i64);
    let height = RwSignal::new(600_i64);
    // Lines first..last are drawn.
    let span = Memo::new(move |_| {
        let total = read.total.get().unwrap_or(STRETCH);
        let first = (top.get() / LINE_PX - AROUND).max(0);
        let shown = (height.get() + LINE_PX - 1) / LINE_PX;
        (first.min(total), (first + shown + 2 * AROUND).min(total))
    });
    // The stretches the drawn lines are in are read when first needed.
    Effect::new(move |_| {
        let (first, last) = span.get();
        let have = read
            .stretches
            .with(|s| s.keys().copied().collect::<HashSet<_>>());
        for n in stretches_of(first, last) {
            if !have.contains(&n) {
                read.fetch(asked, n);
            }
        }
    });
    // After changes, the stretches in view are read again; others go.
    after_changes(board, move || {
        let (first, last) = span.get_untracked();
        let keep: HashSet<i64> = stretches_of(first, last).collect();
        read.stretches.update(|s| s.retain(|n, _| keep.contains(n)));
        for n in keep {
            read.asking.update_value(|a| {
                a.remove(&n);
            });
            read.fetch(asked, n);
        }
    });
    let measure = move || {
        if let Some(div) = scroller.get_untracked() {
            top.set(i64::from(div.scroll_top()));
            height.set(i64::from(div.client_height()));
        }
    };
    Effect::new(move |_| {
        if scroller.get().is_some() {
            measure();
        }
    });
    let labels = StoredValue::new(labels);
    let drawn = move || {
        let (first, last) = span.get();
        read.stretches.with(|s| {
            (first..last)
                .map(|i| {
                    let line = s
                        .get(&(i / STRETCH))
                        .and_then(|l| l.get(usize::try_from(i % STRETCH).unwrap_or(usize::MAX)))
                        .cloned();
                    (i, line)
                })
                .collect::<Vec<_>>()
        })
    };
    view! {
        <p class="muted compact-count">{move || read.total.get().map(|t| format!("{t} record{}", plural(t)))}</p>
        <div class="compact" node_ref=scroller on:scroll=move |_| measure() tabindex="0" role="region" aria-label="Records, one per line">
            <div class="compact-all" style=move || format!("height: {}px", read.total.get().unwrap_or(0) * LINE_PX)>
                <For
                    each=drawn
                    key=|(i, line)| (*i, line.as_ref().map(|l| (l.record_id, format!("{:?}{:?}{}", l.chips, l.best, l.untriaged))))
                    children=move |(i, line)| view! { <LineView at=i line labels read board/> }
                />
            </div>
        </div>
    }
}

/// `text` as one query-string value (percent-encoded bytes but letters,
/// digits and `-_.~`).
fn query_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// One record's line at position `at` (not read yet: a placeholder), with
/// a one-click accept of its best candidate while nobody has decided on it.
#[component]
fn LineView(
    at: i64,
    line: Option<CompactLine>,
    labels: StoredValue<Vec<String>>,
    read: Read,
    board: Board,
) -> impl IntoView {
    let style = format!("top: {}px", at * LINE_PX);
    let Some(line) = line else {
        return view! { <div class="line pending" style=style>"…"</div> }.into_any();
    };
    let chips = labels.with_value(|labels| {
        line.chips
            .iter()
            .zip(labels)
            .map(|(state, label)| {
                view! { <span class="mini-chip" data-state=state.name() title=state.name()>{label.clone()}</span> }
            })
            .collect_view()
    });
    let name = line.name.clone();
    let link = format!("?q={}", query_value(&line.name));
    let best = line.best.map(|b| {
        let (item_id, version) = (b.item_id, b.version);
        let accept = move |_| {
            spawn_local(async move {
                match triage_item(item_id, model::TriageVerb::AcceptCanonical, version).await {
                    Ok(done) => {
                        board.said.set(done.conflict.unwrap_or_else(|| "Accepted.".to_owned()));
                        read.decided(at, &done.item);
                    }
                    Err(e) => board.said.set(e.to_string()),
                }
            });
        };
        let open = b.state == model::TriageState::New;
        view! {
            <span class="best" data-triage=b.state.name()>
                {open.then(|| view! {
                    <button type="button" class="accept-best" on:click=accept aria-label=format!("Accept {} for {name}", b.title)>"✓"</button>
                })}
                <a href=b.url.clone() target="_blank" rel="noopener noreferrer">{b.title}</a>
                <span class="muted">{format!(" · {} connector{}", b.connectors, if b.connectors == 1 { "" } else { "s" })}</span>
            </span>
        }
    });
    view! {
        <div class="line" style=style data-record=line.record_id data-at=at>
            <a class="line-name" href=link title="Open its card">{line.name}</a>
            <span class="line-chips">{chips}</span>
            {best}
            {(line.untriaged > 0).then(|| view! { <span class="badge">{format!("{} to triage", line.untriaged)}</span> })}
        </div>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_name_is_one_query_value() {
        assert_eq!(super::query_value("Acme & Co."), "Acme%20%26%20Co.");
        assert_eq!(super::query_value("Zoë?q=1#x"), "Zo%C3%AB%3Fq%3D1%23x");
    }
}
