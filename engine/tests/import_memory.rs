//! What an import holds in memory, measured by counting every allocation
//! (this binary's allocator): a file's records go to the database in
//! batches, so a file of empty cells, which becomes millions of field
//! names once parsed whole, is read with a peak of a few times its size.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use engine::import::{parse_csv, parse_csv_in_batches, ImportLimits, BATCH};

struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only
// sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = NOW.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        NOW.fetch_sub(layout.size(), Ordering::SeqCst);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes allocated at the peak of `work`, above what was held before it.
fn peak_growth(work: impl FnOnce()) -> usize {
    let before = NOW.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    work();
    PEAK.load(Ordering::SeqCst) - before
}

/// Every shape of file the limits let through, streamed: peak growth at
/// most ten times the file (the file itself is held by the caller).
fn assert_streamed_within_ten_times(what: &str, csv: &str) {
    let mut records = 0;
    let streamed = peak_growth(|| {
        let _ = parse_csv_in_batches(csv.as_bytes(), ImportLimits::default(), |batch| {
            records += batch.len();
            true
        });
    });
    assert!(
        streamed <= 10 * csv.len().max(100_000),
        "{what}: peak growth {streamed} B for a {} B file",
        csv.len()
    );
    assert!(records > 0, "{what}: nothing imported");
}

#[test]
fn a_file_of_empty_cells_is_imported_with_a_peak_of_a_few_times_its_size() {
    let _one = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    // 200 columns by 10,400 rows, nearly every cell empty: 2.1 MB.
    let columns: Vec<String> = std::iter::once("name".to_owned())
        .chain((1..200).map(|i| format!("c{i}")))
        .collect();
    let mut csv = columns.join(",");
    csv.push('\n');
    let empty_row = ",".repeat(199);
    for n in 0..10_400 {
        csv.push_str(&format!("r{n}"));
        csv.push_str(&empty_row);
        csv.push('\n');
    }
    let file = csv.len();
    assert!(file > 2_000_000, "{file}");

    let mut records = 0;
    let mut largest = 0;
    let streamed = peak_growth(|| {
        let report = parse_csv_in_batches(csv.as_bytes(), ImportLimits::default(), |batch| {
            records += batch.len();
            largest = largest.max(batch.len());
            true // written and dropped, as the import does
        })
        .unwrap();
        assert_eq!(report.rejected_count, 0);
    });
    assert_eq!(records, 10_400);
    assert!(largest > 0 && largest <= BATCH, "{largest}");
    assert!(
        streamed <= 10 * file,
        "streamed: peak growth {streamed} B for a {file} B file"
    );

    // Parsed whole, the same file is many times that: what the batches avoid.
    let whole = peak_growth(|| {
        let parsed = parse_csv(csv.as_bytes(), ImportLimits::default()).unwrap();
        assert_eq!(parsed.records.len(), 10_400);
    });
    assert!(
        whole > 5 * streamed,
        "whole {whole} B, streamed {streamed} B"
    );
    eprintln!("a {file} B file: peak growth {streamed} B streamed, {whole} B parsed whole");

    // Other shapes: long cells, many narrow rows, quoted line breaks,
    // long column names carried by every record.
    let long_cells = format!(
        "name,notes\n{}",
        (0..1_500)
            .map(|n| format!("r{n},{}\n", "x".repeat(9_000)))
            .collect::<String>()
    );
    assert_streamed_within_ten_times("long cells", &long_cells);
    let narrow = format!(
        "name\n{}",
        (0..100_000).map(|n| format!("r{n}\n")).collect::<String>()
    );
    assert_streamed_within_ten_times("many narrow rows", &narrow);
    let quoted = format!(
        "name,address\n{}",
        (0..20_000)
            .map(|n| format!("r{n},\"1 Main St\nSpringfield\"\n"))
            .collect::<String>()
    );
    assert_streamed_within_ten_times("quoted line breaks", &quoted);
    let long_names: Vec<String> = std::iter::once("name".to_owned())
        .chain((1..200).map(|i| format!("{i:0>100}")))
        .collect();
    let wide = format!(
        "{}\n{}",
        long_names.join(","),
        (0..1_000)
            .map(|n| format!("r{n}{}\n", ",v".repeat(199)))
            .collect::<String>()
    );
    assert_streamed_within_ten_times("long column names", &wide);
}

/// One measurement at a time: the allocator counts every thread.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

mod shapes {
    use proptest::prelude::*;

    /// A cell as files carry them: mostly empty or short; quoted with
    /// separators, quotes and line breaks inside; not ASCII; long; too long.
    pub fn cell() -> impl Strategy<Value = String> {
        prop_oneof![
            200 => Just(String::new()),
            60 => "[a-z0-9 ]{1,12}",
            10 => "[a-z,\"\n\r ]{0,40}".prop_map(|s| format!("\"{}\"", s.replace('"', "\"\""))),
            10 => "[é漢字🙂 ]{1,10}",
            2 => (1..3_000usize).prop_map(|n| "y".repeat(n)),
            // Past the limit of a cell: its row is refused.
            1 => (10_001..10_500usize).prop_map(|n| "z".repeat(n)),
        ]
    }

    /// A whole file: a header of `columns` names (long ones too), rows
    /// that may be ragged, either line ending, perhaps a byte-order mark.
    pub fn file() -> impl Strategy<Value = String> {
        (
            1..240usize,
            1..120usize,
            prop::collection::vec(prop::collection::vec(cell(), 0..40), 1..60),
            1..400usize,
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(columns, name_len, rows, repeat, crlf, bom)| {
                let end = if crlf { "\r\n" } else { "\n" };
                let mut csv = String::from(if bom { "\u{feff}" } else { "" });
                let names: Vec<String> = std::iter::once("name".to_owned())
                    .chain((1..columns).map(|i| format!("{i:0>name_len$}")))
                    .collect();
                csv.push_str(&names.join(","));
                csv.push_str(end);
                // The rows again and again, up to about 3 MB.
                'fill: for _ in 0..repeat {
                    for (n, row) in rows.iter().enumerate() {
                        csv.push_str(&format!("r{n}"));
                        // Most rows are as wide as the header (empty cells
                        // filling them out); every tenth is ragged.
                        let width = if n % 10 == 9 { row.len() } else { columns - 1 };
                        for i in 0..width {
                            csv.push(',');
                            csv.push_str(row.get(i).map_or("", String::as_str));
                        }
                        csv.push_str(end);
                        if csv.len() > 3_000_000 {
                            break 'fill;
                        }
                    }
                }
                csv
            })
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 40, ..Default::default() })]

    /// Whatever the shape, an import's peak memory stays within ten times
    /// the file (with a floor for small files), and a file the limits
    /// refuse is refused without holding more.
    #[test]
    fn fuzz_csv_shapes_peak_within_ten_times_the_file(csv in shapes::file()) {
        let _one = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
        let mut records = 0;
        let mut outcome = Ok(());
        let streamed = peak_growth(|| {
            outcome = parse_csv_in_batches(csv.as_bytes(), ImportLimits::default(), |batch| {
                records += batch.len();
                true
            })
            .map(|_| ());
        });
        proptest::prop_assert!(
            streamed <= 10 * csv.len().max(100_000),
            "peak growth {} B for a {} B file ({} records, {:?})",
            streamed, csv.len(), records, outcome.as_ref().err()
        );
    }
}
