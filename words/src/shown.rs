//! Fleet-supplied text made safe to print.
//!
//! Names of devices, channels and events are data written by whoever runs the fleet. They are
//! printed as they are, except that characters which could rearrange a terminal line or a
//! page (controls, bidirectional overrides, zero-width marks, line separators) are spelled
//! out — a control character as its picture (`␊` for a line feed, `␍`, `␉`), anything else
//! as `⟨U+202E⟩` — so a name can never start a line of its own, pass itself off as a heading
//! or hide part of itself, and a person reads it without knowing any language's escapes.
//! Showing them rather than dropping them keeps a disguised name recognisable as disguised.

use fleetwatch_protocol::fleet::Device;

use crate::lang::Lang;

/// Longest name shown, in characters (ellipsis included).
pub const NAME_CAP: usize = 80;

/// How a character that must not be printed as itself is spelled (the protocol's one rule).
pub use fleetwatch_protocol::shown::spelled;

/// `text` made safe for one line: hidden characters [`spelled`] out, at most
/// [`NAME_CAP`] characters with an ellipsis when cut.
pub fn shown(text: &str) -> String {
    shown_capped(text, NAME_CAP)
}

/// [`shown`] with its own cap (at least 2 characters): the protocol's
/// [`fleetwatch_protocol::shown::readable`], so a name reads the same on the page, the confirm
/// page and the terminal.
pub fn shown_capped(text: &str, cap: usize) -> String {
    fleetwatch_protocol::shown::readable(text, cap)
}

/// `text` shown and in the language's quotation marks: “…” or «…».
pub fn quoted(text: &str, lang: Lang) -> String {
    match lang {
        Lang::En => format!("“{}”", shown(text)),
        Lang::Es => format!("«{}»", shown(text)),
    }
}

/// "Name (id)" for a list line, or just the ID when the name is blank.
pub fn label(device: &Device) -> String {
    if device.name.trim().is_empty() {
        shown(&device.id)
    } else {
        format!("{} ({})", shown(&device.name), shown(&device.id))
    }
}

/// "“Name” (id)" for a sentence, where quotation marks show where the name ends.
pub fn quoted_label(device: &Device, lang: Lang) -> String {
    format!("{} ({})", quoted(&device.name, lang), shown(&device.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_escapes_and_caps() {
        assert_eq!(shown("a\nb\u{202E}c\u{200B}"), "a␊b⟨U+202E⟩c⟨U+200B⟩");
        assert_eq!(shown("A\u{1b}[31mB"), "A␛[31mB");
        assert_eq!(shown("tab\there\r\u{7f}"), "tab␉here␍␡");
        let long = "x".repeat(200);
        let s = shown(&long);
        assert_eq!(s.chars().count(), NAME_CAP);
        assert!(s.ends_with('…'));
        // An escape near the cut is dropped whole, never split.
        let tricky = format!("{}\u{202E}tail", "y".repeat(75));
        assert_eq!(shown(&tricky), format!("{}…", "y".repeat(75)));
        assert_eq!(shown_capped("abcdef", 4), "abc…");
    }

    #[test]
    fn quotes_follow_the_language() {
        assert_eq!(quoted("Sala\u{2028}1", Lang::Es), "«Sala⟨U+2028⟩1»");
        assert_eq!(quoted("Room", Lang::En), "“Room”");
    }
}
