//! Text from outside shown the way a person can read it: one rule for every place a name or a
//! message reaches a person (the confirm page, the approval page's card, the terminal, a
//! receipt's verification).
//!
//! Names of devices, channels, stream destinations and events are written by whoever can rename
//! a device. A character that could rearrange or hide what is around it — a control, a
//! direction override or isolate, a zero-width or other format character, a line or paragraph
//! separator, a space other than U+0020, a private-use, unassigned or surrogate code point — is
//! spelled out visibly instead of being drawn: a C0 control or DEL as its control picture (`␊`
//! for a line feed), anything else as `⟨U+202E⟩`. A disguised name stays recognisable as
//! disguised, an ID beside it reads in its order, and nobody needs to know an escape syntax.
//! Long text is cut, on whole characters (an escape is never split), with an ellipsis.

use unicode_general_category::{GeneralCategory, get_general_category};

/// Whether a character is spelled out rather than drawn: controls (tab and line breaks
/// included), format characters (direction overrides and isolates, zero-width joiners and
/// spaces), private-use, unassigned and surrogate code points, line and paragraph separators,
/// and every space but U+0020.
pub fn is_hidden(c: char) -> bool {
    match get_general_category(c) {
        GeneralCategory::Control
        | GeneralCategory::Format
        | GeneralCategory::PrivateUse
        | GeneralCategory::Unassigned
        | GeneralCategory::Surrogate
        | GeneralCategory::LineSeparator
        | GeneralCategory::ParagraphSeparator => true,
        GeneralCategory::SpaceSeparator => c != ' ',
        _ => false,
    }
}

/// How a hidden character is spelled: a C0 control or DEL as its Unicode control picture
/// (`␊`, `␍`, `␡`), anything else as `⟨U+XXXX⟩`.
pub fn spelled(c: char) -> String {
    let code = u32::from(c);
    let picture = match code {
        0x00..=0x1F => char::from_u32(0x2400 + code),
        0x7F => Some('\u{2421}'),
        _ => None,
    };
    picture.map_or_else(|| format!("⟨U+{code:04X}⟩"), String::from)
}

/// `text` as a person can read it: every [`is_hidden`] character [`spelled`], at most `cap`
/// characters (at least 2) with `…` at the end when cut, never in the middle of a spelled
/// character. Escaping for HTML, or quoting, is the caller's, on top of this.
pub fn readable(text: &str, cap: usize) -> String {
    let cap = cap.max(2);
    let mut out = String::new();
    let mut used = 0usize;
    // Where `out` ends before the first piece that would pass `cap - 1`: the cut, if one is
    // needed (the whole text is kept when it fits in `cap`).
    let mut cut_at = None;
    for c in text.chars() {
        let spelled_out = is_hidden(c).then(|| spelled(c));
        let len = spelled_out.as_ref().map_or(1, |s| s.chars().count());
        if cut_at.is_none() && used + len > cap - 1 {
            cut_at = Some(out.len());
        }
        used += len;
        if used > cap {
            out.truncate(cut_at.unwrap_or(out.len()));
            out.push('…');
            return out;
        }
        match spelled_out {
            Some(s) => out.push_str(&s),
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_could_hide_or_reorder_is_spelled_and_the_rest_is_kept() {
        assert_eq!(
            readable("Courtroom 4\u{202E}\u{200B}\n\u{E000}\u{3000}", 100),
            "Courtroom 4⟨U+202E⟩⟨U+200B⟩␊⟨U+E000⟩⟨U+3000⟩"
        );
        assert_eq!(
            readable("Sala Ñandú — 会议室 ⟨U+202E⟩", 100),
            "Sala Ñandú — 会议室 ⟨U+202E⟩"
        );
        assert_eq!(readable("\u{7f}\t", 10), "␡␉");
    }

    #[test]
    fn long_text_is_cut_on_whole_pieces_to_the_cap() {
        assert_eq!(readable("abcdef", 6), "abcdef");
        assert_eq!(readable("abcdefg", 6), "abcde…");
        assert_eq!(readable("abcd\u{202E}", 6), "abcd…");
        assert_eq!(readable(&"x".repeat(5000), 80).chars().count(), 80);
        for text in [
            "\u{200B}".repeat(600),
            "a\u{202E}".repeat(300),
            "é".repeat(90),
        ] {
            for cap in [2, 3, 10, 11, 12, 80] {
                let shown = readable(&text, cap);
                assert!(shown.chars().count() <= cap, "{cap}: {shown}");
                assert!(!shown.chars().any(is_hidden), "{shown}");
                // A cut never leaves half an escape.
                assert_eq!(
                    shown.matches('⟨').count(),
                    shown.matches('⟩').count(),
                    "{shown}"
                );
            }
        }
    }
}
