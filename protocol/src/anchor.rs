//! Cross-anchoring the two audit chains.
//!
//! Each side's audit log is a hash chain, which shows an edited or removed row in the middle
//! but not the newest rows removed from the end: the shorter chain still verifies. So each
//! side records the other's chain head at the moments they meet — the executor stores the head
//! the assistant sent with each `Execute`, the assistant stores the head the executor returned
//! with each outcome — and `audit verify --against` checks that every head one side recorded
//! is still a row of the other side's chain.
//!
//! The other side's chain travels as a *heads listing*: `audit heads` prints one line per row,
//! `SEQ HASH` (row number, 64 lower-case hex digits), oldest first. Listings carry hashes
//! only, never row content, so they can be passed between the two service users freely.

use std::collections::BTreeSet;

/// The head of an empty chain. Always "present": a side that had written nothing yet.
pub const EMPTY_CHAIN: [u8; 32] = crate::audit::GENESIS;

/// One line of a heads listing (no newline).
pub fn heads_line(seq: i64, hash: &[u8; 32]) -> String {
    format!("{seq} {}", crate::hex::encode(hash))
}

/// Why a heads listing was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadsError {
    /// A line is not `SEQ HASH`.
    #[error("line {line}: expected `<row number> <64 hex digits>`")]
    Malformed {
        /// 1-based line number.
        line: usize,
    },
    /// Row numbers do not increase by one from the first line (a listing cut or spliced).
    #[error("line {line}: row {found} follows row {previous}; a listing counts up by one")]
    OutOfOrder {
        /// 1-based line number.
        line: usize,
        /// The row number found.
        found: i64,
        /// The row number before it.
        previous: i64,
    },
}

/// The set of row hashes in a heads listing. Blank lines are ignored; anything else must be a
/// `SEQ HASH` line, with row numbers counting up by one.
pub fn parse_heads(text: &str) -> Result<BTreeSet<[u8; 32]>, HeadsError> {
    let mut hashes = BTreeSet::new();
    let mut previous: Option<i64> = None;
    for (index, raw) in text.lines().enumerate() {
        let line = index.saturating_add(1);
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            continue;
        }
        let mut parts = trimmed.split_ascii_whitespace();
        let (Some(seq), Some(hash), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(HeadsError::Malformed { line });
        };
        let seq: i64 = seq.parse().map_err(|_| HeadsError::Malformed { line })?;
        let hash = crate::hex::decode_array(hash).ok_or(HeadsError::Malformed { line })?;
        if let Some(previous) = previous
            && previous.checked_add(1) != Some(seq)
        {
            return Err(HeadsError::OutOfOrder {
                line,
                found: seq,
                previous,
            });
        }
        previous = Some(seq);
        hashes.insert(hash);
    }
    Ok(hashes)
}

/// A recorded head the other chain no longer contains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingAnchor {
    /// This side's row that recorded it.
    pub row: i64,
    /// The head it recorded.
    pub head: [u8; 32],
}

/// The first recorded head (in row order) that `other` does not contain, if any. Every head
/// recorded while the other side was still empty counts as present.
pub fn first_missing(
    recorded: &[(i64, [u8; 32])],
    other: &BTreeSet<[u8; 32]>,
) -> Option<MissingAnchor> {
    recorded
        .iter()
        .find(|(_, head)| *head != EMPTY_CHAIN && !other.contains(head))
        .map(|(row, head)| MissingAnchor {
            row: *row,
            head: *head,
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn h(n: u8) -> [u8; 32] {
        [n; 32]
    }

    #[test]
    fn a_listing_round_trips() {
        let text = [heads_line(1, &h(1)), heads_line(2, &h(0xab))].join("\n");
        assert_eq!(
            text.lines().nth(1).unwrap(),
            format!("2 {}", "ab".repeat(32))
        );
        let set = parse_heads(&format!("{text}\n\n")).unwrap();
        assert_eq!(set, BTreeSet::from([h(1), h(0xab)]));
        assert_eq!(parse_heads("").unwrap(), BTreeSet::new());
        let upper = format!("1 {}", "AB".repeat(32));
        assert_eq!(parse_heads(&upper).unwrap(), BTreeSet::from([h(0xab)]));
    }

    #[test]
    fn malformed_and_spliced_listings_are_refused() {
        let good = "ab".repeat(32);
        for (text, line) in [
            (format!("1 {}", &good[..62]), 1),
            (format!("1 {good} extra"), 1),
            (format!("x {good}"), 1),
            (format!("1 {}", "zz".repeat(32)), 1),
            (format!("1 {good}\n2"), 2),
        ] {
            assert_eq!(
                parse_heads(&text),
                Err(HeadsError::Malformed { line }),
                "{text}"
            );
        }
        assert_eq!(
            parse_heads(&format!("1 {good}\n3 {good}")),
            Err(HeadsError::OutOfOrder {
                line: 2,
                found: 3,
                previous: 1
            })
        );
    }

    #[test]
    fn the_first_missing_anchor_is_named_and_an_empty_head_is_never_missing() {
        let other = BTreeSet::from([h(1), h(2)]);
        let recorded = [(4, EMPTY_CHAIN), (5, h(1)), (9, h(3)), (12, h(4))];
        assert_eq!(
            first_missing(&recorded, &other),
            Some(MissingAnchor { row: 9, head: h(3) })
        );
        assert_eq!(first_missing(&recorded[..2], &other), None);
        assert_eq!(first_missing(&[], &BTreeSet::new()), None);
    }
}
