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
