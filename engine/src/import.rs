//! CSV import: a header row with a `name` column; every other column is kept
//! as a field. Bad lines are reported with their number and reason, and every
//! good line is imported.

use model::{Field, Rejection};

use crate::store::NewRecord;

/// Bounds on what one import may hold.
#[derive(Clone, Copy, Debug)]
pub struct ImportLimits {
    pub max_bytes: usize,
    pub max_records: usize,
    pub max_columns: usize,
    pub max_field_bytes: usize,
}

impl Default for ImportLimits {
    fn default() -> Self {
        Self {
            max_bytes: 20 * 1024 * 1024,
            max_records: 100_000,
            max_columns: 200,
            max_field_bytes: 10_000,
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
    #[error("the file is empty: expected a header row with a 'name' column")]
    Empty,
    #[error("line 1 (header): {0}")]
    BadHeader(String),
}

/// The good records and the report of the bad lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedCsv {
    pub records: Vec<NewRecord>,
    pub rejected: Vec<Rejection>,
}

/// Parses a CSV file. The header names are trimmed and must be unique
/// (case-insensitively); one of them must be `name`.
pub fn parse_csv(bytes: &[u8], limits: ImportLimits) -> Result<ParsedCsv, ImportError> {
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
        if let Some(prev) = columns.iter().position(|c| c.eq_ignore_ascii_case(&name)) {
            return Err(ImportError::BadHeader(format!(
                "columns {} and {} are both called {name:?}",
                prev + 1,
                i + 1
            )));
        }
        columns.push(name);
    }
    if columns.len() > limits.max_columns {
        return Err(ImportError::BadHeader(format!(
            "{} columns; the limit is {}",
            columns.len(),
            limits.max_columns
        )));
    }
    let name_at = columns
        .iter()
        .position(|c| c.eq_ignore_ascii_case("name"))
        .ok_or_else(|| {
            ImportError::BadHeader(format!("no 'name' column (found: {})", columns.join(", ")))
        })?;

    let mut parsed = ParsedCsv::default();
    let mut row = csv::ByteRecord::new();
    let mut lines = LineCounter::new(bytes);
    loop {
        let line = lines.line_at(reader.position().byte());
        match reader.read_byte_record(&mut row) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                let line = e.position().map_or(line, |p| lines.line_at(p.byte()));
                parsed.rejected.push(Rejection {
                    line,
                    reason: format!("unreadable CSV: {e}"),
                });
                // A broken quote can swallow the rest of the file; stop here.
                if matches!(e.kind(), csv::ErrorKind::Io(_)) {
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
                if parsed.records.len() == limits.max_records {
                    return Err(ImportError::TooManyRecords {
                        limit: limits.max_records,
                    });
                }
                parsed.records.push(record);
            }
            Err(reason) => parsed.rejected.push(Rejection { line, reason }),
        }
    }
    Ok(parsed)
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
            let newlines = self.bytes[self.offset..target]
                .iter()
                .filter(|b| **b == b'\n')
                .count();
            self.line += newlines as u64;
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
    fn a_byte_order_mark_is_not_part_of_the_header() {
        let p = parse("\u{feff}name,city\nAcme,Lyon\n").unwrap();
        assert_eq!(p.records[0].name, "Acme");
    }
}
