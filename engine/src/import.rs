//! CSV import: a header row with a `name` column; every other column is kept
//! as a field. Bad lines are reported with their number and reason, and every
//! good line is imported.

use model::{Field, Rejection};

use crate::store::NewRecord;

/// The largest CSV file one import takes, in bytes.
pub const MAX_IMPORT_BYTES: usize = 20 * 1024 * 1024;

/// Bounds on what one import may hold. Every one of them bounds memory: the
/// file, the header (its names are kept with every record, so their length
/// times the records is what the import stores), and the report of bad lines.
#[derive(Clone, Copy, Debug)]
pub struct ImportLimits {
    pub max_bytes: usize,
    pub max_records: usize,
    pub max_columns: usize,
    pub max_column_name_chars: usize,
    pub max_field_bytes: usize,
    /// Field names and values of all records together, in bytes: what the
    /// file becomes once every record carries its column names.
    pub max_stored_bytes: usize,
    /// Bad lines reported one by one; the rest are only counted.
    pub max_rejections_listed: usize,
}

impl Default for ImportLimits {
    fn default() -> Self {
        Self {
            max_bytes: MAX_IMPORT_BYTES,
            max_records: 100_000,
            max_columns: 200,
            max_column_name_chars: 100,
            max_field_bytes: 10_000,
            max_stored_bytes: 3 * MAX_IMPORT_BYTES,
            max_rejections_listed: 1_000,
        }
    }
}

/// Why a whole file was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error("the file is {size} bytes; the limit is {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    #[error("the file holds more than {limit} records; split it")]
    TooManyRecords { limit: usize },
    #[error(
        "line {line}: the records so far hold more than {limit} bytes once each carries its \
         column names; shorten the column names or split the file"
    )]
    TooMuchStored { line: u64, limit: usize },
    #[error("the file is empty: expected a header row with a 'name' column")]
    Empty,
    #[error("line 1 (header): {0}")]
    BadHeader(String),
}

/// The good records and the report of the bad lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedCsv {
    /// The good records (none from [`parse_csv_in_batches`], which hands them over).
    pub records: Vec<NewRecord>,
    /// The first bad lines, at most [`ImportLimits::max_rejections_listed`].
    pub rejected: Vec<Rejection>,
    /// Every bad line, listed or not.
    pub rejected_count: u64,
}

impl ParsedCsv {
    fn reject(&mut self, limits: ImportLimits, line: u64, reason: impl FnOnce() -> String) {
        self.rejected_count += 1;
        if self.rejected.len() < limits.max_rejections_listed {
            self.rejected.push(Rejection {
                line,
                reason: reason(),
            });
        }
    }
}

/// Parses a CSV file whole. The header names are trimmed and must be
/// unique (case-insensitively); one of them must be `name`. It is CPU work
/// over up to [`MAX_IMPORT_BYTES`]: callers on an async runtime run it on a
/// blocking thread.
pub fn parse_csv(bytes: &[u8], limits: ImportLimits) -> Result<ParsedCsv, ImportError> {
    let mut records = Vec::new();
    let mut parsed = parse_csv_in_batches(bytes, limits, |batch| {
        records.extend(batch);
        true
    })?;
    parsed.records = records;
    Ok(parsed)
}

/// The most records handed over at a time by [`parse_csv_in_batches`].
pub const BATCH: usize = 200;
/// About the most memory one batch holds: a batch is handed over sooner
/// when its records' names, values and field structs reach this.
pub const BATCH_BYTES: usize = 512 * 1024;
/// What a field costs in memory beside its name and value's bytes.
const FIELD_OVERHEAD: usize = 2 * std::mem::size_of::<String>() + 16;

/// Parses a CSV file as [`parse_csv`] does, handing its good records to
/// `each` [`BATCH`] at a time (fewer when they pass [`BATCH_BYTES`])
/// instead of keeping them, so what an import
/// holds is bounded by a batch, not by the file: a file of 10,000 rows of
/// 200 empty cells would otherwise become two million field names in
/// memory. `each` answers whether to go on. The report it returns holds no
/// records, only the bad lines; the whole file's limits (records, stored
/// bytes) still hold, and a file past them is an error after batches were
/// handed over: the caller throws those away.
pub fn parse_csv_in_batches(
    bytes: &[u8],
    limits: ImportLimits,
    mut each: impl FnMut(Vec<NewRecord>) -> bool,
) -> Result<ParsedCsv, ImportError> {
    if bytes.len() > limits.max_bytes {
        return Err(ImportError::TooLarge {
            size: bytes.len(),
            limit: limits.max_bytes,
        });
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ImportError::Empty);
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let header = reader
        .byte_headers()
        .map_err(|e| ImportError::BadHeader(e.to_string()))?
        .clone();
    let columns = column_names(&header, limits)?;
    let name_at = columns
        .iter()
        .position(|c| c.eq_ignore_ascii_case("name"))
        .ok_or_else(|| {
            ImportError::BadHeader(format!("no 'name' column (found: {})", columns.join(", ")))
        })?;

    let mut parsed = ParsedCsv::default();
    let mut batch = Vec::with_capacity(BATCH);
    let mut batch_bytes = 0usize;
    let mut count = 0usize;
    let mut stored = 0usize;
    let mut row = csv::ByteRecord::new();
    let mut lines = LineCounter::new(bytes);
    loop {
        let line = lines.line_at(reader.position().byte());
        match reader.read_byte_record(&mut row) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                let line = e.position().map_or(line, |p| lines.line_at(p.byte()));
                // A broken quote can swallow the rest of the file; stop here.
                let stop = matches!(e.kind(), csv::ErrorKind::Io(_));
                parsed.reject(limits, line, || format!("unreadable CSV: {e}"));
                if stop {
                    break;
                }
                continue;
            }
        }
        // The csv crate's own line numbers skip blank lines; count them from bytes.
        let line = row.position().map_or(line, |p| lines.line_at(p.byte()));
        if row.iter().all(<[u8]>::is_empty) {
            continue; // blank line
        }
        match record_from(&row, &columns, name_at, limits) {
            Ok(record) => {
                if count == limits.max_records {
                    return Err(ImportError::TooManyRecords {
                        limit: limits.max_records,
                    });
                }
                let size = record.name.len()
                    + record
                        .fields
                        .iter()
                        .map(|f| f.name.len() + f.value.len())
                        .sum::<usize>();
                stored += size;
                batch_bytes += size + record.fields.len() * FIELD_OVERHEAD;
                if stored > limits.max_stored_bytes {
                    return Err(ImportError::TooMuchStored {
                        line,
                        limit: limits.max_stored_bytes,
                    });
                }
                count += 1;
                batch.push(record);
                if batch.len() == BATCH || batch_bytes >= BATCH_BYTES {
                    batch_bytes = 0;
                    if !each(std::mem::take(&mut batch)) {
                        return Ok(parsed);
                    }
                }
            }
            Err(reason) => parsed.reject(limits, line, || reason),
        }
    }
    if !batch.is_empty() {
        each(batch);
    }
    Ok(parsed)
}

/// The header's column names, checked: counted before anything else is done
/// with them (a header of a million columns is refused, not compared pairwise).
fn column_names(
    header: &csv::ByteRecord,
    limits: ImportLimits,
) -> Result<Vec<String>, ImportError> {
    if header.len() > limits.max_columns {
        return Err(ImportError::BadHeader(format!(
            "{} columns; the limit is {}",
            header.len(),
            limits.max_columns
        )));
    }
    let mut columns: Vec<String> = Vec::with_capacity(header.len());
    for (i, raw) in header.iter().enumerate() {
        let name = std::str::from_utf8(raw)
            .map_err(|_| ImportError::BadHeader(format!("column {} is not UTF-8 text", i + 1)))?
            .trim()
            .trim_start_matches('\u{feff}')
            .to_owned();
        if name.is_empty() {
            return Err(ImportError::BadHeader(format!(
                "column {} has no name",
                i + 1
            )));
        }
        let chars = name.chars().count();
        if chars > limits.max_column_name_chars {
            return Err(ImportError::BadHeader(format!(
                "column {} has a name of {chars} characters; the limit is {}",
                i + 1,
                limits.max_column_name_chars
            )));
        }
        if let Some(prev) = columns.iter().position(|c| c.eq_ignore_ascii_case(&name)) {
            return Err(ImportError::BadHeader(format!(
                "columns {} and {} are both called {name:?}",
                prev + 1,
                i + 1
            )));
        }
        columns.push(name);
    }
    Ok(columns)
}

/// Line numbers (1-based) of byte offsets, for offsets that only grow.
struct LineCounter<'a> {
    bytes: &'a [u8],
    offset: usize,
    line: u64,
}

impl<'a> LineCounter<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            offset: 0,
            line: 1,
        }
    }

    /// The line of the first byte at or after `byte` that is not a line
    /// break: a record's position can point at blank lines before it.
    fn line_at(&mut self, byte: u64) -> u64 {
        let mut target = usize::try_from(byte)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len());
        while target < self.bytes.len() && matches!(self.bytes[target], b'\r' | b'\n') {
            target += 1;
        }
        if target > self.offset {
            // A line ends with `\n`, `\r\n` or a lone `\r`, as the csv
            // crate reads it.
            let breaks = (self.offset..target)
                .filter(|&i| match self.bytes[i] {
                    b'\n' => true,
                    b'\r' => self.bytes.get(i + 1) != Some(&b'\n'),
                    _ => false,
                })
                .count();
            self.line += breaks as u64;
            self.offset = target;
        }
        self.line
    }
}

fn record_from(
    row: &csv::ByteRecord,
    columns: &[String],
    name_at: usize,
    limits: ImportLimits,
) -> Result<NewRecord, String> {
    if row.len() != columns.len() {
        return Err(format!(
            "{} values for {} columns",
            row.len(),
            columns.len()
        ));
    }
    let mut name = String::new();
    let mut fields = Vec::with_capacity(columns.len().saturating_sub(1));
    for (i, (raw, column)) in row.iter().zip(columns).enumerate() {
        let value =
            std::str::from_utf8(raw).map_err(|_| format!("column {column:?} is not UTF-8 text"))?;
        if value.len() > limits.max_field_bytes {
            return Err(format!(
                "column {column:?} is {} bytes; the limit is {}",
                value.len(),
                limits.max_field_bytes
            ));
        }
        if value
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
        {
            return Err(format!("column {column:?} holds control characters"));
        }
        if i == name_at {
            name = value.to_owned();
        } else {
            fields.push(Field {
                name: column.clone(),
                value: value.to_owned(),
            });
        }
    }
    if name.is_empty() {
        return Err("the name is empty".to_owned());
    }
    Ok(NewRecord { name, fields })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ParsedCsv, ImportError> {
        parse_csv(text.as_bytes(), ImportLimits::default())
    }

    #[test]
    fn good_rows_are_kept_in_order_with_their_fields() {
        let p = parse("Name,website,city\nAcme,https://acme.example,Lyon\n\"Bolt, Inc.\",,Oslo\n")
            .unwrap();
        assert!(p.rejected.is_empty());
        assert_eq!(p.records.len(), 2);
        assert_eq!(p.records[1].name, "Bolt, Inc.");
        assert_eq!(
            p.records[0].fields,
            vec![
                Field {
                    name: "website".into(),
                    value: "https://acme.example".into()
                },
                Field {
                    name: "city".into(),
                    value: "Lyon".into()
                },
            ]
        );
    }

    #[test]
    fn bad_lines_are_reported_and_good_ones_kept() {
        let text = "name,city\nAcme,Lyon\n,Paris\nBolt,Oslo,extra\n\nCorp\nDelta,Rome\n";
        let p = parse(text).unwrap();
        let names: Vec<&str> = p.records.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["Acme", "Delta"]);
        let lines: Vec<(u64, &str)> = p
            .rejected
            .iter()
            .map(|r| (r.line, r.reason.as_str()))
            .collect();
        assert_eq!(
            lines,
            [
                (3, "the name is empty"),
                (4, "3 values for 2 columns"),
                (6, "1 values for 2 columns"),
            ]
        );
    }

    #[test]
    fn invalid_utf8_is_a_bad_line_not_a_bad_file() {
        let mut bytes = b"name\nAcme\n".to_vec();
        bytes.extend_from_slice(b"Bad\xff\nGood\n");
        let p = parse_csv(&bytes, ImportLimits::default()).unwrap();
        assert_eq!(p.records.len(), 2);
        assert_eq!(
            p.rejected,
            vec![Rejection {
                line: 3,
                reason: "column \"name\" is not UTF-8 text".into()
            }]
        );
    }

    #[test]
    fn whole_file_errors_say_what_is_wrong() {
        assert_eq!(parse(""), Err(ImportError::Empty));
        assert!(
            matches!(parse("city,url\nLyon,x\n"), Err(ImportError::BadHeader(m)) if m.contains("no 'name' column"))
        );
        assert!(
            matches!(parse("name,Name\nA,B\n"), Err(ImportError::BadHeader(m)) if m.contains("both called"))
        );
        assert!(
            matches!(parse("name,,x\nA,B,C\n"), Err(ImportError::BadHeader(m)) if m.contains("column 2 has no name"))
        );
        let limits = ImportLimits {
            max_bytes: 10,
            ..Default::default()
        };
        assert!(matches!(
            parse_csv(b"name\nAcme Corporation\n", limits),
            Err(ImportError::TooLarge { .. })
        ));
        let limits = ImportLimits {
            max_records: 2,
            ..Default::default()
        };
        assert_eq!(
            parse_csv(b"name\na\nb\nc\n", limits),
            Err(ImportError::TooManyRecords { limit: 2 })
        );
    }

    #[test]
    fn a_header_is_counted_before_its_names_are_compared() {
        let columns: Vec<String> = (0..50_000).map(|i| format!("c{i}")).collect();
        let text = format!("name,{}\nAcme\n", columns.join(","));
        assert_eq!(
            parse(&text),
            Err(ImportError::BadHeader(
                "50001 columns; the limit is 200".into()
            ))
        );
    }

    #[test]
    fn a_long_column_name_is_refused_with_its_column() {
        let text = format!("name,{}\nAcme,x\n", "n".repeat(101));
        assert_eq!(
            parse(&text),
            Err(ImportError::BadHeader(
                "column 2 has a name of 101 characters; the limit is 100".into()
            ))
        );
        let text = format!("name,{}\nAcme,x\n", "é".repeat(100));
        assert!(
            parse(&text).is_ok(),
            "100 characters are allowed, whatever their bytes"
        );
    }

    #[test]
    fn column_names_repeated_on_every_record_are_bounded_in_total() {
        // 100 columns of 100-character names over 1,000 near-empty rows: an
        // 11 KB header and 100 KB of rows that would store 10 MB of names.
        let names: Vec<String> = (0..100).map(|i| format!("{i:0>100}")).collect();
        let mut text = format!("name,{}\n", names[1..].join(","));
        for i in 0..1_000 {
            text.push_str(&format!("r{i}{}\n", ",".repeat(99)));
        }
        let limits = ImportLimits {
            max_stored_bytes: 1_000_000,
            ..Default::default()
        };
        assert_eq!(
            parse_csv(text.as_bytes(), limits),
            Err(ImportError::TooMuchStored {
                line: 102,
                limit: 1_000_000
            })
        );
        assert_eq!(
            parse_csv(text.as_bytes(), ImportLimits::default())
                .unwrap()
                .records
                .len(),
            1_000
        );
    }

    #[test]
    fn the_report_lists_the_first_bad_lines_and_counts_them_all() {
        let mut text = "name,city\nAcme,Lyon\n".to_owned();
        for _ in 0..5_000 {
            text.push_str(",nowhere\n");
        }
        let p = parse(&text).unwrap();
        assert_eq!(p.records.len(), 1);
        assert_eq!(p.rejected_count, 5_000);
        assert_eq!(p.rejected.len(), 1_000);
        assert_eq!(p.rejected[0].line, 3);
        assert_eq!(p.rejected[999].line, 1_002);
    }

    #[test]
    fn lines_ending_in_a_lone_carriage_return_are_numbered_too() {
        let p = parse("name,city\rAcme,Lyon\r,Paris\rBolt,Oslo\r").unwrap();
        assert_eq!(p.records.len(), 2);
        assert_eq!(p.rejected[0].line, 3);
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_header() {
        let p = parse("\u{feff}name,city\nAcme,Lyon\n").unwrap();
        assert_eq!(p.records[0].name, "Acme");
    }
}
