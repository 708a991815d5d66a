//! Canonical JSON: one byte string per JSON object, used for hashing, signing and sending.
//!
//! Rules: an object at the top; keys sorted by their UTF-8 bytes at every level; no
//! insignificant whitespace; strings written with the minimal escapes (`"`, `\`, and control
//! characters below U+0020 as `\u00XX`, except `\b \f \n \r \t`), every other character raw
//! UTF-8; integers of any size kept digit for digit (`-0` becomes `0`); fractions, exponents,
//! NaN and Infinity refused; duplicate keys (after unescaping) refused.

use std::collections::BTreeMap;
use std::fmt;

/// A canonical JSON object, valid UTF-8. Only this module can construct one.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Canonical(String);

impl Canonical {
    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The canonical bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
    /// Gives up the canonical text.
    pub fn into_string(self) -> String {
        self.0
    }
    /// The value as `serde_json` sees it (integers beyond 64 bits cannot be represented and
    /// give an error).
    pub fn to_value(&self) -> Result<serde_json::Value, CanonicalError> {
        // Read with this module's own parser: serde_json would silently turn an integer
        // beyond 64 bits into a rounded float.
        value_of_node(&parse_document(&self.0)?)
    }
}

impl fmt::Debug for Canonical {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Canonical({})", self.0)
    }
}

/// Why a text or value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    /// The text is not JSON.
    #[error("not valid JSON at byte {offset}: {reason}")]
    Syntax {
        /// Byte offset of the problem.
        offset: usize,
        /// What was wrong.
        reason: &'static str,
    },
    /// The top level is not an object.
    #[error("the top level must be a JSON object")]
    NotObject,
    /// A key appears twice in one object.
    #[error("duplicate key {0:?}")]
    DuplicateKey(String),
    /// A number with a fraction or exponent, NaN or Infinity.
    #[error("numbers must be integers (no fractions, exponents, NaN or Infinity)")]
    NotInteger,
    /// Nesting deeper than the parser allows.
    #[error("nesting deeper than {0} levels")]
    TooDeep(usize),
    /// An integer does not fit the target representation.
    #[error("integer out of range for this use")]
    IntegerRange,
}

/// Maximum nesting depth accepted by the parser.
pub const MAX_DEPTH: usize = 64;

/// Parses JSON text into its canonical form.
pub fn from_str(text: &str) -> Result<Canonical, CanonicalError> {
    let node = parse_document(text)?;
    canonical_of(&node)
}

/// Canonicalises a `serde_json` value (fails on floats and on a non-object top level).
pub fn from_value(value: &serde_json::Value) -> Result<Canonical, CanonicalError> {
    let node = node_of_value(value, 1)?;
    canonical_of(&node)
}

fn canonical_of(node: &Node) -> Result<Canonical, CanonicalError> {
    if !matches!(node, Node::Object(_)) {
        return Err(CanonicalError::NotObject);
    }
    let mut out = String::new();
    write_node(node, &mut out);
    Ok(Canonical(out))
}

/// A parsed JSON value. Integers stay as their decimal digits so no size limit or rounding
/// can creep in; objects are kept sorted by key bytes (`String`'s order is byte order).
enum Node {
    Null,
    Bool(bool),
    Integer(String),
    String(String),
    Array(Vec<Node>),
    Object(BTreeMap<String, Node>),
}

fn parse_document(text: &str) -> Result<Node, CanonicalError> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        pos: 0,
    };
    parser.skip_whitespace();
    let node = parser.value(1)?;
    parser.skip_whitespace();
    if parser.pos != parser.bytes.len() {
        return Err(parser.syntax("unexpected characters after the value"));
    }
    Ok(node)
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn syntax(&self, reason: &'static str) -> CanonicalError {
        CanonicalError::Syntax {
            offset: self.pos,
            reason,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn rest(&self) -> &[u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }

    fn skip_whitespace(&mut self) {
        // Only the four JSON whitespace bytes; a BOM or a non-breaking space is a syntax error.
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8, reason: &'static str) -> Result<(), CanonicalError> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax(reason))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, CanonicalError> {
        match self.peek() {
            None => Err(self.syntax("unexpected end of input")),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Node::String),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal(b"true", Node::Bool(true)),
            Some(b'f') => self.literal(b"false", Node::Bool(false)),
            Some(b'n') => self.literal(b"null", Node::Null),
            // Not JSON at all, but named so a caller learns why a float-like value failed.
            Some(b'N') if self.rest().starts_with(b"NaN") => Err(CanonicalError::NotInteger),
            Some(b'I') if self.rest().starts_with(b"Infinity") => Err(CanonicalError::NotInteger),
            Some(_) => Err(self.syntax("expected a JSON value")),
        }
    }

    fn literal(&mut self, word: &'static [u8], node: Node) -> Result<Node, CanonicalError> {
        if self.rest().starts_with(word) {
            self.pos += word.len();
            Ok(node)
        } else {
            Err(self.syntax("unknown literal"))
        }
    }

    fn enter(&self, depth: usize) -> Result<(), CanonicalError> {
        if depth > MAX_DEPTH {
            Err(CanonicalError::TooDeep(MAX_DEPTH))
        } else {
            Ok(())
        }
    }

    fn object(&mut self, depth: usize) -> Result<Node, CanonicalError> {
        self.enter(depth)?;
        self.pos += 1; // '{'
        let mut map = BTreeMap::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Node::Object(map));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.syntax("expected a string key"));
            }
            let key = self.string()?;
            self.skip_whitespace();
            self.expect(b':', "expected ':' after a key")?;
            self.skip_whitespace();
            let value = self.value(depth + 1)?;
            // Compared after unescaping: "a" and "\u0061" are the same key.
            if map.contains_key(&key) {
                return Err(CanonicalError::DuplicateKey(key));
            }
            map.insert(key, value);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Node::Object(map));
                }
                _ => return Err(self.syntax("expected ',' or '}' in an object")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Node, CanonicalError> {
        self.enter(depth)?;
        self.pos += 1; // '['
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Node::Array(items));
        }
        loop {
            self.skip_whitespace();
            items.push(self.value(depth + 1)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Node::Array(items));
                }
                _ => return Err(self.syntax("expected ',' or ']' in an array")),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Node, CanonicalError> {
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
            if self.rest().starts_with(b"Infinity") {
                return Err(CanonicalError::NotInteger);
            }
        }
        let start = self.pos;
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.syntax("leading zeros are not allowed"));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.syntax("expected a digit")),
        }
        let end = self.pos;
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.syntax("expected a digit after '.'"));
            }
            integer = false;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.syntax("expected a digit in the exponent"));
            }
            integer = false;
        }
        if !integer {
            return Err(CanonicalError::NotInteger);
        }
        let digits = self.bytes.get(start..end).unwrap_or_default();
        // The slice holds only ASCII digits, so this conversion cannot fail.
        let digits = std::str::from_utf8(digits).map_err(|_| self.syntax("expected a digit"))?;
        if digits == "0" || !negative {
            Ok(Node::Integer(digits.to_owned()))
        } else {
            Ok(Node::Integer(format!("-{digits}")))
        }
    }

    fn hex4(&mut self) -> Result<u32, CanonicalError> {
        let mut value = 0u32;
        for _ in 0..4 {
            let digit = match self.peek() {
                Some(b) => char::from(b).to_digit(16),
                None => None,
            };
            match digit {
                Some(d) => value = value * 16 + d,
                None => return Err(self.syntax("expected four hex digits after \\u")),
            }
            self.pos += 1;
        }
        Ok(value)
    }

    fn string(&mut self) -> Result<String, CanonicalError> {
        self.pos += 1; // '"'
        let mut out = String::new();
        loop {
            // Copy the longest run of plain bytes at once; the input is a `&str`, and runs end
            // only at ASCII bytes, so every run is itself valid UTF-8.
            let run_start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            let run = self.bytes.get(run_start..self.pos).unwrap_or_default();
            out.push_str(std::str::from_utf8(run).map_err(|_| self.syntax("invalid UTF-8"))?);
            match self.peek() {
                None => return Err(self.syntax("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let escaped = self.escape()?;
                    out.push(escaped);
                }
                Some(_) => return Err(self.syntax("control character in a string")),
            }
        }
    }

    fn escape(&mut self) -> Result<char, CanonicalError> {
        let simple = match self.peek() {
            Some(b'"') => Some('"'),
            Some(b'\\') => Some('\\'),
            Some(b'/') => Some('/'),
            Some(b'b') => Some('\u{8}'),
            Some(b'f') => Some('\u{c}'),
            Some(b'n') => Some('\n'),
            Some(b'r') => Some('\r'),
            Some(b't') => Some('\t'),
            Some(b'u') => None,
            _ => return Err(self.syntax("unknown escape")),
        };
        self.pos += 1;
        if let Some(c) = simple {
            return Ok(c);
        }
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                // A high surrogate must be followed at once by an escaped low surrogate.
                if !self.rest().starts_with(b"\\u") {
                    return Err(self.syntax("lone surrogate escape"));
                }
                self.pos += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.syntax("lone surrogate escape"));
                }
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.syntax("lone surrogate escape")),
            other => other,
        };
        char::from_u32(code).ok_or_else(|| self.syntax("invalid escape"))
    }
}

fn node_of_value(value: &serde_json::Value, depth: usize) -> Result<Node, CanonicalError> {
    use serde_json::Value;
    Ok(match value {
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Node::Integer(u.to_string())
            } else if let Some(i) = n.as_i64() {
                Node::Integer(i.to_string())
            } else {
                return Err(CanonicalError::NotInteger);
            }
        }
        Value::String(s) => Node::String(s.clone()),
        Value::Array(items) => {
            if depth > MAX_DEPTH {
                return Err(CanonicalError::TooDeep(MAX_DEPTH));
            }
            Node::Array(
                items
                    .iter()
                    .map(|item| node_of_value(item, depth + 1))
                    .collect::<Result<_, _>>()?,
            )
        }
        Value::Object(map) => {
            if depth > MAX_DEPTH {
                return Err(CanonicalError::TooDeep(MAX_DEPTH));
            }
            let mut out = BTreeMap::new();
            for (key, item) in map {
                out.insert(key.clone(), node_of_value(item, depth + 1)?);
            }
            Node::Object(out)
        }
    })
}

fn write_node(node: &Node, out: &mut String) {
    match node {
        Node::Null => out.push_str("null"),
        Node::Bool(true) => out.push_str("true"),
        Node::Bool(false) => out.push_str("false"),
        Node::Integer(digits) => out.push_str(digits),
        Node::String(s) => write_string(s, out),
        Node::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_node(item, out);
            }
            out.push(']');
        }
        Node::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_node(item, out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn value_of_node(node: &Node) -> Result<serde_json::Value, CanonicalError> {
    use serde_json::Value;
    Ok(match node {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(*b),
        Node::Integer(digits) => {
            if let Ok(u) = digits.parse::<u64>() {
                Value::from(u)
            } else if let Ok(i) = digits.parse::<i64>() {
                Value::from(i)
            } else {
                return Err(CanonicalError::IntegerRange);
            }
        }
        Node::String(s) => Value::String(s.clone()),
        Node::Array(items) => {
            Value::Array(items.iter().map(value_of_node).collect::<Result<_, _>>()?)
        }
        Node::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, item) in map {
                out.insert(key.clone(), value_of_node(item)?);
            }
            Value::Object(out)
        }
    })
}
