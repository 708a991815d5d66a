//! The audit chain's one row format and its one verifier, for both processes.
//!
//! Each side keeps an append-only audit table (triggers refuse UPDATE and DELETE) in which
//! every row carries the hash of the row before it and its own hash:
//!
//! ```text
//! row_hash = SHA-256( prev_hash ‖ seq (i64, big-endian) ‖ time (i64, big-endian)
//!                     ‖ for each field: length (u64, big-endian) ‖ UTF-8 bytes )
//! ```
//!
//! The fields are the row's columns in a fixed order chosen by each side (the executor's
//! seven, the assistant's three). Every field is length-prefixed, so two different rows never
//! hash the same bytes. The first row chains from [`GENESIS`] and has `seq` 1; each next row
//! has the next number. An edit, a deletion or an insertion made behind the program's back
//! breaks the chain at that row, and [`Verifier`] names it.
//!
//! This module does no I/O: each side reads its rows from SQLite and hands them over as
//! [`Row`] values, so both verify with exactly this code.
//!
//! # Rows written before this format
//!
//! The executor's rows have always been written in this format. The assistant's first rows
//! were hashed over canonical JSON instead ([`FORMAT_ASSISTANT_JSON`]). An audit log must not
//! be re-chained — recomputing every hash would also erase the evidence of an earlier edit —
//! so those rows keep the format they were written in, marked by a format number stored in
//! each row, and are verified with the function they were written with. Old rows may only
//! come first: once a row of the current format appears, an old-format row after it is a
//! refusal, so marking a new row "old" cannot be used to hash it some other way.

use sha2::{Digest as _, Sha256};

/// The hash the first row chains from (and the head of an empty chain).
pub const GENESIS: [u8; 32] = [0; 32];

/// The format every row is written in now (see the module documentation).
pub const FORMAT_FIELDS: i64 = 1;

/// The assistant's first format, read but never written: SHA-256 over the previous hash and
/// the canonical JSON of `{id, at, kind, proposal_id, detail}`. Its rows carry three fields:
/// kind, proposal ID (decimal, empty for none) and detail.
pub const FORMAT_ASSISTANT_JSON: i64 = 0;

/// One stored row, as a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The row number (1 for the first row).
    pub seq: i64,
    /// Unix seconds.
    pub time: i64,
    /// How the row was hashed ([`FORMAT_FIELDS`] or [`FORMAT_ASSISTANT_JSON`]).
    pub format: i64,
    /// The hashed columns in the side's fixed order.
    pub fields: Vec<String>,
    /// The previous row's hash as stored.
    pub prev_hash: Vec<u8>,
    /// This row's hash as stored.
    pub row_hash: Vec<u8>,
}

/// The hash of a row in the current format.
pub fn row_hash(prev: &[u8; 32], seq: i64, time: i64, fields: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(seq.to_be_bytes());
    h.update(time.to_be_bytes());
    for field in fields {
        h.update((field.len() as u64).to_be_bytes());
        h.update(field.as_bytes());
    }
    h.finalize().into()
}

/// The hash of a row in the assistant's first format, or `None` when the fields are not the
/// three that format had.
fn assistant_json_hash(
    prev: &[u8; 32],
    seq: i64,
    time: i64,
    fields: &[String],
) -> Option<[u8; 32]> {
    let [kind, proposal_id, detail] = fields else {
        return None;
    };
    // Written from an optional u64 stored as SQLite INTEGER; a value that was NULL (or that
    // could not be a u64) was hashed as null.
    let proposal_id: Option<u64> = match proposal_id.as_str() {
        "" => None,
        text => u64::try_from(text.parse::<i64>().ok()?).ok(),
    };
    let content = serde_json::json!({
        "id": seq,
        "at": time,
        "kind": kind,
        "proposal_id": proposal_id,
        "detail": detail,
    });
    let bytes = crate::canonical::from_value(&content)
        .map(crate::canonical::Canonical::into_string)
        .unwrap_or_else(|_| content.to_string());
    let mut h = Sha256::new();
    h.update(prev);
    h.update(bytes.as_bytes());
    Some(h.finalize().into())
}

/// The first row where the chain breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("audit row {}: {}", self.row(), self.problem())]
pub enum ChainError {
    /// A row's number is not the previous one plus one (a row was deleted or inserted).
    Gap {
        /// The row found.
        seq: i64,
        /// The number expected.
        expected: i64,
    },
    /// A row does not chain from the previous row's hash.
    Link {
        /// The row.
        seq: i64,
    },
    /// A row's content does not match its hash.
    Content {
        /// The row.
        seq: i64,
    },
    /// An old-format row after rows of the current format.
    OldFormatAfterNew {
        /// The row.
        seq: i64,
    },
    /// A format number this build does not know, or fields that format never had.
    Unreadable {
        /// The row.
        seq: i64,
    },
}

impl ChainError {
    /// The row named.
    pub fn row(&self) -> i64 {
        match self {
            ChainError::Gap { seq, .. }
            | ChainError::Link { seq }
            | ChainError::Content { seq }
            | ChainError::OldFormatAfterNew { seq }
            | ChainError::Unreadable { seq } => *seq,
        }
    }

    /// What is wrong with it, and what that means.
    pub fn problem(&self) -> String {
        match self {
            ChainError::Gap { expected, .. } => {
                format!("expected sequence number {expected} (a row was removed or inserted)")
            }
            ChainError::Link { .. } => {
                "does not chain from the previous row (a row was removed, inserted or edited)"
                    .to_owned()
            }
            ChainError::Content { .. } => {
                "content does not match its hash (the row was edited)".to_owned()
            }
            ChainError::OldFormatAfterNew { .. } => {
                "marked with an old row format after rows of the current one (the row was edited \
                 or inserted)"
                    .to_owned()
            }
            ChainError::Unreadable { .. } => {
                "not in a row format this program writes (the row was edited)".to_owned()
            }
        }
    }
}

/// Walks a chain one row at a time, oldest first, so a caller can stream rows from storage.
#[derive(Debug, Clone)]
pub struct Verifier {
    head: [u8; 32],
    next_seq: i64,
    rows: u64,
    current_format_seen: bool,
}

impl Default for Verifier {
    fn default() -> Verifier {
        Verifier::new()
    }
}

impl Verifier {
    /// Before the first row.
    pub fn new() -> Verifier {
        Verifier {
            head: GENESIS,
            next_seq: 1,
            rows: 0,
            current_format_seen: false,
        }
    }

    /// Checks the next row: its number, its link to the row before, its own hash.
    pub fn push(&mut self, row: &Row) -> Result<(), ChainError> {
        let seq = row.seq;
        if seq != self.next_seq {
            return Err(ChainError::Gap {
                seq,
                expected: self.next_seq,
            });
        }
        if row.prev_hash.as_slice() != self.head.as_slice() {
            return Err(ChainError::Link { seq });
        }
        let expected = match row.format {
            FORMAT_FIELDS => {
                self.current_format_seen = true;
                let fields: Vec<&str> = row.fields.iter().map(String::as_str).collect();
                row_hash(&self.head, seq, row.time, &fields)
            }
            FORMAT_ASSISTANT_JSON if self.current_format_seen => {
                return Err(ChainError::OldFormatAfterNew { seq });
            }
            FORMAT_ASSISTANT_JSON => assistant_json_hash(&self.head, seq, row.time, &row.fields)
                .ok_or(ChainError::Unreadable { seq })?,
            _ => return Err(ChainError::Unreadable { seq }),
        };
        if row.row_hash.as_slice() != expected.as_slice() {
            return Err(ChainError::Content { seq });
        }
        self.head = expected;
        self.next_seq = self.next_seq.saturating_add(1);
        self.rows = self.rows.saturating_add(1);
        Ok(())
    }

    /// Rows checked so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The last checked row's hash ([`GENESIS`] before any).
    pub fn head(&self) -> [u8; 32] {
        self.head
    }
}

/// Verifies a whole chain; the number of rows and the head, or the first bad row.
pub fn verify<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Result<(u64, [u8; 32]), ChainError> {
    let mut verifier = Verifier::new();
    for row in rows {
        verifier.push(row)?;
    }
    Ok((verifier.rows(), verifier.head()))
}

// ---------------------------------------------------------------------------------------------
// Reading the audit back (`audit show` on both sides)

/// Reads `--since`: a duration back from `now` (`90s`, `15m`, `2h`, `1d`, `1w`, or
/// combinations such as `1h30m`) or a time (`2026-12-03T09:00:00Z`, `2026-12-03 09:00` in
/// UTC, or a date, meaning its midnight UTC).
pub fn parse_since(text: &str, now: i64) -> Result<i64, String> {
    let text = text.trim();
    if let Some(secs) = duration_secs(text) {
        return Ok(now.saturating_sub(secs));
    }
    if let Ok(ts) = text.parse::<jiff::Timestamp>() {
        return Ok(ts.as_second());
    }
    let civil = text.parse::<jiff::civil::DateTime>().or_else(|_| {
        text.parse::<jiff::civil::Date>()
            .map(|d| d.to_datetime(jiff::civil::Time::midnight()))
    });
    // A civil time is UTC: written with `Z`, it is that instant.
    let utc = civil
        .ok()
        .and_then(|dt| format!("{dt}Z").parse::<jiff::Timestamp>().ok());
    match utc {
        Some(ts) => Ok(ts.as_second()),
        None => Err(format!(
            "--since {text:?}: give a duration back from now (90s, 15m, 2h, 1d, 1w, 1h30m) or a \
             UTC time (2026-12-03T09:00:00Z, 2026-12-03 09:00, 2026-12-03)"
        )),
    }
}

/// `1h30m` → 5400; `None` unless the whole text is number-unit pairs.
fn duration_secs(text: &str) -> Option<i64> {
    let mut total: i64 = 0;
    let mut digits = String::new();
    let mut any = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit: i64 = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 604_800,
            _ => return None,
        };
        let n: i64 = digits.parse().ok()?;
        total = total.checked_add(n.checked_mul(unit)?)?;
        digits.clear();
        any = true;
    }
    (any && digits.is_empty()).then_some(total)
}

/// A row's time as people read it: `2026-12-03 09:00:00 UTC`.
pub fn utc_text(at: i64) -> String {
    jiff::Timestamp::from_second(at)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|_| at.to_string())
}

/// A row's time for machines: RFC 3339 in UTC (`2026-12-03T09:00:00Z`).
pub fn rfc3339(at: i64) -> String {
    jiff::Timestamp::from_second(at)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| at.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn since_reads_durations_and_times() {
        let now = 1_800_000_000;
        assert_eq!(parse_since("90s", now), Ok(now - 90));
        assert_eq!(parse_since("1h30m", now), Ok(now - 5400));
        assert_eq!(parse_since("2d", now), Ok(now - 172_800));
        assert_eq!(parse_since("2026-12-03T09:00:00Z", now), Ok(1_796_288_400));
        assert_eq!(parse_since("2026-12-03 09:00", now), Ok(1_796_288_400));
        assert_eq!(parse_since("2026-12-03", now), Ok(1_796_256_000));
        assert!(parse_since("yesterday", now).is_err());
        assert!(parse_since("5", now).is_err());
        assert!(parse_since("", now).is_err());
        assert_eq!(utc_text(1_796_288_400), "2026-12-03 09:00:00 UTC");
        assert_eq!(rfc3339(1_796_288_400), "2026-12-03T09:00:00Z");
    }

    fn chain(format: i64, contents: &[&[&str]]) -> Vec<Row> {
        let mut prev = GENESIS;
        let mut rows = Vec::new();
        for (i, fields) in contents.iter().enumerate() {
            let seq = i64::try_from(i).unwrap() + 1;
            let fields: Vec<String> = fields.iter().map(|f| (*f).to_owned()).collect();
            let hash = if format == FORMAT_FIELDS {
                let refs: Vec<&str> = fields.iter().map(String::as_str).collect();
                row_hash(&prev, seq, 100 + seq, &refs)
            } else {
                assistant_json_hash(&prev, seq, 100 + seq, &fields).unwrap()
            };
            rows.push(Row {
                seq,
                time: 100 + seq,
                format,
                fields,
                prev_hash: prev.to_vec(),
                row_hash: hash.to_vec(),
            });
            prev = hash;
        }
        rows
    }

    #[test]
    fn the_row_hash_is_the_documented_byte_string() {
        // Spelled out independently of `row_hash`, so a change to the format (which would
        // break every stored chain) fails here.
        let mut bytes = vec![7u8; 32];
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 3]);
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0x01, 0x2c]);
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 2]);
        bytes.extend_from_slice(b"ab");
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
        let expected: [u8; 32] = Sha256::digest(&bytes).into();
        assert_eq!(row_hash(&[7; 32], 3, 300, &["ab", ""]), expected);
        // Length prefixes keep field boundaries apart.
        assert_ne!(
            row_hash(&GENESIS, 1, 1, &["ab", "c"]),
            row_hash(&GENESIS, 1, 1, &["a", "bc"])
        );
    }

    #[test]
    fn the_assistants_first_format_is_canonical_json() {
        let canonical =
            r#"{"at":5,"detail":"{\"chars\":3}","id":1,"kind":"question","proposal_id":null}"#;
        let mut h = Sha256::new();
        h.update(GENESIS);
        h.update(canonical.as_bytes());
        let expected: [u8; 32] = h.finalize().into();
        let fields = [
            "question".to_owned(),
            String::new(),
            "{\"chars\":3}".to_owned(),
        ];
        assert_eq!(assistant_json_hash(&GENESIS, 1, 5, &fields), Some(expected));
        assert_eq!(assistant_json_hash(&GENESIS, 1, 5, &fields[..2]), None);
    }

    #[test]
    fn intact_chains_verify_in_either_format_and_old_rows_may_lead() {
        let new = chain(FORMAT_FIELDS, &[&["a", "b"], &["c", ""], &["d", "e"]]);
        let (rows, head) = verify(&new).unwrap();
        assert_eq!((rows, head.to_vec()), (3, new[2].row_hash.clone()));
        let old = chain(
            FORMAT_ASSISTANT_JSON,
            &[&["question", "", "{}"], &["proposed", "4", "{}"]],
        );
        assert_eq!(verify(&old).unwrap().0, 2);
        assert_eq!(verify(&[]).unwrap(), (0, GENESIS));

        // Two old rows, then the current format chained on from the old head.
        let mut mixed = old.clone();
        let head: [u8; 32] = old[1].row_hash.clone().try_into().unwrap();
        let hash = row_hash(&head, 3, 103, &["expired", "4", "{}"]);
        mixed.push(Row {
            seq: 3,
            time: 103,
            format: FORMAT_FIELDS,
            fields: vec!["expired".into(), "4".into(), "{}".into()],
            prev_hash: head.to_vec(),
            row_hash: hash.to_vec(),
        });
        assert_eq!(verify(&mixed).unwrap(), (3, hash));
    }

    #[test]
    fn every_kind_of_tampering_is_named_at_its_row() {
        let good = chain(FORMAT_FIELDS, &[&["a"], &["b"], &["c"]]);

        let mut edited = good.clone();
        edited[1].fields[0] = "z".into();
        assert_eq!(verify(&edited), Err(ChainError::Content { seq: 2 }));

        let mut retimed = good.clone();
        retimed[2].time += 1;
        assert_eq!(verify(&retimed), Err(ChainError::Content { seq: 3 }));

        let removed: Vec<Row> = vec![good[0].clone(), good[2].clone()];
        assert_eq!(
            verify(&removed),
            Err(ChainError::Gap {
                seq: 3,
                expected: 2
            })
        );

        let mut relinked = good.clone();
        relinked[1].prev_hash = vec![1; 32];
        assert_eq!(verify(&relinked), Err(ChainError::Link { seq: 2 }));

        let mut rehashed = good.clone();
        rehashed[0].row_hash = vec![0; 32];
        assert_eq!(verify(&rehashed), Err(ChainError::Content { seq: 1 }));

        let mut unknown = good.clone();
        unknown[0].format = 9;
        assert_eq!(verify(&unknown), Err(ChainError::Unreadable { seq: 1 }));
    }

    #[test]
    fn an_old_format_mark_after_new_rows_is_refused() {
        let mut rows = chain(FORMAT_FIELDS, &[&["a", "", "{}"]]);
        let head: [u8; 32] = rows[0].row_hash.clone().try_into().unwrap();
        let fields = vec!["b".to_owned(), String::new(), "{}".to_owned()];
        let hash = assistant_json_hash(&head, 2, 102, &fields).unwrap();
        rows.push(Row {
            seq: 2,
            time: 102,
            format: FORMAT_ASSISTANT_JSON,
            fields,
            prev_hash: head.to_vec(),
            row_hash: hash.to_vec(),
        });
        assert_eq!(verify(&rows), Err(ChainError::OldFormatAfterNew { seq: 2 }));
        // Switching a row's mark changes how it hashes, so it no longer matches.
        let mut flipped = chain(FORMAT_ASSISTANT_JSON, &[&["a", "", "{}"]]);
        flipped[0].format = FORMAT_FIELDS;
        assert_eq!(verify(&flipped), Err(ChainError::Content { seq: 1 }));
    }

    #[test]
    fn messages_name_the_row() {
        let e = ChainError::Content { seq: 4 };
        assert_eq!(
            e.to_string(),
            "audit row 4: content does not match its hash (the row was edited)"
        );
        assert_eq!(e.row(), 4);
    }
}
