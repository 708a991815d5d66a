//! Text rule 3: tables. A Markdown table (`|` separated) or a CSV, TSV or `;`-separated
//! table whose header row names a secret column has that column's cells masked in every row
//! below it; a header with a label column (`name`, `title`, `key`, …) and a `value` column is a
//! settings table, and a row whose label names a secret has its value masked, as the JSON
//! `{label, value}` rule does. A cell holds a secret whatever it looks like, so no other rule
//! could tell it from a room name.
//!
//! Lines end at a line feed or at a written `\n` (a table inside escaped JSON text). A header
//! must read as column names (short cells, no sentence), so prose with commas is not a table;
//! a table ends at a line without its separator.

use super::{
    LABEL_NAMES, MASK, at, compact_is, is_secret_label, is_stream_id_key, is_text_secret_name,
    is_uuid, looks_generated, push_str, span, text_of,
};

/// Separators tried, in order, on a candidate header line.
const SEPARATORS: &[char] = &['|', '\t', ',', ';'];

/// Longest header cell, in characters, that still reads as a column name.
const HEADER_CELL_MAX: usize = 48;

/// Most words a header cell has when it is a column name.
const HEADER_CELL_WORDS: usize = 5;

/// Most words a header cell naming a secret column has: a secret's name is short
/// (`Stream key`, `API token value`), a clause of prose that mentions one is not.
const SECRET_HEADER_WORDS: usize = 3;

/// Words that make a "header cell" a phrase of prose (`the key, as always, …`).
const PROSE_OPENERS: &[&str] = &[
    "the", "a", "an", "my", "your", "our", "their", "his", "her", "its", "this", "that", "no",
    "any", "every", "each", "some",
];

/// A line of the text: the characters `start..end`, without its line break.
#[derive(Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
}

fn lines_of(chars: &[char]) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while let Some(c) = at(chars, i) {
        let written_break = c == '\\'
            && at(chars, i.saturating_add(1)) == Some('n')
            && !escaped_backslash(chars, i);
        if c == '\n' || written_break {
            let mut end = i;
            // `\r\n` and a written `\r\n` both end the line before the carriage return.
            if end > start && at(chars, end.saturating_sub(1)) == Some('\r') {
                end = end.saturating_sub(1);
            } else if end >= start.saturating_add(2)
                && span(chars, end.saturating_sub(2), end) == ['\\', 'r']
            {
                end = end.saturating_sub(2);
            }
            lines.push(Line { start, end });
            i = i.saturating_add(if c == '\n' { 1 } else { 2 });
            start = i;
            continue;
        }
        i = i.saturating_add(1);
    }
    lines.push(Line {
        start,
        end: chars.len(),
    });
    lines
}

/// True when the backslash at `i` is itself escaped (an odd run of backslashes before it).
fn escaped_backslash(chars: &[char], i: usize) -> bool {
    let mut k = i;
    let mut run = 0_usize;
    while k > 0 && at(chars, k.saturating_sub(1)) == Some('\\') {
        run = run.saturating_add(1);
        k = k.saturating_sub(1);
    }
    run % 2 == 1
}

/// Cell content spans (absolute indices) of a line split at `sep`. CSV-style double quotes
/// protect separators in a cell; in a pipe table `\|` is a literal pipe. A pipe table's outer
/// pipes open and close the row rather than separate empty cells.
fn cells_of(chars: &[char], line: Line, sep: char) -> Vec<(usize, usize)> {
    let mut cells = Vec::new();
    let mut cell_start = line.start;
    let mut quoted = false;
    let mut i = line.start;
    while i < line.end {
        let c = at(chars, i).unwrap_or(' ');
        if sep == '|' {
            if c == '\\' {
                i = i.saturating_add(2);
                continue;
            }
        } else if c == '"' {
            quoted = !quoted;
        }
        if c == sep && !quoted {
            cells.push((cell_start, i));
            cell_start = i.saturating_add(1);
        }
        i = i.saturating_add(1);
    }
    cells.push((cell_start, line.end));
    if sep == '|' {
        let blank = |&(s, e): &(usize, usize)| span(chars, s, e).iter().all(|c| c.is_whitespace());
        if cells.first().is_some_and(blank) && cells.len() > 1 {
            cells.remove(0);
        }
        if cells.last().is_some_and(blank) && cells.len() > 1 {
            cells.pop();
        }
    }
    cells
}

/// A cell's text without padding, quotes or Markdown emphasis.
fn cell_text(chars: &[char], (start, end): (usize, usize)) -> String {
    let text = text_of(span(chars, start, end));
    text.trim()
        .trim_matches(|c| matches!(c, '"' | '\'' | '`' | '*' | '_'))
        .trim()
        .to_owned()
}

/// What a header asks of the rows under it.
#[derive(Default)]
struct Columns {
    /// Columns whose every cell is a secret.
    secret: Vec<usize>,
    /// Columns that keep only UUIDs (`stream_id`).
    stream_id: Vec<usize>,
    /// Columns named as only text names a secret (`Stream`, `Session`): a cell is masked when
    /// it looks generated, so a column of states or titles stays readable.
    text_secret: Vec<usize>,
    /// A label column and a value column: settings rows.
    pair: Option<(usize, usize)>,
}

impl Columns {
    fn is_empty(&self) -> bool {
        self.secret.is_empty()
            && self.stream_id.is_empty()
            && self.text_secret.is_empty()
            && self.pair.is_none()
    }
}

fn reads_as_column_name(name: &str) -> bool {
    let words: Vec<&str> = name.split_whitespace().collect();
    name.chars().count() <= HEADER_CELL_MAX
        && words.len() <= HEADER_CELL_WORDS
        && !name.ends_with(['.', '!', '?'])
        && !name.contains(['=', ':'])
}

fn header_columns(chars: &[char], cells: &[(usize, usize)]) -> Option<Columns> {
    if cells.len() < 2 {
        return None;
    }
    let names: Vec<String> = cells.iter().map(|&cell| cell_text(chars, cell)).collect();
    if !names.iter().all(|n| reads_as_column_name(n)) {
        return None;
    }
    let value_col = names.iter().position(|n| compact_is(n, "value"));
    let label_col = names.iter().enumerate().position(|(idx, n)| {
        Some(idx) != value_col && LABEL_NAMES.iter().any(|label| compact_is(n, label))
    });
    let mut columns = Columns {
        pair: label_col.zip(value_col),
        ..Columns::default()
    };
    for (idx, name) in names.iter().enumerate() {
        let words: Vec<String> = name.split_whitespace().map(str::to_lowercase).collect();
        if words.len() > SECRET_HEADER_WORDS
            || words.iter().any(|w| PROSE_OPENERS.contains(&w.as_str()))
        {
            continue;
        }
        if Some(idx) == label_col && columns.pair.is_some() {
            // `key | value`: the key column names settings, it does not hold secrets.
            continue;
        }
        if is_stream_id_key(name) {
            columns.stream_id.push(idx);
        } else if is_secret_label(name) {
            columns.secret.push(idx);
        } else if is_text_secret_name(name) {
            columns.text_secret.push(idx);
        }
    }
    (!columns.is_empty()).then_some(columns)
}

fn is_delimiter_row(chars: &[char], cells: &[(usize, usize)]) -> bool {
    cells.iter().all(|&(s, e)| {
        let cell = text_of(span(chars, s, e));
        let cell = cell.trim();
        !cell.is_empty() && cell.contains('-') && cell.chars().all(|c| matches!(c, '-' | ':'))
    })
}

/// A drawn table's rule: only `+ - = : |` and blanks, with a `-` or `=`.
fn is_border_line(chars: &[char], line: Line) -> bool {
    let cells = span(chars, line.start, line.end);
    cells.iter().any(|c| matches!(c, '-' | '='))
        && cells
            .iter()
            .all(|c| c.is_whitespace() || matches!(c, '+' | '-' | '=' | ':' | '|'))
}

fn has_separator(chars: &[char], line: Line, sep: char) -> bool {
    span(chars, line.start, line.end).contains(&sep)
}

/// Where a cell's content sits once padding and one pair of quotes are set aside.
fn cell_core(chars: &[char], (start, end): (usize, usize)) -> (usize, usize) {
    let mut s = start;
    let mut e = end;
    while s < e && at(chars, s).is_some_and(char::is_whitespace) {
        s = s.saturating_add(1);
    }
    while e > s && at(chars, e.saturating_sub(1)).is_some_and(char::is_whitespace) {
        e = e.saturating_sub(1);
    }
    let quoted = e >= s.saturating_add(2)
        && at(chars, s) == Some('"')
        && at(chars, e.saturating_sub(1)) == Some('"');
    if quoted {
        (s.saturating_add(1), e.saturating_sub(1))
    } else {
        (s, e)
    }
}

/// The part of `line` from its first pipe, when other text comes before that pipe.
fn from_first_pipe(chars: &[char], line: Line) -> Option<Line> {
    let pipe = (line.start..line.end).find(|&i| at(chars, i) == Some('|'))?;
    let prefix = span(chars, line.start, pipe);
    (!prefix.iter().all(|c| c.is_whitespace())).then_some(Line {
        start: pipe,
        end: line.end,
    })
}

/// Masks the secret cells of every table in the text.
pub(super) fn mask_tables(chars: &[char]) -> Vec<char> {
    let lines = lines_of(chars);
    // Cell cores to replace with the mask, in text order.
    let mut masked: Vec<(usize, usize)> = Vec::new();
    let mut idx = 0;
    while let Some(&header) = lines.get(idx) {
        idx = idx.saturating_add(1);
        let found = SEPARATORS
            .iter()
            .find_map(|&sep| {
                if !has_separator(chars, header, sep) {
                    return None;
                }
                let cells = cells_of(chars, header, sep);
                header_columns(chars, &cells).map(|columns| (sep, columns, header, false))
            })
            .or_else(|| {
                // A pipe table's header may follow other text on its line (`Keys: | Room |
                // Stream key |`): the row is judged by its cells, from its first pipe.
                let piped = from_first_pipe(chars, header)?;
                header_columns(chars, &cells_of(chars, piped, '|'))
                    .map(|columns| ('|', columns, piped, true))
            });
        let Some((sep, columns, header, prefixed)) = found else {
            continue;
        };
        let header_cells = cells_of(chars, header, sep).len();
        while let Some(&row) = lines.get(idx) {
            if sep == '|' && is_border_line(chars, row) {
                // `+------+-----+` between rows of a drawn table.
                idx = idx.saturating_add(1);
                continue;
            }
            if !has_separator(chars, row, sep) {
                break;
            }
            idx = idx.saturating_add(1);
            // Rows of a table whose header had text before it are judged from their first
            // pipe too.
            let row = if prefixed {
                from_first_pipe(chars, row).unwrap_or(row)
            } else {
                row
            };
            let cells = cells_of(chars, row, sep);
            if sep == '|' && is_delimiter_row(chars, &cells) {
                continue;
            }
            mask_row(chars, &cells, &columns, header_cells, &mut masked);
        }
    }
    if masked.is_empty() {
        return chars.to_vec();
    }
    masked.sort_unstable();
    let mut out = Vec::with_capacity(chars.len());
    let mut copied = 0;
    for (start, end) in masked {
        if start < copied {
            continue;
        }
        out.extend_from_slice(span(chars, copied, start));
        push_str(&mut out, MASK);
        copied = end;
    }
    out.extend_from_slice(span(chars, copied, chars.len()));
    out
}

/// Queues the secret cells of one row. Where a cell's column is ambiguous, it is judged the
/// way that masks: every cell that could sit under a secret column is masked. A row with more
/// cells than its header has a secret that held the separator, so the cells a secret column
/// could have spread over are masked; a row with fewer cells has some left out, anywhere
/// before a cell as far as the text says (the table rules put it under the column of its
/// position, a reader may see it under the one it lines up with), so each cell is judged
/// under every column it could have moved to.
fn mask_row(
    chars: &[char],
    cells: &[(usize, usize)],
    columns: &Columns,
    header_cells: usize,
    masked: &mut Vec<(usize, usize)>,
) {
    let extra = cells.len().saturating_sub(header_cells);
    let missing = header_cells.saturating_sub(cells.len());
    // The cells that could sit under column `col`.
    let under = |col: usize| {
        let first = col.saturating_sub(missing);
        cells.iter().skip(first).take(
            col.saturating_add(extra)
                .saturating_sub(first)
                .saturating_add(1),
        )
    };
    let mut queue = |col: usize, keep: fn(&[char]) -> bool| {
        for cell in under(col) {
            let (s, e) = cell_core(chars, *cell);
            let core = span(chars, s, e);
            if core.is_empty() || core.iter().copied().eq(MASK.chars()) || keep(core) {
                continue;
            }
            masked.push((s, e));
        }
    };
    for &col in &columns.secret {
        queue(col, |_| false);
    }
    for &col in &columns.stream_id {
        queue(col, |core| is_uuid(&text_of(core)));
    }
    for &col in &columns.text_secret {
        queue(col, |core| !looks_generated(core));
    }
    if let Some((label_col, value_col)) = columns.pair {
        let secret_label = under(label_col).any(|&cell| is_secret_label(&cell_text(chars, cell)));
        if secret_label {
            queue(value_col, |_| false);
        }
    }
}
