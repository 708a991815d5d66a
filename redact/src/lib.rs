//! Redaction of Epiphan read results and error text before anything parses, shows, logs or
//! sends them: stream keys, credentials in URLs, tokens. Redacting twice equals redacting once,
//! look-alike words stay, and valid proposal arguments pass through unchanged.
//!
//! # Rules
//!
//! **Secret names** ([`is_secret_key`]). A name is split into lower-case words at `_`, `-`,
//! spaces, punctuation, camelCase humps and letter/digit boundaries (`APIKey` → `api key`,
//! `stream_key_2` → `stream key 2`). It names a secret when
//! * any word is, or ends with, `password(s)`, `passwd`, `passphrase`, `passcode(s)`,
//!   `secret(s)`, `token(s)`, `authorization`, `credential(s)` or `cookie(s)` (`client_secret`,
//!   `accesstoken`, `token_type`, `input_tokens` — counts under such names are masked too;
//!   masking too much is the safe side), or
//! * its last word, ignoring trailing qualifiers (`value`, `data`, `string`, `hex`, `base64`,
//!   pure digits …), is `key`, `keys`, `pass`, `pwd`, `auth`, `signature`, `sig`, `pin`,
//!   `pincode`, `otp` or `playpath`, or a single word made of a known prefix and `key`
//!   (`streamkey`, `apikey`, `privatekey`, `passkey` …), or
//! * the same in Spanish, the interface's other language, and its neighbours: `contraseña`,
//!   `passwort`, `kennwort`, `senha` anywhere, `passe` last (`mot de passe`), and `clave` /
//!   `clé` first or last in a name of at most four words (`clave de transmisión`).
//!
//! So `key`, `stream_key`, `StreamKey`, `api_key`, `secret_key`, `keys` are secrets, while
//! `keyframe_interval`, `key_frame`, `key_id`, `keys_count`, `keyboard`, `monkey`, `hotkey`,
//! `turkey`, `Id`, `GroupId`, `device_id`, `channel_id`, `event_id` are not. Text also treats
//! `stream`, `session`, `sid` and session-ID names (`sessionid`, `jsessionid`) as secret names
//! (the stream name of an RTMP address is its key); they do not make a JSON member secret, an
//! object under `stream` being a description, not a key.
//!
//! **JSON values** ([`redact_value`]).
//! * **Mask what can hold a secret, keep what cannot.** A value under a secret name becomes
//!   `"[redacted]"` when it can hold one: a string, a number (a PIN, a code), an object or an
//!   array, replaced whole. `null`, `true` and `false` stay: they say whether a setting is there
//!   or on, never what it is (`"password": true`, `"stream_key": null`), and parsers tell "no
//!   key" from "a key".
//! * An object with a `value` member and a label member (`name`, `id`, `key`, `title`, `label`,
//!   `field`, `param`, `parameter`, `setting`) whose text names a secret has its `value` masked
//!   (Epiphan publisher settings: `{id, type: {name}, title: "Stream key", value}`). A label is
//!   judged on its text before any `(`, so `"Stream key (optional)"` counts.
//! * A string under `key` is a label, not a secret, when the object also has a `value` member
//!   (`{"key": "resolution", "value": "1080p"}` stays) or when it is itself written as the name
//!   of a secret, every word one secret names are made of (`{"key": "stream_key"}`); the pair
//!   rule needs the label intact on a second pass. A value that merely holds such a word
//!   (`longsecret99`, `planted-key-001`, `KEY123`) is a secret.
//! * Under a name ending in `stream_id` / `streamId` (or `stream_ids`), a UUID stays and
//!   anything else is masked: that is where a stream key would be mistaken for an ID.
//! * Every other string, object member names included, goes through [`redact_text`].
//!
//! **Text** ([`redact_text`]), in this order:
//! 0. Embedded JSON (`embedded`): an object starting at a `{` that parses is redacted as
//!    JSON, so a name or message holding `{"name": "Stream key", "value": …}` or an object
//!    under a secret name is judged by structure. It keeps its layout when the text rules
//!    would mask the same, and is written back as compact JSON otherwise.
//! 1. URLs (`urls`). `rtmp`, `rtmps`, `rtmpe`, `rtmpt`, `srt`, `rtsp`, `rtsps`, `rist` keep
//!    scheme and host(:port); user info becomes `[redacted]@`, a path becomes `/[redacted]`, a
//!    query `?[redacted]`, a fragment `#[redacted]`. `http`, `https`, `ws`, `wss` drop user
//!    info and mask query and fragment; the path is masked too when a segment equals `app`,
//!    `key` or `keys`, starts with `live`, `ingest`, `publish`, `stream`, `rtmp`, `whip`,
//!    `push` or `hls`, or names a secret (`/token/…`) (documentation paths such as
//!    `/Streaming/` are masked as well — over-masking a help link costs little, leaking an
//!    ingest path costs a stream); when the address is a webhook (a host label or a segment
//!    starting with `hook`/`webhook`, or `services/<ID>/…`: the path is the credential); when
//!    a segment already holds the mask (what follows a masked segment is as secret); or when a
//!    segment holds a generated-looking key (16 or more letters and digits, mixed). Any other
//!    scheme masks user info, query and fragment, and the path on the last two grounds. A
//!    webhook address written without a scheme (`hooks.<chat>/services/…`) is masked as one.
//!    A scheme is classified by how its letters end, so `xrtmp://` cannot dodge the stream
//!    rule. The scheme separator and the body are read through JSON escapes (`\/`, also
//!    doubled, `\u002F`), percent-encoding of `: / ? # @ & = %` (also doubled) and HTML
//!    entities; a URL ends at whitespace, a quote, `<`, `>`, a backtick or a lone backslash.
//!    A URL that needs masking is written decoded; one that does not stays as written.
//! 2. Assignments (`assignments`): `name: value`, `name=value`, `"name": "value"` where the
//!    name (the word right before the separator, or the last two words, or the whole quoted
//!    name, a `(remark)` or Markdown emphasis around it set aside: `**Stream key:** …`) is
//!    secret. A quoted value has its content masked and keeps its quotes (double, single,
//!    backtick, and `\"` escaped quotes, for JSON held inside a string); an unquoted value runs to whitespace or one of ``, ; & " ' < > } ) ` `` and is
//!    masked (not `]`, so a bracket cannot end a secret early), a cookie's to the end of the
//!    line; after a quoted (JSON-style) name it is written as `"[redacted]"` so JSON text stays
//!    JSON. After a quoted name a value starting with `{` or `[` is left to the nested names
//!    and `null`, `true` and `false` stay. An authorization scheme word (`Bearer`, `Basic`, `Digest`, `Token`) at
//!    the start of a value stays and the credential after it is masked. A value on the next
//!    line is not reached (`credentials:` opening a YAML block must not swallow the block).
//!    A text-only secret name, or a name of three or four words found secret only by its
//!    leading `clave`, masks a value only when it is not a plain word (letters, one case after
//!    the first) in whatever form it is written (`name: value`, `"name": "value"`,
//!    `name=value`), so `Session 2: Opening`, `"stream": "Program"` and `la clave del éxito:
//!    practicar` stay while `"stream": "live_9f8e"` is masked. After a quoted (JSON-style)
//!    name, `null`, `true` and `false` stay, as in JSON values. A stream-ID name
//!    keeps a UUID. Settings pairs written as text (`name=Stream key value=…`, `"label":
//!    "Password", "value": …`, `- name: Stream key` over `  value: …`) mask the value of a
//!    record whose label names a secret; a record ends at a brace, a blank line, a new list
//!    item, or where a label follows a labelled value. A mask
//!    standing where a name was (`[redacted]: …`) makes the value a secret's.
//!    An arrow (`→`, `->`, `=>`, `⇒`) separates as `:` does. A secret named in prose — a
//!    secret name, then a linking phrase between blanks (`is`, `was`, `are`, `is now`, `is
//!    set to`, `was changed to`, `es`, `es ahora`, `era`, `son`, `est`, `ist`, `é`) — has its
//!    value masked when it is quoted, holds a mask, or looks generated; a plain word after
//!    the link reads as prose (`the stream key is missing`, `la contraseña es obligatoria`),
//!    and names secret in text only do not count (`the stream is live`). A linking phrase
//!    written with `:` or `=` (`la clave es: …`) separates as an arrow does.
//! 3. Tables (`tables`): Markdown, CSV, TSV and `;` tables whose header names a secret column
//!    have that column masked in every row; `key | value` style headers mask the values of
//!    rows whose label names a secret.
//! 4. `Bearer X` / `Basic X` anywhere: X is masked when it looks like a credential (8 or more
//!    credential characters including a digit, or 20 or more with mixed case, `+`, `/` or
//!    `=`), so "a bearer of good news" and "Basic information" stay.
//! 5. Anthropic keys: `sk-ant-…` becomes `[redacted]` whole.
//! 6. JSON Web Tokens: `eyJ…`, three dot-separated parts, becomes `[redacted]` whole.
//!
//! Prose such as "token ring" or "the key to success" stays; "Key: West" does not (a secret
//! name followed by a separator is an assignment, whatever the intent).
//!
//! **A mask is no shield.** Text may already hold `[redacted]`, written by whoever produced
//! it. Every rule reads on past a mask: characters glued to a mask that stands for a value
//! are the rest of that value (`password=[redacted]hunter2`, `Bearer [redacted]abc`), so is
//! a generated-looking token after it (`key: [redacted] live_9f8e`), a URL path holding a mask
//! is masked from there, a table cell holding more than the mask is masked, and the text
//! after a mask is scanned like any other.
//!
//! **Idempotence.** Every rule writes the exact mask, and every rule that meets text already
//! starting with the mask leaves it as it is. A mask can still uncover work for an earlier
//! rule: in `sk-ant-x://rtmp://h/k` the second URL sits inside the first one's body until the
//! key is masked. So the text rules repeat until a round changes nothing (at most eight
//! rounds; each round only ever masks more, so stopping early never un-masks anything). JSON
//! decisions are taken on already-redacted member names and labels, so a second pass decides
//! exactly as the first; embedded JSON written back parses to the same redacted value.

mod assignments;
mod embedded;
mod tables;
mod urls;

use std::borrow::Cow;

use serde_json::{Map, Value};

use assignments::mask_assignments;
use embedded::mask_embedded_json;
use tables::mask_tables;
use urls::mask_urls;

/// The mask written in place of a secret.
pub const MASK: &str = "[redacted]";

/// Words that make a name secret wherever they appear (also as the end of a longer word).
const STRONG_WORDS: &[&str] = &[
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "secret",
    "secrets",
    "token",
    "tokens",
    "authorization",
    "credential",
    "credentials",
    "cookie",
    "cookies",
    "passcode",
    "passcodes",
    // The same in the languages operators name rooms and settings in: Spanish, the interface's
    // second language, and the neighbours a fleet is likely to hold.
    "contraseña",
    "contraseñas",
    "contrasena",
    "contrasenas",
    "passwort",
    "kennwort",
    "senha",
];

/// Words for "key" in languages that put the qualifier after the noun (`clave de
/// transmisión`, `clé de flux`): a name of at most [`LEADING_WORD_NAME`] words that starts or
/// ends with one is secret.
const LEADING_WORDS: &[&str] = &["clave", "claves", "clé", "clés"];

/// Longest name, in words, that [`LEADING_WORDS`] make secret from the front.
const LEADING_WORD_NAME: usize = 4;

/// Words that make a name secret when they are its last meaningful word.
const TAIL_WORDS: &[&str] = &[
    "key",
    "keys",
    "pass",
    "pwd",
    "auth",
    "signature",
    "sig",
    "pin",
    "pincode",
    "otp",
    "playpath",
    "passe",
];

/// Prefixes that turn a single word ending in `key`/`keys` into a secret (`streamkey`), chosen
/// so that `monkey`, `hotkey`, `turkey`, `donkey` and `whiskey` stay ordinary words.
const KEY_PREFIXES: &[&str] = &[
    "stream",
    "streaming",
    "api",
    "secret",
    "private",
    "access",
    "publish",
    "publishing",
    "auth",
    "encryption",
    "signing",
    "session",
    "ingest",
    "pass",
    "client",
    "app",
    "shared",
    "live",
    "rtmp",
    "srt",
];

/// Trailing words that describe the form of a secret rather than naming something else.
const QUALIFIERS: &[&str] = &[
    "value",
    "val",
    "data",
    "string",
    "str",
    "text",
    "b64",
    "base64",
    "hex",
    "raw",
    "plain",
    "plaintext",
    "material",
    "enc",
    "encrypted",
];

/// Words that make a name secret in text when they are its last meaningful word: the stream
/// name of an RTMP address is its key, and a session ID is a login. They do not make a JSON
/// member secret (an object under `stream` or `session` describes one), and after an unquoted
/// name and `:` they need a value that looks generated, so event titles such as
/// `Session 2: Opening` stay.
const TEXT_TAIL_WORDS: &[&str] = &["stream", "session", "sid"];

/// Whole names (compacted) that are session IDs.
const TEXT_SESSION_NAMES: &[&str] = &["sessionid", "sessid", "jsessionid", "phpsessid"];

/// Member names that label a `{label, value}` settings pair.
const LABEL_NAMES: &[&str] = &[
    "name",
    "id",
    "key",
    "title",
    "label",
    "field",
    "param",
    "parameter",
    "setting",
];

/// Linking phrases that tie a secret's name to its value in prose (`the stream key is …`,
/// `la clave es …`, `the password was set to …`), in the languages of [`STRONG_WORDS`]. Each
/// is matched whole, in any case, after a blank and before a blank (or a `:`/`=`).
const LINK_PHRASES: &[&[&str]] = &[
    &["is"],
    &["is", "now"],
    &["is", "set", "to"],
    &["was"],
    &["was", "set", "to"],
    &["was", "changed", "to"],
    &["are"],
    &["set", "to"],
    &["changed", "to"],
    &["es"],
    &["es", "ahora"],
    &["era"],
    &["son"],
    &["est"],
    &["ist"],
    &["é"],
];

/// Most words in a phrase of [`LINK_PHRASES`].
const LINK_WORDS_MAX: usize = 3;

/// Most characters in a word of [`LINK_PHRASES`].
const LINK_WORD_CHARS_MAX: usize = 7;

/// A word that opens a phrase of [`LINK_PHRASES`], in any case.
fn is_link_word(word: &str) -> bool {
    LINK_PHRASES
        .iter()
        .any(|phrase| phrase.first().is_some_and(|link| lower_is(word, link)))
}

/// `word.to_lowercase() == lower`, without building the lower-case copy.
fn lower_is(word: &str, lower: &str) -> bool {
    word.chars().flat_map(char::to_lowercase).eq(lower.chars())
}

/// The length, in words, of the longest phrase of [`LINK_PHRASES`] that `words` start with.
fn link_phrase_len(words: &[String]) -> Option<usize> {
    LINK_PHRASES
        .iter()
        .filter(|phrase| {
            phrase.len() <= words.len()
                && phrase
                    .iter()
                    .zip(words)
                    .all(|(link, word)| lower_is(word, link))
        })
        .map(|phrase| phrase.len())
        .max()
}

/// Whether the text may hold a separator other than `:`/`=`: an arrow, or a word that opens a
/// linking phrase with a blank before it. Called for most strings of a read result, so it
/// reads bytes and says yes to any word with a non-ASCII letter (the rule then decides).
fn has_link(text: &str) -> bool {
    if !text.is_ascii() && ["→", "⇒", "⟶"].iter().any(|a| text.contains(a)) {
        return true;
    }
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(at, &byte)| match byte {
        b'>' => at
            .checked_sub(1)
            .and_then(|p| bytes.get(p))
            .is_some_and(|&p| p == b'-' || p == b'='),
        b' ' | b'\t' => {
            let rest = bytes.get(at.saturating_add(1)..).unwrap_or_default();
            let len = rest.iter().take_while(|b| b.is_ascii_alphabetic()).count();
            let word = rest.get(..len).unwrap_or_default();
            rest.get(len).is_some_and(|b| !b.is_ascii())
                || (len <= LINK_WORD_CHARS_MAX
                    && LINK_PHRASES.iter().any(|phrase| {
                        phrase
                            .first()
                            .is_some_and(|link| link.as_bytes().eq_ignore_ascii_case(word))
                    }))
        }
        _ => false,
    })
}

/// Words that open an authorization value; the credential follows them.
const AUTH_SCHEMES: &[&str] = &["bearer", "basic", "digest", "token"];

/// Upper bound on text passes; each extra pass only runs when the previous one changed the
/// text, and masks only ever replace spans, so the loop settles long before this.
const MAX_TEXT_ROUNDS: usize = 8;

/// Redacts a JSON value in place.
pub fn redact_value(value: &mut Value) {
    redact_value_with(value, &mut Names::default());
}

/// Redacts many values one after another (the entries of a long list read one at a time),
/// remembering member names' decisions from one to the next as [`redact_value`] does within
/// one value. Each value is redacted exactly as [`redact_value`] would redact it.
#[derive(Default)]
pub struct Redactor {
    names: Names,
}

impl Redactor {
    /// Redacts `value` in place.
    pub fn redact(&mut self, value: &mut Value) {
        redact_value_with(value, &mut self.names);
    }
}

fn redact_value_with(value: &mut Value, names: &mut Names) {
    match value {
        Value::String(text) => {
            if let Cow::Owned(redacted) = redact_text_cow(text) {
                *text = redacted;
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| redact_value_with(item, names)),
        Value::Object(map) => redact_object(map, names),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Redacts free text (an error message, a text result).
pub fn redact_text(text: &str) -> String {
    redact_text_cow(text).into_owned()
}

/// [`redact_text`] without the copy when nothing is masked, which is nearly every string of a
/// large read result: names, models, channel numbers, states.
fn redact_text_cow(text: &str) -> Cow<'_, str> {
    let mut scan = Scan::of(text);
    if !scan.any(text) {
        return Cow::Borrowed(text);
    }
    let mut current = Cow::Borrowed(text);
    for _ in 0..MAX_TEXT_ROUNDS {
        match text_round(&current, scan) {
            Some((next, next_scan)) => {
                current = Cow::Owned(next);
                scan = next_scan;
            }
            None => break,
        }
    }
    current
}

/// True when a key names a secret (stream key, password, token, …), not a look-alike.
pub fn is_secret_key(key: &str) -> bool {
    if key.is_ascii() && !has_secret_hint(key) {
        return false;
    }
    is_secret_by_words(key)
}

/// [`is_secret_key`] without the pre-scan.
/// A word that is one of [`LEADING_WORDS`], in any case.
fn opens_with_leading_word(word: &str) -> bool {
    let lower = word.to_lowercase();
    LEADING_WORDS.contains(&lower.as_str())
}

fn is_secret_by_words(key: &str) -> bool {
    let words = words_of(key);
    if words.iter().any(|w| is_strong_word(w)) {
        return true;
    }
    let leading = words.len() <= LEADING_WORD_NAME
        && words
            .first()
            .is_some_and(|w| LEADING_WORDS.contains(&w.as_str()));
    leading
        || words
            .iter()
            .rev()
            .find(|w| !is_qualifier(w))
            .is_some_and(|last| is_tail_word(last) || LEADING_WORDS.contains(&last.as_str()))
}

// ---------------------------------------------------------------------------------------------
// Names

/// Lower-case words of a name, split at non-alphanumerics, camelCase humps and digit runs.
fn words_of(name: &str) -> Vec<String> {
    if name.is_ascii() {
        return ascii_words_of(name.as_bytes());
    }
    char_words_of(name)
}

/// [`words_of`] for ASCII names, which every member name of a normal read result is: the
/// same splits, with the ASCII forms of the character classes (identical on ASCII).
fn ascii_words_of(name: &[u8]) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut prev: Option<u8> = None;
    for (idx, &byte) in name.iter().enumerate() {
        if !byte.is_ascii_alphanumeric() {
            flush_word(&mut words, &mut current);
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let next = name.get(idx.saturating_add(1)).copied();
            let hump = p.is_ascii_lowercase() && byte.is_ascii_uppercase();
            let acronym_end = p.is_ascii_uppercase()
                && byte.is_ascii_uppercase()
                && next.is_some_and(|n| n.is_ascii_lowercase());
            let digits = p.is_ascii_digit() != byte.is_ascii_digit();
            if hump || acronym_end || digits {
                flush_word(&mut words, &mut current);
            }
        }
        current.push(char::from(byte.to_ascii_lowercase()));
        prev = Some(byte);
    }
    flush_word(&mut words, &mut current);
    words
}

fn char_words_of(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    let mut prev: Option<char> = None;
    for (idx, &ch) in chars.iter().enumerate() {
        if !ch.is_alphanumeric() {
            flush_word(&mut words, &mut current);
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let next = chars.get(idx.saturating_add(1)).copied();
            let hump = p.is_lowercase() && ch.is_uppercase();
            let acronym_end =
                p.is_uppercase() && ch.is_uppercase() && next.is_some_and(|n| n.is_lowercase());
            let digits = p.is_numeric() != ch.is_numeric();
            if hump || acronym_end || digits {
                flush_word(&mut words, &mut current);
            }
        }
        current.extend(ch.to_lowercase());
        prev = Some(ch);
    }
    flush_word(&mut words, &mut current);
    words
}

fn flush_word(words: &mut Vec<String>, current: &mut String) {
    if !current.is_empty() {
        words.push(std::mem::take(current));
    }
}

fn is_strong_word(word: &str) -> bool {
    STRONG_WORDS.iter().any(|s| word.ends_with(s))
}

fn is_qualifier(word: &str) -> bool {
    QUALIFIERS.contains(&word) || word.chars().all(|c| c.is_numeric())
}

fn is_tail_word(word: &str) -> bool {
    if TAIL_WORDS.contains(&word) {
        return true;
    }
    let stem = word
        .strip_suffix("keys")
        .or_else(|| word.strip_suffix("key"));
    stem.is_some_and(|prefix| KEY_PREFIXES.contains(&prefix))
}

/// A name that is secret in text only (see [`TEXT_TAIL_WORDS`]).
fn is_text_secret_name(name: &str) -> bool {
    if TEXT_SESSION_NAMES.iter().any(|n| compact_is(name, n)) {
        return true;
    }
    words_of(name)
        .iter()
        .rev()
        .find(|w| !is_qualifier(w))
        .is_some_and(|last| TEXT_TAIL_WORDS.contains(&last.as_str()))
}

/// A value that reads as generated rather than as a word of prose. A word is letters only,
/// lower-case after its first letter or all capitals, with punctuation around it
/// (`Opening`, `started`, `OFFLINE`, `(see`); anything else — a digit, a symbol, inner
/// punctuation, an inner capital (`live_9f8e`, `abc.def`, `xxxx-yyyy`, `AIzaXYZ`) — is
/// generated.
fn looks_generated(value: &[char]) -> bool {
    let is_edge = |c: &char| matches!(c, '.' | ',' | ';' | ':' | '!' | '?' | '(' | ')' | '[' | ']');
    let start = value
        .iter()
        .position(|c| !is_edge(c))
        .unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|c| !is_edge(c))
        .map_or(start, |e| e.saturating_add(1));
    let word = value.get(start..end).unwrap_or_default();
    let letters = !word.is_empty() && word.iter().all(|c| c.is_alphabetic());
    let lower_after_first = word.iter().skip(1).all(|c| !c.is_uppercase());
    let capitals = word.iter().all(|c| !c.is_lowercase());
    !(letters && (lower_after_first || capitals))
}

/// A settings label naming a secret; text after `(` is a remark, not part of the name.
fn is_secret_label(label: &str) -> bool {
    let head = label.split('(').next().unwrap_or(label);
    is_secret_key(head)
}

/// A value under `key` that is itself the written name of a secret (`stream_key`, `Stream
/// key`, `apiKey`, `client_secret`, `stream_key_2`) and so a label, as opposed to a secret
/// that merely holds such a word (`longsecret99`, `planted-key-001`): a secret name made only
/// of the words secret names are made of, bar a trailing number. Anything else under `key` is
/// masked: a label masked by mistake costs a setting's name, a secret kept costs the secret.
fn is_secret_name_itself(value: &str) -> bool {
    let head = value.split('(').next().unwrap_or(value).trim();
    let mut words = words_of(head);
    if words
        .last()
        .is_some_and(|w| w.chars().all(char::is_numeric))
    {
        // A setting's number stands apart (`stream_key_2`); glued on (`KEY123`) it is a value.
        let name_part = head.trim_end_matches(char::is_numeric);
        if !name_part.ends_with(['_', '-', ' ']) {
            return false;
        }
        words.pop();
    }
    let known = |w: &String| {
        let w = w.as_str();
        STRONG_WORDS.contains(&w)
            || TAIL_WORDS.contains(&w)
            || KEY_PREFIXES.contains(&w)
            || QUALIFIERS.contains(&w)
            || is_tail_word(w)
    };
    !words.is_empty() && words.iter().all(known) && is_secret_key(head)
}

/// The name reduced to its words run together: `Value`, `VALUE`, `value` all give `value`.
fn compact_name(name: &str) -> String {
    words_of(name).concat()
}

fn is_key_alone(name: &str) -> bool {
    compact_is(name, "key")
}

/// `compact_name(name) == target` without building the compact name: for ASCII the compact
/// name is exactly the letters and digits, lower-cased, in order.
fn compact_is(name: &str, target: &str) -> bool {
    if name.is_ascii() {
        name.bytes()
            .filter(u8::is_ascii_alphanumeric)
            .map(|b| b.to_ascii_lowercase())
            .eq(target.bytes())
    } else {
        compact_name(name) == target
    }
}

fn is_stream_id_key(key: &str) -> bool {
    // Both spellings need the word `stream` among the lower-cased words.
    if key.is_ascii() && !contains_ignore_case(key.as_bytes(), "stream") {
        return false;
    }
    is_stream_id_by_words(key)
}

/// [`is_stream_id_key`] without the pre-scan.
fn is_stream_id_by_words(key: &str) -> bool {
    let words = words_of(key);
    let mut rev = words.iter().rev();
    let last = rev.next().map(String::as_str);
    let before = rev.next().map(String::as_str);
    match (before, last) {
        (Some("stream"), Some("id" | "ids")) => true,
        (_, Some(w)) => w.ends_with("streamid") || w.ends_with("streamids"),
        _ => false,
    }
}

/// The 8-4-4-4-12 hex form, either case; kept here so redaction stands on its own.
fn is_uuid(s: &str) -> bool {
    let mut groups = s.split('-');
    for expected in [8usize, 4, 4, 4, 12] {
        match groups.next() {
            Some(g) if g.len() == expected && g.bytes().all(|b| b.is_ascii_hexdigit()) => {}
            _ => return false,
        }
    }
    groups.next().is_none()
}

// ---------------------------------------------------------------------------------------------
// JSON

/// What redaction decides from a member name alone.
#[derive(Clone, Copy, Default)]
struct NameFacts {
    /// Redaction leaves the name itself as it is.
    kept: bool,
    /// The compact name is `value`.
    value: bool,
    /// The compact name is one of [`LABEL_NAMES`].
    label: bool,
    /// The compact name is `key`.
    key_alone: bool,
    /// [`is_stream_id_key`].
    stream_id: bool,
    /// [`is_secret_key`].
    secret: bool,
}

impl NameFacts {
    fn of(name: &str) -> NameFacts {
        // The compact name is built once for the eleven comparisons below.
        let mut buffer = [0_u8; COMPACT_BUFFER];
        let compact = compact_ascii(name, &mut buffer);
        let is = |target: &str| match compact {
            Some(compact) => compact == target.as_bytes(),
            None => compact_is(name, target),
        };
        NameFacts {
            kept: matches!(redact_text_cow(name), Cow::Borrowed(_)),
            value: is("value"),
            label: LABEL_NAMES.iter().any(|label| is(label)),
            key_alone: is("key"),
            stream_id: is_stream_id_key(name),
            secret: is_secret_key(name),
        }
    }
}

/// Longest compact name [`compact_ascii`] writes; longer names take the slower comparison.
const COMPACT_BUFFER: usize = 32;

/// The compact name of an ASCII name (see [`compact_is`]) written into `buffer`; `None` for a
/// non-ASCII name or one too long for the buffer.
fn compact_ascii<'b>(name: &str, buffer: &'b mut [u8; COMPACT_BUFFER]) -> Option<&'b [u8]> {
    if !name.is_ascii() {
        return None;
    }
    let mut len = 0_usize;
    for byte in name.bytes().filter(u8::is_ascii_alphanumeric) {
        *buffer.get_mut(len)? = byte.to_ascii_lowercase();
        len = len.saturating_add(1);
    }
    buffer.get(..len)
}

/// Member names already judged during one [`redact_value`]: a large result repeats a handful
/// of names at every device. A small direct-mapped table: two names sharing a slot only cost a
/// recomputation, and nothing a result holds can make it grow or slow down.
struct Names {
    slots: Vec<Option<(String, NameFacts)>>,
}

/// Slots in [`Names`]; a power of two.
const NAME_SLOTS: usize = 256;

/// Members whose facts [`redact_object`] keeps on the stack.
const INLINE_MEMBERS: usize = 16;

/// Objects wider than this are maps keyed by IDs (one member per device): their names do not
/// repeat, and remembering them would only push out the ones that do.
const NAMES_WIDE_OBJECT: usize = 64;

impl Default for Names {
    fn default() -> Names {
        Names {
            slots: vec![None; NAME_SLOTS],
        }
    }
}

impl Names {
    /// FNV-1a: cheap on short names, and a poor spread only costs recomputations.
    fn slot_of(name: &str) -> usize {
        let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        usize::try_from(hash % NAME_SLOTS as u64).unwrap_or_default()
    }

    fn facts(&mut self, name: &str) -> NameFacts {
        let slot = self.slots.get_mut(Names::slot_of(name));
        if let Some(Some((known, facts))) = slot.as_deref()
            && known == name
        {
            return *facts;
        }
        let facts = NameFacts::of(name);
        if let Some(slot) = slot {
            *slot = Some((name.to_owned(), facts));
        }
        facts
    }

    fn all_facts(&mut self, map: &Map<String, Value>) -> Vec<NameFacts> {
        if map.len() > NAMES_WIDE_OBJECT {
            map.keys().map(|k| NameFacts::of(k)).collect()
        } else {
            map.keys().map(|k| self.facts(k)).collect()
        }
    }
}

fn redact_object(map: &mut Map<String, Value>, names: &mut Names) {
    // Decisions use the redacted member names and labels, so a second pass over the output
    // sees exactly the names the first pass decided on. Almost every object has no name to
    // redact; those are redacted where they stand instead of being rebuilt.
    // Objects of a normal result are small: their facts stay on the stack rather than in an
    // allocation per object.
    let mut inline = [NameFacts::default(); INLINE_MEMBERS];
    let heap: Vec<NameFacts>;
    let facts: &[NameFacts] = if map.len() <= INLINE_MEMBERS {
        for (slot, key) in inline.iter_mut().zip(map.keys()) {
            *slot = names.facts(key);
        }
        inline.get(..map.len()).unwrap_or_default()
    } else {
        heap = names.all_facts(map);
        &heap
    };
    if !facts.iter().all(|f| f.kept) {
        redact_renamed_object(map, names);
        return;
    }
    let has_value = facts.iter().any(|f| f.value);
    let pair = has_value
        && map
            .values()
            .zip(facts)
            .any(|(value, facts)| is_secret_label_member(facts, value));
    for ((_, value), facts) in map.iter_mut().zip(facts) {
        redact_member(facts, value, pair, has_value, names);
    }
}

/// An object with a member name that redaction changes. Two names that redact alike collapse
/// into one member (the later wins): losing a duplicate beats keeping a secret in a name.
fn redact_renamed_object(map: &mut Map<String, Value>, names: &mut Names) {
    let members: Vec<(String, Value, NameFacts)> = std::mem::take(map)
        .into_iter()
        .map(|(k, v)| {
            let key = redact_text(&k);
            let facts = names.facts(&key);
            (key, v, facts)
        })
        .collect();
    let has_value = members.iter().any(|(_, _, f)| f.value);
    let pair = has_value
        && members
            .iter()
            .any(|(_, value, facts)| is_secret_label_member(facts, value));
    for (key, mut value, facts) in members {
        redact_member(&facts, &mut value, pair, has_value, names);
        map.insert(key, value);
    }
}

/// A label member (`name`, `title`, …) whose text names a secret: its object is a secret pair.
fn is_secret_label_member(facts: &NameFacts, value: &Value) -> bool {
    facts.label
        && value
            .as_str()
            .is_some_and(|label| is_secret_label(&redact_text_cow(label)))
}

/// `pair`: the object is a `{label, value}` pair whose label names a secret. `has_value`: the
/// object has a `value` member, which makes a string under `key` a label rather than a secret.
fn redact_member(
    facts: &NameFacts,
    value: &mut Value,
    pair: bool,
    has_value: bool,
    names: &mut Names,
) {
    if pair && facts.value {
        mask_whole(value);
    } else if facts.stream_id {
        keep_only_uuids(value);
    } else if facts.secret {
        let is_label = facts.key_alone
            && value
                .as_str()
                .is_some_and(|label| has_value || is_secret_name_itself(&redact_text_cow(label)));
        if is_label {
            redact_value_with(value, names);
        } else {
            mask_whole(value);
        }
    } else {
        redact_value_with(value, names);
    }
}

/// Masks a value that can hold a secret. `null` and `true`/`false` cannot: they say whether a
/// setting is there or on, never what a key is, and a person reading `"stream": true` needs to
/// know it.
fn mask_whole(value: &mut Value) {
    if !(value.is_null() || value.is_boolean()) {
        *value = Value::String(MASK.to_owned());
    }
}

fn keep_only_uuids(value: &mut Value) {
    match value {
        Value::Null => {}
        Value::String(s) if is_uuid(s) => {}
        Value::Array(items) => items.iter_mut().for_each(keep_only_uuids),
        _ => *value = Value::String(MASK.to_owned()),
    }
}

// ---------------------------------------------------------------------------------------------
// Text: shared helpers

fn at(chars: &[char], idx: usize) -> Option<char> {
    chars.get(idx).copied()
}

fn span(chars: &[char], from: usize, to: usize) -> &[char] {
    chars.get(from..to).unwrap_or(&[])
}

fn starts_with_at(chars: &[char], idx: usize, pattern: &str) -> bool {
    pattern
        .chars()
        .enumerate()
        .all(|(k, p)| at(chars, idx.saturating_add(k)) == Some(p))
}

fn push_str(out: &mut Vec<char>, s: &str) {
    out.extend(s.chars());
}

fn text_of(chars: &[char]) -> String {
    chars.iter().collect()
}

/// Index just past the run of characters satisfying `pred` starting at `from`.
fn run_end(chars: &[char], from: usize, pred: impl Fn(char) -> bool) -> usize {
    let mut end = from;
    while at(chars, end).is_some_and(&pred) {
        end = end.saturating_add(1);
    }
    end
}

fn prev_char(chars: &[char], idx: usize) -> Option<char> {
    idx.checked_sub(1).and_then(|p| at(chars, p))
}

/// A text rule: when the pre-scan allows it to act, and the rule itself.
type Rule = (fn(&Scan, &str) -> bool, fn(&[char]) -> Vec<char>);

/// The text rules in the order one round applies them. Embedded JSON comes first, and it
/// leans on that: it runs the others (`RULES[1..]`) on an object's text to learn whether they
/// already mask what the JSON rules mask.
const RULES: [Rule; 7] = [
    (Scan::embedded_json, mask_embedded_json),
    (Scan::urls, mask_urls),
    (Scan::assignments, mask_assignments),
    (Scan::tables, mask_tables),
    (Scan::auth_schemes, mask_auth_schemes),
    (Scan::anthropic_keys, mask_anthropic_keys),
    (Scan::jwts, mask_jwts),
];

/// One pass of the rules in order, given the pre-scan of `text`; `None` when the pass changes
/// nothing, else the new text and its pre-scan. A rule the pre-scan rules out is skipped,
/// which is the same as running it: it would copy its input unchanged.
fn text_round(text: &str, scan: Scan) -> Option<(String, Scan)> {
    let mut current = Cow::Borrowed(text);
    let mut scan = scan;
    for (may_apply, rule) in RULES {
        if !may_apply(&scan, &current) {
            continue;
        }
        // Sized up front: collecting from `chars()` would grow the buffer several times.
        let mut chars = Vec::with_capacity(current.len());
        chars.extend(current.chars());
        let next = rule(&chars);
        if next != chars {
            let mut text = String::with_capacity(next.len());
            text.extend(next.iter());
            let next = text;
            scan = Scan::of(&next);
            current = Cow::Owned(next);
        }
    }
    match current {
        Cow::Owned(next) if next != text => Some((next, scan)),
        Cow::Owned(_) | Cow::Borrowed(_) => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Text: pre-scan
//
// Each rule's pre-scan answer is a necessary condition for the rule to change anything: it may
// say yes for text the rule then leaves alone (that only costs time), but it must never say no
// for text the rule would change. Secret names are looked for only in all-ASCII text: Unicode
// lower-casing can turn a non-ASCII letter into an ASCII one (the Kelvin sign `K` becomes
// `k`), so any other text with a separator gets the full rules.

/// The hints that start with the two bytes `first`, `second` (any case). Every secret name
/// contains one of these hints: each word of [`STRONG_WORDS`] and [`TAIL_WORDS`] contains one,
/// a single word ending in `key`/`keys` contains `key`, and the names only text treats as
/// secret (`stream`, `session`, `sid`, stream IDs) contain `stream`, `sess` or `sid` (a unit
/// test holds the lists to this). Matching two bytes first makes most positions cost one
/// comparison.
fn hints_starting_with(first: u8, second: u8) -> &'static [&'static str] {
    match (first.to_ascii_lowercase(), second.to_ascii_lowercase()) {
        (b'p', b'a') => &["pass"],
        (b'p', b'w') => &["pwd"],
        (b'p', b'i') => &["pin"],
        (b'p', b'l') => &["playpath"],
        (b's', b'e') => &["secret", "sess", "senha"],
        (b's', b'i') => &["sig", "sid"],
        (b's', b't') => &["stream"],
        (b't', b'o') => &["token"],
        (b'a', b'u') => &["auth"],
        (b'c', b'r') => &["credential"],
        (b'c', b'o') => &["cookie", "contrase"],
        (b'c', b'l') => &["clave"],
        (b'k', b'e') => &["key", "kennwort"],
        (b'o', b't') => &["otp"],
        _ => &[],
    }
}

/// True when some hint occurs in `text`, ASCII-case-insensitively. For ASCII text, false means
/// no secret name can be spelled from its words.
fn has_secret_hint(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.windows(2).enumerate().any(|(at, pair)| {
        let &[first, second] = pair else {
            return false;
        };
        // `| 0x20` lower-cases ASCII letters; the other bytes it maps only need to fail fast.
        matches!(first | 0x20, b'a' | b'c' | b'k' | b'o' | b'p' | b's' | b't')
            && hints_starting_with(first, second)
                .iter()
                .any(|hint| starts_with_ignore_case(bytes.get(at..).unwrap_or_default(), hint))
    })
}

/// `bytes` start with the mask and, after blanks, a `:` or `=` that opens no `://`.
fn mask_before_separator(bytes: &[u8]) -> bool {
    let Some(rest) = bytes.strip_prefix(MASK.as_bytes()) else {
        return false;
    };
    let rest = rest.trim_ascii_start();
    (rest.starts_with(b":") || rest.starts_with(b"=")) && !rest.starts_with(b"://")
}

fn starts_with_ignore_case(bytes: &[u8], pattern: &str) -> bool {
    bytes
        .get(..pattern.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(pattern.as_bytes()))
}

fn contains_ignore_case(bytes: &[u8], pattern: &str) -> bool {
    let mut rest = bytes;
    loop {
        if starts_with_ignore_case(rest, pattern) {
            return true;
        }
        match rest.split_first() {
            Some((_, tail)) => rest = tail,
            None => return false,
        }
    }
}

/// What one pass over a text's bytes found: the marks each text rule needs before it can act.
#[derive(Clone, Copy, Default)]
struct Scan {
    /// `{` (rule 0 parses only from one).
    brace: bool,
    /// `://` (rule 1 rewrites only there).
    url: bool,
    /// `\`, `%` or `&`: an escaped `://` may be spelled with them (rule 1).
    escape: bool,
    /// `/` (rule 1 looks for a hook address without a scheme only in text that has one).
    slash: bool,
    /// `:` or `=` (rule 2 acts only at one).
    separator: bool,
    /// The mask right before a separator (rule 2 treats it as a secret's name). A mask
    /// anywhere else needs a secret name before it to matter to rule 2, and every masked URL
    /// holds one: looking further would run rule 2 on every URL of a large result.
    marker: bool,
    /// A line feed or a written `\n` (rule 3 needs a header line and a row).
    line_break: bool,
    /// `|`, `,`, a tab or `;` (rule 3 splits cells at one).
    cell_separator: bool,
    /// `bearer` or `basic`, ASCII-case-insensitively (rule 3 only follows those words, and it
    /// compares them ASCII-case-insensitively, so non-ASCII letters cannot spell them).
    auth_scheme: bool,
    /// `sk-ant-` (rule 4).
    anthropic_key: bool,
    /// `eyJ` (rule 5).
    jwt: bool,
}

impl Scan {
    fn of(text: &str) -> Scan {
        let mut scan = Scan::default();
        let bytes = text.as_bytes();
        for (at, &byte) in bytes.iter().enumerate() {
            // Each mark is caught at a byte that is rare in ordinary text: `sk-ant-` at its `k`,
            // `eyJ` at its `J`, so names and states full of `s` and `e` cost one test a byte.
            if !matches!(
                byte,
                b':' | b'='
                    | b'b'
                    | b'B'
                    | b'k'
                    | b'J'
                    | b'\\'
                    | b'%'
                    | b'&'
                    | b'['
                    | b'{'
                    | b'\n'
                    | b'|'
                    | b','
                    | b'\t'
                    | b';'
                    | b'/'
            ) {
                continue;
            }
            let from = |back: usize| {
                at.checked_sub(back)
                    .and_then(|start| bytes.get(start..))
                    .unwrap_or_default()
            };
            match byte {
                b':' => {
                    scan.separator = true;
                    scan.url |= from(0).starts_with(b"://");
                }
                b'=' => scan.separator = true,
                b'k' => scan.anthropic_key |= from(1).starts_with(b"sk-ant-"),
                b'J' => scan.jwt |= from(2).starts_with(b"eyJ"),
                b'{' => scan.brace = true,
                b'\\' => {
                    scan.escape = true;
                    scan.line_break |= from(0).starts_with(b"\\n");
                }
                b'%' | b'&' => scan.escape = true,
                b'/' => scan.slash = true,
                b'[' => scan.marker |= mask_before_separator(from(0)),
                b'\n' => scan.line_break = true,
                b'|' | b',' | b'\t' | b';' => scan.cell_separator = true,
                _ => {
                    let rest = from(0);
                    scan.auth_scheme |= starts_with_ignore_case(rest, "bearer")
                        || starts_with_ignore_case(rest, "basic");
                }
            }
        }
        scan
    }

    /// Whether any rule may change `text`, the text this scan was made of.
    fn any(&self, text: &str) -> bool {
        // Spelled out rather than read from `RULES`: called for every string of a result, and
        // direct calls inline. A unit test holds it to the list.
        self.embedded_json(text)
            || self.urls(text)
            || self.auth_schemes(text)
            || self.anthropic_keys(text)
            || self.jwts(text)
            || self.assignments(text)
            || self.tables(text)
    }

    /// Rule 0 parses only at a `{` (and only when a member name follows it).
    fn embedded_json(&self, _: &str) -> bool {
        self.brace
    }

    fn urls(&self, text: &str) -> bool {
        self.url || self.escape || (self.slash && contains_ignore_case(text.as_bytes(), "hook"))
    }

    /// Rule 2 acts only at a separator whose name is secret (or a mask), and every candidate
    /// name is made of the text's own characters. The names are looked at only after a
    /// separator is found, and a linking word is looked for only in text that may name a
    /// secret: most texts have neither.
    fn assignments(&self, text: &str) -> bool {
        let named = |text: &str| !text.is_ascii() || has_secret_hint(text);
        if self.separator {
            self.marker || named(text)
        } else {
            has_link(text) && named(text)
        }
    }

    /// Rule 3 needs two lines, a cell separator and a header cell naming a secret.
    fn tables(&self, text: &str) -> bool {
        self.line_break && self.cell_separator && (!text.is_ascii() || has_secret_hint(text))
    }

    fn auth_schemes(&self, _: &str) -> bool {
        self.auth_scheme
    }

    fn anthropic_keys(&self, _: &str) -> bool {
        self.anthropic_key
    }

    fn jwts(&self, _: &str) -> bool {
        self.jwt
    }
}

// ---------------------------------------------------------------------------------------------
// Text rule 3: `Bearer X`, `Basic X`

fn is_credential_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '+' | '/' | '=' | '-')
}

fn looks_like_credential(cred: &[char]) -> bool {
    let has_digit = cred.iter().any(|c| c.is_ascii_digit());
    let has_upper = cred.iter().any(|c| c.is_ascii_uppercase());
    let has_lower = cred.iter().any(|c| c.is_ascii_lowercase());
    let has_b64_sign = cred.iter().any(|c| matches!(c, '+' | '/' | '='));
    (cred.len() >= 8 && has_digit)
        || (cred.len() >= 20 && ((has_upper && has_lower) || has_b64_sign))
}

fn mask_auth_schemes(chars: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while let Some(ch) = at(chars, i) {
        let word_start =
            ch.is_ascii_alphabetic() && !prev_char(chars, i).is_some_and(char::is_alphanumeric);
        if word_start {
            let word_end = run_end(chars, i, |c| c.is_alphanumeric());
            let word = text_of(span(chars, i, word_end)).to_ascii_lowercase();
            // Only scheme words look ahead: scanning a credential after every word would make
            // long runs of words quadratic.
            if word == "bearer" || word == "basic" {
                let cred_start = run_end(chars, word_end, |c| c == ' ' || c == '\t');
                let spaced = cred_start > word_end;
                if spaced && starts_with_at(chars, cred_start, MASK) {
                    // The mask does not end the credential: what is glued to it is the rest.
                    let after = cred_start.saturating_add(MASK.chars().count());
                    let cred_end = run_end(chars, after, is_credential_char);
                    out.extend_from_slice(span(chars, i, cred_start));
                    push_str(&mut out, MASK);
                    i = cred_end;
                    continue;
                }
                let cred_end = if spaced {
                    run_end(chars, cred_start, is_credential_char)
                } else {
                    cred_start
                };
                if spaced && looks_like_credential(span(chars, cred_start, cred_end)) {
                    out.extend_from_slice(span(chars, i, cred_start));
                    push_str(&mut out, MASK);
                    i = cred_end;
                    continue;
                }
            }
            out.extend_from_slice(span(chars, i, word_end));
            i = word_end;
            continue;
        }
        out.push(ch);
        i = i.saturating_add(1);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Text rules 4 and 5: Anthropic keys and JSON Web Tokens

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn mask_anthropic_keys(chars: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while let Some(ch) = at(chars, i) {
        if starts_with_at(chars, i, "sk-ant-") && !prev_char(chars, i).is_some_and(is_key_char) {
            push_str(&mut out, MASK);
            i = run_end(chars, i, is_key_char);
            continue;
        }
        out.push(ch);
        i = i.saturating_add(1);
    }
    out
}

fn mask_jwts(chars: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while let Some(ch) = at(chars, i) {
        let boundary = !prev_char(chars, i).is_some_and(|p| is_key_char(p) || p == '.');
        if boundary && starts_with_at(chars, i, "eyJ") {
            let end = run_end(chars, i, |c| is_key_char(c) || c == '.');
            let token = text_of(span(chars, i, end));
            let parts: Vec<&str> = token.split('.').collect();
            let header_len = parts.first().map_or(0, |p| p.len());
            let payload_len = parts.get(1).map_or(0, |p| p.len());
            if parts.len() >= 3 && header_len >= 10 && payload_len >= 1 {
                push_str(&mut out, MASK);
            } else {
                push_str(&mut out, &token);
            }
            i = end;
            continue;
        }
        out.push(ch);
        i = i.saturating_add(1);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    //! The pre-scans, the name cache and the ASCII word splitter only skip work: each test
    //! here compares them with the plain rules they stand in for.

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    const HINTS: &[&str] = &[
        "pass",
        "pwd",
        "pin",
        "playpath",
        "secret",
        "sess",
        "sig",
        "sid",
        "stream",
        "token",
        "auth",
        "credential",
        "cookie",
        "contrase",
        "clave",
        "kennwort",
        "senha",
        "key",
        "otp",
    ];

    #[test]
    fn every_secret_word_contains_a_hint_reachable_from_its_first_two_letters() {
        for hint in HINTS {
            let bytes = hint.as_bytes();
            assert!(hints_starting_with(bytes[0], bytes[1]).contains(hint));
            let upper = hint.to_ascii_uppercase();
            let upper = upper.as_bytes();
            assert!(hints_starting_with(upper[0], upper[1]).contains(hint));
        }
        let key_words: Vec<String> = KEY_PREFIXES.iter().map(|p| format!("{p}key")).collect();
        let words = STRONG_WORDS
            .iter()
            .chain(TAIL_WORDS)
            .chain(LEADING_WORDS)
            .chain(TEXT_TAIL_WORDS)
            .chain(TEXT_SESSION_NAMES)
            .copied()
            .chain(["streamid", "stream_ids"])
            .chain(key_words.iter().map(String::as_str));
        // Non-ASCII names skip the pre-scan and always get the full rules.
        for word in words.filter(|w| w.is_ascii()) {
            assert!(
                HINTS.iter().any(|h| word.contains(h)),
                "{word} contains no hint"
            );
            assert!(has_secret_hint(word), "{word}");
        }
    }

    #[test]
    fn the_link_pre_scan_sees_every_linking_phrase_in_any_case() {
        for phrase in LINK_PHRASES {
            let words = phrase.join(" ");
            for text in [words.clone(), words.to_uppercase()] {
                assert!(has_link(&format!("the key {text} abc")), "{text}");
                assert!(has_link(&format!("the key\t{text}:abc")), "{text}");
            }
        }
        assert!(!has_link("Room 4 channel 2, Building 3"));
    }

    #[test]
    fn non_ascii_letters_that_lower_case_to_ascii_still_get_the_full_rules() {
        // The Kelvin sign lower-cases to `k`: `\u{212A}ey` is the word `key`.
        assert!(is_secret_key("stream_\u{212A}ey"));
        assert_eq!(redact_text("\u{212A}ey=abc"), "\u{212A}ey=[redacted]");
        assert_eq!(reference_text("\u{212A}ey=abc"), "\u{212A}ey=[redacted]");
    }

    /// The rules as they run without any pre-scan: every rule on every round.
    fn reference_text(text: &str) -> String {
        let mut current: Vec<char> = text.chars().collect();
        for _ in 0..MAX_TEXT_ROUNDS {
            let next = RULES
                .iter()
                .fold(current.clone(), |text, (_, rule)| rule(&text));
            if next == current {
                break;
            }
            current = next;
        }
        current.into_iter().collect()
    }

    /// JSON redaction without the name cache or in-place objects.
    fn reference_value(value: &mut Value) {
        match value {
            Value::String(text) => *text = reference_text(text),
            Value::Array(items) => items.iter_mut().for_each(reference_value),
            Value::Object(map) => {
                let members: Vec<(String, Value)> = std::mem::take(map)
                    .into_iter()
                    .map(|(k, v)| (reference_text(&k), v))
                    .collect();
                let has_value = members.iter().any(|(k, _)| compact_name(k) == "value");
                let pair = has_value
                    && members.iter().any(|(k, v)| {
                        LABEL_NAMES.contains(&compact_name(k).as_str())
                            && v.as_str()
                                .is_some_and(|l| is_secret_label(&reference_text(l)))
                    });
                for (key, mut value) in members {
                    reference_member(&key, &mut value, pair, has_value);
                    map.insert(key, value);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn reference_member(key: &str, value: &mut Value, pair: bool, has_value: bool) {
        if pair && compact_name(key) == "value" {
            mask_whole(value);
        } else if is_stream_id_by_words(key) {
            keep_only_uuids(value);
        } else if is_secret_by_words(key) {
            let is_label = compact_name(key) == "key"
                && value
                    .as_str()
                    .is_some_and(|l| has_value || is_secret_name_itself(&reference_text(l)));
            if is_label {
                reference_value(value);
            } else {
                mask_whole(value);
            }
        } else {
            reference_value(value);
        }
    }

    const FRAGMENTS: &[&str] = &[
        "key",
        "Key",
        "KEY",
        "keys",
        "stream",
        "Stream",
        "_",
        "-",
        " ",
        "  ",
        "\t",
        "\n",
        ":",
        "=",
        "\"",
        "'",
        "\\\"",
        "\\",
        "://",
        "rtmp",
        "http",
        "https",
        "srt",
        "x",
        "@",
        "/",
        "?",
        "#",
        "&",
        ",",
        ";",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        "<",
        "`",
        "pass",
        "PassWord",
        "pwd",
        "token",
        "Tokens",
        "secret",
        "auth",
        "Authorization",
        "credential",
        "cookie",
        "signature",
        "api",
        "Id",
        "id",
        "ids",
        "value",
        "Value",
        "name",
        "title",
        "label",
        "null",
        "Bearer",
        "bearer",
        "BASIC",
        "Digest",
        "sk-ant-",
        "sk-",
        "eyJ",
        "eyJhbGciOiJI",
        ".",
        "abc",
        "Zq7planted42",
        "aB3+/xyzQWERTYuiop12345=",
        "live",
        "app",
        "ingest",
        "publish",
        "[redacted]",
        "\u{212A}",
        "\u{212A}ey",
        "\u{17F}",
        "\u{130}",
        "\u{e9}",
        "ß",
        "0",
        "42",
        "1700000000",
        "2026-01-01T00:00:00Z",
        "550e8400-e29b-41d4-a716-446655440000",
        "monkey",
        "keyboard",
        "hotkey",
        "{\"",
        "\"}",
        "\":\"",
        "|",
        "\n|",
        "---",
        "\\n",
        "\\/",
        "\\\\/",
        "%2F",
        "%3A",
        "%252F",
        "&#x2F;",
        "&amp;",
        "\\u002F",
        "label",
        "pin",
        "playpath",
        "session",
        "Session 2",
        "sid",
        "Cookie",
        "hooks.",
        "hook",
        "webhooks",
        "services",
        "T0123ABCD",
        "aB3dE5fG7hJ9kL1mN2pQ",
        " is ",
        " IS ",
        " es ",
        " was set to ",
        "\t",
        "→",
        " -> ",
        "=>",
        "é ",
        "missing",
        "'",
    ];

    fn fragment_text() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(FRAGMENTS), 0..14).prop_map(|f| f.concat())
    }

    fn fragment_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            fragment_text().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((fragment_text(), inner), 0..8)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn text_matches_the_rules_without_pre_scans(text in fragment_text()) {
            prop_assert_eq!(redact_text(&text), reference_text(&text));
            let scan = Scan::of(&text);
            prop_assert_eq!(scan.any(&text), RULES.iter().any(|(may, _)| may(&scan, &text)));
        }

        #[test]
        fn names_match_the_word_rules(name in fragment_text()) {
            prop_assert_eq!(is_secret_key(&name), is_secret_by_words(&name));
            prop_assert_eq!(is_stream_id_key(&name), is_stream_id_by_words(&name));
            prop_assert_eq!(words_of(&name), char_words_of(&name));
            let mut buffer = [0_u8; COMPACT_BUFFER];
            let plain = compact_name(&name);
            if let Some(compact) = compact_ascii(&name, &mut buffer) {
                prop_assert_eq!(compact, plain.as_bytes());
            }
            for target in ["value", "key", "name", "id"] {
                prop_assert_eq!(compact_is(&name, target), compact_name(&name) == target);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn json_matches_the_plain_rules(value in fragment_json()) {
            let mut fast = value.clone();
            redact_value(&mut fast);
            let mut plain = value;
            reference_value(&mut plain);
            prop_assert_eq!(fast, plain);
        }
    }

    #[test]
    fn a_team_sized_result_matches_the_plain_rules() {
        // Enough devices to fill and reuse the name cache, a map wider than the cache takes,
        // and settings pairs whose decision rides on member names seen many times before.
        let mut devices = serde_json::Map::new();
        for i in 0..300 {
            devices.insert(
                format!("{:010x}", 0x5000_0000u64 + i),
                json!({
                    "Name": format!("Room {i}"),
                    "channels": {"1": {"recording_status": {"state": "started"}}},
                    "publishers": [{"url": format!("rtmp://u:p@h/app/k{i}"), "stream_key": "s"}],
                    "settings": [
                        {"id": "k", "title": "Stream key", "value": format!("v{i}")},
                        {"key": "resolution", "value": "1080p"},
                        {"name": "password", "value": i},
                    ],
                    format!("note_{i}"): "token=abc123",
                    "streamId": if i % 2 == 0 { json!("550e8400-e29b-41d4-a716-446655440000") } else { json!("live_x") },
                }),
            );
        }
        // Between the stack-held and the ID-keyed widths.
        let mut options: serde_json::Map<String, Value> = (0..30)
            .map(|k| (format!("option_{k}"), json!(format!("token={k}"))))
            .collect();
        options.insert("password".to_owned(), json!("hunter2"));
        options.insert("value".to_owned(), json!("v"));
        options.insert("name".to_owned(), json!("api key"));
        let value = json!({"devices": devices, "auth_token": "t", "options": options});
        let mut fast = value.clone();
        redact_value(&mut fast);
        let mut plain = value;
        reference_value(&mut plain);
        assert_eq!(fast, plain);
    }
}
