//! The operator's own pace, for the page's header: the decisions this browser session made in
//! the last hour (approved, denied) and the median time from a card being shown to the
//! decision on it, both read from the audit rows the page already writes. Approving card after
//! card within a few seconds is how a tired or hurried person approves something they did not
//! read, so when the median falls under [`SLOW_DOWN_SECS`] with at least
//! [`SLOW_DOWN_APPROVALS`] approvals, the header says to slow down.

use std::collections::BTreeMap;

use serde_json::Value;

use super::i18n::Lang;
use crate::store::AuditRow;

/// The window the figures cover, in seconds.
pub const WINDOW_SECS: i64 = 3600;

/// A median time to decide below this, in seconds, with enough approvals, asks to slow down.
pub const SLOW_DOWN_SECS: i64 = 5;

/// Approvals in the window before a quick median asks to slow down: one quick approval is
/// not a pattern.
pub const SLOW_DOWN_APPROVALS: u32 = 3;

/// The figures of one session's last hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pace {
    /// Proposals this session approved in the window.
    pub approved: u32,
    /// Proposals this session denied in the window.
    pub denied: u32,
    /// Median seconds from the card shown (last time before the decision) to the decision.
    pub median_secs: Option<i64>,
}

impl Pace {
    /// Whether the header should ask the person to slow down.
    pub fn too_fast(&self) -> bool {
        self.approved >= SLOW_DOWN_APPROVALS && self.median_secs.is_some_and(|m| m < SLOW_DOWN_SECS)
    }

    /// The header line, and the slow-down notice when [`Pace::too_fast`].
    pub fn words(&self, lang: Lang) -> (String, Option<String>) {
        let line = match self.median_secs {
            Some(median) if self.approved + self.denied > 0 => lang.f(
                "pace.line",
                &[
                    ("approved", &self.approved.to_string()),
                    ("denied", &self.denied.to_string()),
                    ("median", &median.to_string()),
                ],
            ),
            _ if self.approved + self.denied > 0 => lang.f(
                "pace.counts",
                &[
                    ("approved", &self.approved.to_string()),
                    ("denied", &self.denied.to_string()),
                ],
            ),
            _ => lang.t("pace.none").to_owned(),
        };
        let slow = self.too_fast().then(|| {
            lang.f(
                "pace.slow",
                &[("median", &self.median_secs.unwrap_or_default().to_string())],
            )
        });
        (line, slow)
    }
}

fn session_of(detail: &Value) -> Option<&str> {
    detail.get("page_session").and_then(Value::as_str)
}

/// The pace of the session whose tag (hex) is `session`, at `now`, from audit rows that
/// cover at least the window before it (older rows are read for when a card was shown).
pub fn pace(rows: &[AuditRow], session: &str, now: i64) -> Pace {
    let since = now.saturating_sub(WINDOW_SECS);
    // When this session last saw each proposal's card, as the rows go by.
    let mut shown: BTreeMap<u64, i64> = BTreeMap::new();
    // Each proposal's first decision by this session in the window: time, approved.
    let mut decided: BTreeMap<u64, (i64, bool)> = BTreeMap::new();
    for row in rows {
        let Some(proposal) = row.proposal_id else {
            continue;
        };
        let detail: Value = serde_json::from_str(&row.detail).unwrap_or(Value::Null);
        if session_of(&detail) != Some(session) {
            continue;
        }
        let approved = match row.kind.as_str() {
            "page_card_shown" => {
                if !decided.contains_key(&proposal) {
                    shown.insert(proposal, row.at);
                }
                continue;
            }
            "page_approval" | "page_passkey_approval" => true,
            "denied" => false,
            _ => continue,
        };
        if row.at >= since && row.at <= now {
            decided.entry(proposal).or_insert((row.at, approved));
        }
    }
    let mut times: Vec<i64> = decided
        .iter()
        .filter_map(|(p, (at, _))| shown.get(p).map(|s| at.saturating_sub(*s).max(0)))
        .collect();
    times.sort_unstable();
    let median_secs = match times.len() {
        0 => None,
        n if n % 2 == 1 => times.get(n / 2).copied(),
        n => {
            let (a, b) = (times.get(n / 2 - 1), times.get(n / 2));
            a.zip(b).map(|(a, b)| (a + b) / 2)
        }
    };
    let approved = decided.values().filter(|(_, a)| *a).count();
    let denied = decided.len().saturating_sub(approved);
    Pace {
        approved: u32::try_from(approved).unwrap_or(u32::MAX),
        denied: u32::try_from(denied).unwrap_or(u32::MAX),
        median_secs,
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A scripted run: rows as the page writes them, at chosen times.
    struct Script {
        rows: Vec<AuditRow>,
    }

    impl Script {
        fn new() -> Script {
            Script { rows: Vec::new() }
        }
        fn row(&mut self, at: i64, kind: &str, proposal: u64, session: &str) -> &mut Script {
            let id = i64::try_from(self.rows.len()).unwrap_or(0) + 1;
            let detail = if kind == "denied" {
                json!({"reason": "denied on the approval page", "page_session": session})
            } else {
                json!({"page_session": session, "approval_id": "ab"})
            };
            self.rows.push(AuditRow {
                id,
                at,
                kind: kind.to_owned(),
                proposal_id: Some(proposal),
                detail: detail.to_string(),
            });
            self
        }
        fn shown(&mut self, at: i64, p: u64) -> &mut Script {
            self.row(at, "page_card_shown", p, "me")
        }
        fn approve(&mut self, at: i64, p: u64) -> &mut Script {
            self.row(at, "page_approval", p, "me")
        }
        fn deny(&mut self, at: i64, p: u64) -> &mut Script {
            self.row(at, "denied", p, "me")
        }
    }

    #[test]
    fn figures_follow_the_clock_and_only_this_session() {
        let t0 = 1_800_000_000;
        let mut s = Script::new();
        s.shown(t0, 1).approve(t0 + 40, 1); // 40 s
        s.shown(t0 + 100, 2).deny(t0 + 120, 2); // 20 s
        s.shown(t0 + 200, 3).approve(t0 + 230, 3); // 30 s
        // Another person's session: not counted.
        s.row(t0 + 300, "page_card_shown", 4, "other")
            .row(t0 + 301, "page_approval", 4, "other");
        let at = pace(&s.rows, "me", t0 + 600);
        assert_eq!(
            at,
            Pace {
                approved: 2,
                denied: 1,
                median_secs: Some(30)
            }
        );
        assert!(!at.too_fast());
        let (line, slow) = at.words(Lang::En);
        assert_eq!(
            line,
            "Your last hour: 2 approved, 1 denied; a median of 30 s from seeing a card to deciding."
        );
        assert!(slow.is_none());
        let (line, _) = at.words(Lang::Es);
        assert!(
            line.starts_with("Tu última hora — aprobadas: 2, denegadas: 1; una mediana de 30 s"),
            "{line}"
        );
        // An hour after the first decision it drops out of the window.
        let later = pace(&s.rows, "me", t0 + 40 + WINDOW_SECS + 1);
        assert_eq!((later.approved, later.denied), (1, 1));
        assert_eq!(later.median_secs, Some(25));
        // Two hours on, nothing is left.
        let (line, _) = pace(&s.rows, "me", t0 + 3 * WINDOW_SECS).words(Lang::En);
        assert_eq!(line, "Your last hour: no decisions yet.");
    }

    #[test]
    fn quick_approvals_in_a_row_ask_to_slow_down() {
        let t0 = 1_800_000_000;
        let mut s = Script::new();
        for p in 1..=3 {
            let at = t0 + i64::try_from(p).unwrap_or(0) * 10;
            s.shown(at, p).approve(at + 2, p);
        }
        let fast = pace(&s.rows, "me", t0 + 60);
        assert_eq!(fast.median_secs, Some(2));
        assert!(fast.too_fast());
        let (_, slow) = fast.words(Lang::En);
        assert!(
            slow.as_deref()
                .is_some_and(|w| w.contains("median of 2 s") && w.contains("Slow down")),
            "{slow:?}"
        );
        let (_, slow) = fast.words(Lang::Es);
        assert!(
            slow.as_deref().is_some_and(|w| w.contains("despacio")),
            "{slow:?}"
        );
        // Two quick approvals are not yet a pattern.
        let two = pace(&s.rows[..4], "me", t0 + 60);
        assert_eq!(two.approved, 2);
        assert!(!two.too_fast());
        // The card seen again just before deciding counts from the last time it was shown.
        let mut again = Script::new();
        again.shown(t0, 1).shown(t0 + 50, 1).approve(t0 + 53, 1);
        assert_eq!(pace(&again.rows, "me", t0 + 60).median_secs, Some(3));
    }
}
