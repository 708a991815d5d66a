//! Text rule 2: `name: value`, `name=value`, `name = "value"`, `"name": "value"`, `name →
//! value`, `{label, value}` settings pairs written as text (`name=Stream key value=abc`,
//! `"label": "Password", "value": "…"`), and a secret named in prose (`the stream key is
//! abc123`, `la clave es …`).

use super::{
    AUTH_SCHEMES, LABEL_NAMES, LEADING_WORD_NAME, MASK, at, compact_is, is_key_alone, is_link_word,
    is_secret_key, is_secret_label, is_secret_name_itself, is_stream_id_key, is_text_secret_name,
    is_uuid, link_phrase_len, looks_generated, opens_with_leading_word, prev_char, push_str,
    run_end, span, starts_with_at, text_of, words_of,
};

/// Quotes a value can be written in: JSON escaped inside a string, double, single, and
/// Markdown code.
const QUOTES: [&str; 4] = ["\\\"", "\"", "'", "`"];

/// Whether the text between two assignments ends a settings record: a brace, a blank line or
/// a new list item (`- name: …`). A record may span lines (`- name: Stream key` then
/// `  value: …`, as YAML writes it); a label pairs only with values of its own record.
fn breaks_record(between: &[char]) -> bool {
    if between.iter().any(|&c| c == '{' || c == '}') {
        return true;
    }
    let lines: Vec<&[char]> = between.split(|&c| c == '\n').collect();
    let Some((name_line, before)) = lines.split_last() else {
        return false;
    };
    if before.is_empty() {
        return false;
    }
    let blank = |line: &&[char]| line.iter().all(|c| c.is_whitespace());
    let item = name_line
        .iter()
        .copied()
        .skip_while(|c| c.is_whitespace())
        .take(2)
        .collect::<Vec<char>>();
    before.iter().skip(1).any(blank) || item == ['-', ' '] || item == ['*', ' ']
}

/// Where a value starts after its separator: blanks and Markdown emphasis around a label
/// (`**Stream key:** abc`) are passed over.
fn value_start(chars: &[char], from: usize) -> usize {
    let start = run_end(chars, from, |c| c == ' ' || c == '\t');
    let marks = run_end(chars, start, |c| c == '*' || c == '_');
    let after = run_end(chars, marks, |c| c == ' ' || c == '\t');
    if marks > start && marks.saturating_sub(start) <= 3 && after > marks {
        after
    } else {
        start
    }
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Unquoted values end here; `]` is not listed so a value cannot hide behind a bracket.
fn is_value_stop(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(
            c,
            ',' | ';' | '&' | '"' | '\'' | '<' | '>' | '}' | ')' | '`'
        )
}

/// A cookie header's value runs to the end of the line: `a=1; b=2` is one secret.
fn is_cookie_value_stop(c: char) -> bool {
    c.is_control() || matches!(c, '"' | '<' | '>' | '}' | '`')
}

/// Unquoted settings labels end here (a label may hold spaces: `Stream key`).
fn is_label_stop(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            ',' | ';' | '&' | '"' | '\'' | '<' | '>' | '{' | '}' | '|' | '\\'
        )
}

/// The name before a separator: candidate spellings to test, whether it was quoted, where it
/// starts, and whether a mask stands in its place.
struct NameBefore {
    candidates: Vec<String>,
    quoted: bool,
    start: usize,
    masked: bool,
}

fn skip_blanks_back(chars: &[char], from: usize) -> usize {
    let mut k = from;
    while prev_char(chars, k).is_some_and(|c| c == ' ' || c == '\t') {
        k = k.saturating_sub(1);
    }
    k
}

/// Where the parenthesised remark that ends just before `end` opens; bounded, on one line.
fn remark_start(chars: &[char], end: usize) -> Option<usize> {
    let mut k = end.saturating_sub(1);
    loop {
        let c = prev_char(chars, k)?;
        if c == '(' {
            return Some(k.saturating_sub(1));
        }
        if end.saturating_sub(k) > 48 || c == '\n' || c == ')' {
            return None;
        }
        k = k.saturating_sub(1);
    }
}

fn name_before(chars: &[char], sep: usize) -> Option<NameBefore> {
    if starts_with_at(chars, sep, "://") {
        // A scheme separator: what comes before it names a URL's scheme, not a setting
        // (`clé rtmp://…`, `[redacted]://…` where a masked key sits in front of a URL).
        return None;
    }
    let mut k = skip_blanks_back(chars, sep);
    // `**Stream key**: …`, `` `stream_key`: … ``: Markdown around the name.
    let marks = {
        let mut m = k;
        while prev_char(chars, m).is_some_and(|c| c == '*' || c == '`') && k.saturating_sub(m) < 3 {
            m = m.saturating_sub(1);
        }
        m
    };
    if marks < k && prev_char(chars, marks).is_some_and(|c| is_name_char(c) || c == '"') {
        k = marks;
    }
    if let Some(mask_start) = k.checked_sub(MASK.chars().count())
        && starts_with_at(chars, mask_start, MASK)
    {
        // `[redacted]: value`, `key[redacted]=value`: the mask took a name's place, and what
        // it shielded is still a secret's value.
        return Some(NameBefore {
            candidates: Vec::new(),
            quoted: false,
            start: mask_start,
            masked: true,
        });
    }
    if prev_char(chars, k) == Some(')') {
        // `Stream key (optional): …`: a remark between the name and its separator.
        k = skip_blanks_back(chars, remark_start(chars, k)?);
    }
    let closing = prev_char(chars, k).filter(|&c| c == '"' || c == '\'');
    if let Some(quote) = closing {
        // A quoted name: everything back to the opening quote. Bounded, so a stray quote in a
        // long text cannot turn a paragraph into a "name"; `\"name\"` (JSON inside a string)
        // drops the escaping backslash.
        let mut end = k.saturating_sub(1);
        if prev_char(chars, end) == Some('\\') {
            end = end.saturating_sub(1);
        }
        let mut start = end;
        loop {
            let c = prev_char(chars, start)?;
            if c == quote {
                break;
            }
            if end.saturating_sub(start) >= 64 || c == '\n' {
                return None;
            }
            start = start.saturating_sub(1);
        }
        let name = text_of(span(chars, start, end));
        return (!name.is_empty()).then(|| NameBefore {
            candidates: vec![name],
            quoted: true,
            start: start.saturating_sub(1),
            masked: false,
        });
    }
    let word_end = k;
    let mut word_start = word_end;
    while prev_char(chars, word_start).is_some_and(is_name_char) {
        word_start = word_start.saturating_sub(1);
    }
    if word_start == word_end {
        return None;
    }
    // The word before the separator, the last two words, and — for names that put their
    // noun first (`clave de transmisión`) — the last three or four when they open with one.
    let mut words = vec![text_of(span(chars, word_start, word_end))];
    let mut from = word_start;
    while words.len() < LEADING_WORD_NAME && prev_char(chars, from) == Some(' ') {
        let prev_end = from.saturating_sub(1);
        let mut prev_start = prev_end;
        while prev_char(chars, prev_start).is_some_and(is_name_char) {
            prev_start = prev_start.saturating_sub(1);
        }
        if prev_start == prev_end {
            break;
        }
        words.push(text_of(span(chars, prev_start, prev_end)));
        from = prev_start;
    }
    let mut candidates = Vec::with_capacity(words.len());
    for n in 1..=words.len() {
        let Some(first) = words.get(n.saturating_sub(1)) else {
            break;
        };
        if n <= 2 || opens_with_leading_word(first) {
            let name: Vec<&str> = words.iter().take(n).rev().map(String::as_str).collect();
            candidates.push(name.join(" "));
        }
    }
    Some(NameBefore {
        candidates,
        quoted: false,
        start: word_start,
        masked: false,
    })
}

fn is_cookie_name(name: &str) -> bool {
    words_of(name)
        .iter()
        .any(|w| w.ends_with("cookie") || w.ends_with("cookies"))
}

/// How a name is tied to the value after it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Link {
    /// `:` or `=`, the only separators settings records are written with.
    Mark(char),
    /// An arrow (`→`, `->`, `=>`, `⇒`), or a linking word written with a colon (`is:`): read
    /// as `:` is.
    Arrow,
    /// A linking word of prose (`is`, `es`, `was set to`): weaker evidence than a separator,
    /// so a plain word after it reads as prose (`the stream key is missing`).
    Words,
}

/// Every separator with a name before it, in text order: where the separator starts (the
/// name ends before it), where the value may start, and how the two are linked.
struct Assignment {
    sep: usize,
    after: usize,
    link: Link,
    name: NameBefore,
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// Arrows that stand for a separator, longest first.
const ARROWS: [&str; 5] = ["->", "=>", "→", "⇒", "⟶"];

/// The arrow starting at `idx`, and where it ends.
fn arrow_at(chars: &[char], idx: usize) -> Option<usize> {
    ARROWS
        .into_iter()
        .find(|a| starts_with_at(chars, idx, a))
        .map(|arrow| idx.saturating_add(arrow.chars().count()))
}

/// The linking phrase starting at `idx`, after a blank: where the value may start, and the
/// link (a phrase ending in `:`/`=` separates as an arrow does).
fn phrase_at(chars: &[char], idx: usize) -> Option<(usize, Link)> {
    // The phrase's words, up to the longest phrase any link has.
    let mut words: Vec<String> = Vec::new();
    let mut ends = Vec::new();
    let mut pos = idx;
    loop {
        let end = run_end(chars, pos, char::is_alphabetic);
        if end == pos || end.saturating_sub(pos) > super::LINK_WORD_CHARS_MAX {
            break;
        }
        let word = text_of(span(chars, pos, end));
        if words.is_empty() && !is_link_word(&word) {
            break;
        }
        words.push(word);
        ends.push(end);
        if words.len() >= super::LINK_WORDS_MAX || !at(chars, end).is_some_and(is_blank) {
            break;
        }
        pos = run_end(chars, end, is_blank);
    }
    let len = link_phrase_len(&words)?;
    let end = *ends.get(len.checked_sub(1)?)?;
    match at(chars, end) {
        Some(c) if is_blank(c) => Some((end, Link::Words)),
        Some(':' | '=') => Some((end.saturating_add(1), Link::Arrow)),
        _ => None,
    }
}

fn assignments_of(chars: &[char]) -> Vec<Assignment> {
    let mut found = Vec::new();
    for (sep, &c) in chars.iter().enumerate() {
        let link = match c {
            '-' | '=' | '→' | '⇒' | '⟶' => arrow_at(chars, sep).map(|end| (end, Link::Arrow)),
            _ if c.is_alphabetic() && prev_char(chars, sep).is_some_and(is_blank) => {
                phrase_at(chars, sep)
            }
            _ => None,
        };
        let (after, link) = match link {
            Some(link) => link,
            None if c == ':' || c == '=' => (sep.saturating_add(1), Link::Mark(c)),
            None => continue,
        };
        if let Some(name) = name_before(chars, sep) {
            found.push(Assignment {
                sep,
                after,
                link,
                name,
            });
        }
    }
    found
}

/// The text of a settings label whose separator is at `sep`; an unquoted label runs to a stop
/// or to where the next name starts (`name=Stream key value=abc` gives `Stream key`).
fn label_text(chars: &[char], sep: usize, next_name: Option<usize>) -> String {
    let start = value_start(chars, sep.saturating_add(1));
    // A label is a short name: reading at most this far keeps a text of many labels linear.
    let limit = start.saturating_add(LABEL_MAX).min(chars.len());
    let opener = QUOTES.into_iter().find(|o| starts_with_at(chars, start, o));
    if let Some(opener) = opener {
        let content = start.saturating_add(opener.chars().count());
        let mut j = content;
        while j < limit
            && at(chars, j).is_some_and(|c| c != '\n')
            && !starts_with_at(chars, j, opener)
        {
            j = j.saturating_add(1);
        }
        return text_of(span(chars, content, j));
    }
    let mut end = start;
    while end < limit && at(chars, end).is_some_and(|c| !is_label_stop(c)) {
        end = end.saturating_add(1);
    }
    if let Some(next) = next_name.filter(|&n| n > start) {
        end = end.min(next);
    }
    text_of(span(chars, start, end)).trim().to_owned()
}

/// Longest settings label read, in characters.
const LABEL_MAX: usize = 64;

/// Longest value [`value_span`] reads to judge it; a longer one is judged generated.
const VALUE_SCAN_MAX: usize = 256;

/// Most words of an unquoted label tried as the label's name: text after the name may run on
/// (`value=…; name=Stream key ok`).
const LABEL_WORDS: usize = 4;

/// A label that names a secret, or whose first words do.
fn names_a_secret(label: &str) -> bool {
    let words: Vec<&str> = label.split_whitespace().collect();
    (1..=words.len().min(LABEL_WORDS))
        .any(|n| is_secret_label(&words.get(..n).unwrap_or_default().join(" ")))
}

/// Separators of `value` members that belong to a settings record whose label names a secret,
/// in text order. A record is what lies between record boundaries; a label after the record
/// already had a value after its label starts a new record (`name=url value=… name=Stream key
/// value=…` on one line).
fn pair_values(chars: &[char], found: &[Assignment]) -> Vec<usize> {
    #[derive(Default)]
    struct Record {
        secret: bool,
        labelled: bool,
        valued_after_label: bool,
        values: Vec<usize>,
    }
    let mut masked = Vec::new();
    let mut record = Record::default();
    let mut close = |record: &mut Record| {
        if record.secret {
            masked.append(&mut record.values);
        }
        *record = Record::default();
    };
    let mut last = 0_usize;
    let marks: Vec<&Assignment> = found
        .iter()
        .filter(|a| matches!(a.link, Link::Mark(_)))
        .collect();
    for (idx, assignment) in marks.iter().enumerate() {
        let name = &assignment.name;
        if breaks_record(span(chars, last, name.start)) {
            close(&mut record);
        }
        last = assignment.sep;
        let Some(first) = name.candidates.first() else {
            continue;
        };
        if compact_is(first, "value") {
            record.values.push(assignment.sep);
            record.valued_after_label |= record.labelled;
        } else if LABEL_NAMES.iter().any(|label| compact_is(first, label)) {
            if record.labelled && record.valued_after_label {
                close(&mut record);
            }
            let next_name = marks.get(idx.saturating_add(1)).map(|a| a.name.start);
            record.labelled = true;
            record.secret |= names_a_secret(&label_text(chars, assignment.sep, next_name));
        }
    }
    close(&mut record);
    masked
}

/// What the name before a separator asks of the value after it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Keep,
    /// A secret: the value is masked.
    Secret {
        key_alone: bool,
        to_line_end: bool,
    },
    /// Secret in text only: masked unless a bare `name: word` reads as prose.
    TextSecret,
    /// A stream ID: kept when it is a UUID.
    StreamId,
}

fn verdict(name: &NameBefore, pair_value: bool) -> Verdict {
    if name.masked || pair_value {
        return Verdict::Secret {
            key_alone: false,
            to_line_end: false,
        };
    }
    // The one- and two-word names decide as secret names always have; a longer name opening
    // with a leading word (`clave de transmisión`) could as well be prose (`la clave del
    // éxito: practicar`), so it asks what text-only names ask.
    let (short, long) = name.candidates.split_at(name.candidates.len().min(2));
    if short.iter().any(|c| is_secret_key(c)) {
        return Verdict::Secret {
            // `key: stream_key` names a setting; `stream key: …` is a stream key whatever
            // its value looks like.
            key_alone: names_key_alone(name),
            to_line_end: name.candidates.iter().any(|c| is_cookie_name(c)),
        };
    }
    if name.candidates.iter().any(|c| is_stream_id_key(c)) {
        return Verdict::StreamId;
    }
    if name.candidates.iter().any(|c| is_text_secret_name(c))
        || long.iter().any(|c| is_secret_key(c))
    {
        return Verdict::TextSecret;
    }
    Verdict::Keep
}

/// The value starting at `from` (after its separator), as it would be masked: quotes set
/// aside, up to an unquoted value's stop.
fn value_span(chars: &[char], from: usize) -> (usize, usize) {
    let start = value_start(chars, from);
    // Bounded: a value left in place is read again at every separator inside it.
    let limit = start.saturating_add(VALUE_SCAN_MAX).min(chars.len());
    for opener in QUOTES {
        if starts_with_at(chars, start, opener) {
            let content = start.saturating_add(opener.chars().count());
            let mut j = content;
            while j < limit
                && at(chars, j).is_some_and(|c| c != '\n')
                && !starts_with_at(chars, j, opener)
            {
                j = j.saturating_add(1);
            }
            return (content, j);
        }
    }
    let mut end = start;
    while end < limit && at(chars, end).is_some_and(|c| !is_value_stop(c)) {
        end = end.saturating_add(1);
    }
    (start, end)
}

/// Masks the values of secret assignments in the text.
pub(super) fn mask_assignments(chars: &[char]) -> Vec<char> {
    let found = assignments_of(chars);
    let pairs = pair_values(chars, &found);
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    for assignment in found {
        if assignment.sep < i {
            // Inside a value already masked.
            continue;
        }
        out.extend_from_slice(span(chars, i, assignment.after));
        i = assignment.after;
        let pair_value = pairs.binary_search(&assignment.sep).is_ok();
        let Some((key_alone, to_line_end)) = decide(chars, &assignment, pair_value) else {
            continue;
        };
        // A quoted name asks for a JSON-shaped value only after a JSON separator.
        let quoted = assignment.name.quoted && matches!(assignment.link, Link::Mark(_));
        i = mask_value_at(chars, i, &mut out, quoted, key_alone, to_line_end);
    }
    out.extend_from_slice(span(chars, i, chars.len()));
    out
}

/// Whether the value of `assignment` is masked, and how: `Some((key_alone, to_line_end))`.
fn decide(chars: &[char], assignment: &Assignment, pair_value: bool) -> Option<(bool, bool)> {
    let name = &assignment.name;
    let from = assignment.after;
    match assignment.link {
        Link::Words => return prose_decision(chars, name, from),
        // A mask in a name's place counts before `:`/`=` only, where the pre-scan looks.
        Link::Arrow if name.masked => return None,
        Link::Mark(_) | Link::Arrow => {}
    }
    match verdict(name, pair_value) {
        Verdict::Keep => None,
        Verdict::Secret {
            key_alone,
            to_line_end,
        } => Some((key_alone, to_line_end)),
        Verdict::StreamId => {
            let (start, end) = value_span(chars, from);
            let value = text_of(span(chars, start, end));
            (!value.is_empty() && !is_uuid(&value)).then_some((false, false))
        }
        Verdict::TextSecret => {
            // A name secret in text only (`stream`, `session`, `sid`) masks what can be a key:
            // a generated-looking value. A plain word (letters, one case after the first) is a
            // stream's or a session's name, in whatever form it is written (`stream: Program`,
            // `"stream": "Program"`, `stream=Program`), and `true`/`false` are flags.
            let (start, end) = value_span(chars, from);
            let read_whole = end.saturating_sub(start) < VALUE_SCAN_MAX;
            let value = span(chars, start, end);
            let plain = read_whole && !value.is_empty() && !looks_generated(value);
            (!plain).then_some((false, false))
        }
    }
}

/// A secret named in prose (`the stream key is abc123`): only a secret name counts (not the
/// names text alone treats as secret: `the stream is live`), and a plain word after the link
/// reads as prose (`the password is required`), while a quoted value, a generated-looking
/// one and a mask (with whatever is glued to it) are masked.
fn prose_decision(chars: &[char], name: &NameBefore, from: usize) -> Option<(bool, bool)> {
    if !name.candidates.iter().any(|c| is_secret_key(c)) {
        return None;
    }
    let start = value_start(chars, from);
    let (content, end) = value_span(chars, from);
    let quoted = content > start;
    let value = span(chars, content, end);
    let masked = starts_with_at(chars, start, MASK);
    let read_whole = end.saturating_sub(content) < VALUE_SCAN_MAX;
    let word = value.iter().any(|c| c.is_alphanumeric()) && !looks_generated(value);
    if !quoted && !masked && read_whole && (word || value.iter().all(|c| !c.is_alphanumeric())) {
        return None;
    }
    Some((names_key_alone(name), false))
}

/// `key` alone names the value (`key: stream_key` names a setting), unless a longer reading
/// of the name is itself secret (`stream key: …` is a stream key whatever its value).
fn names_key_alone(name: &NameBefore) -> bool {
    name.candidates.first().is_some_and(|c| is_key_alone(c))
        && !name.candidates.iter().skip(1).any(|c| is_secret_key(c))
}

/// Where a value that starts with the mask ends. The mask does not end the value: characters
/// glued to it (`[redacted]hunter2`) are the rest of the value, and so is a generated-looking
/// token after a space (`[redacted] live_9f8e7d`), while a word (`[redacted] was rejected`)
/// and a following assignment (`[redacted] token=…`) are not.
fn masked_value_end(chars: &[char], mask_start: usize) -> usize {
    let after = mask_start.saturating_add(MASK.chars().count());
    let end = run_end(chars, after, |c| !is_value_stop(c));
    let token_start = run_end(chars, end, |c| c == ' ' || c == '\t');
    if token_start == end {
        return end;
    }
    let token_end = run_end(chars, token_start, |c| !is_value_stop(c));
    let token = span(chars, token_start, token_end);
    let assignment = token.iter().any(|&c| c == ':' || c == '=');
    if !token.is_empty() && !assignment && looks_generated(token) {
        token_end
    } else {
        end
    }
}

/// Writes the masked form of the value starting at `from` and returns where copying resumes.
fn mask_value_at(
    chars: &[char],
    from: usize,
    out: &mut Vec<char>,
    quoted_name: bool,
    key_alone: bool,
    to_line_end: bool,
) -> usize {
    let start = value_start(chars, from);
    out.extend_from_slice(span(chars, from, start));
    if starts_with_at(chars, start, MASK) {
        push_str(out, MASK);
        return masked_value_end(chars, start);
    }
    if let Some(opener) = QUOTES.into_iter().find(|o| starts_with_at(chars, start, o)) {
        return mask_quoted_value(chars, start, opener, out, key_alone);
    }
    let first = at(chars, start);
    if quoted_name && matches!(first, Some('{' | '[')) {
        return start;
    }
    let end = if to_line_end {
        run_end(chars, start, |c| !is_cookie_value_stop(c))
    } else {
        run_end(chars, start, |c| !is_value_stop(c))
    };
    if end == start {
        return start;
    }
    let value = text_of(span(chars, start, end));
    // A JSON member's `null`, `true` or `false` holds no secret, as in JSON values.
    if quoted_name && matches!(value.as_str(), "null" | "true" | "false") {
        push_str(out, &value);
        return end;
    }
    if key_alone && is_secret_name_itself(&value) {
        push_str(out, &value);
        return end;
    }
    if let Some(after_scheme) = auth_scheme_prefix(chars, start, end) {
        // `Bearer abc` as a value: keep the scheme word, mask the credential.
        out.extend_from_slice(span(chars, start, after_scheme));
        let cred_end = if starts_with_at(chars, after_scheme, MASK) {
            masked_value_end(chars, after_scheme)
        } else {
            run_end(chars, after_scheme, |c| !is_value_stop(c))
        };
        push_str(out, MASK);
        return cred_end;
    }
    if quoted_name {
        out.push('"');
        push_str(out, MASK);
        out.push('"');
    } else {
        push_str(out, MASK);
    }
    end
}

/// When the unquoted value `start..end` is an authorization scheme word followed by spaces and
/// a credential, the index where the credential starts.
fn auth_scheme_prefix(chars: &[char], start: usize, end: usize) -> Option<usize> {
    let word = text_of(span(chars, start, end)).to_ascii_lowercase();
    if !AUTH_SCHEMES.contains(&word.as_str()) {
        return None;
    }
    let cred = run_end(chars, end, |c| c == ' ' || c == '\t');
    (cred > end && at(chars, cred).is_some_and(|c| !is_value_stop(c))).then_some(cred)
}

fn mask_quoted_value(
    chars: &[char],
    start: usize,
    opener: &str,
    out: &mut Vec<char>,
    key_alone: bool,
) -> usize {
    let content_start = start.saturating_add(opener.chars().count());
    let mut j = content_start;
    let mut close: Option<usize> = None;
    while let Some(c) = at(chars, j) {
        if c == '\n' || c == '\r' {
            break;
        }
        if starts_with_at(chars, j, opener) {
            close = Some(j);
            break;
        }
        if c == '\\' && opener != "\\\"" {
            j = j.saturating_add(2);
            continue;
        }
        j = j.saturating_add(1);
    }
    let content_end = close.unwrap_or(j).min(chars.len());
    let content = span(chars, content_start, content_end);
    push_str(out, opener);
    if content.is_empty() || (key_alone && is_secret_name_itself(&text_of(content))) {
        out.extend_from_slice(content);
    } else {
        push_str(out, MASK);
    }
    match close {
        Some(c) => {
            push_str(out, opener);
            c.saturating_add(opener.chars().count())
        }
        None => content_end,
    }
}
