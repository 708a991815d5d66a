//! Canonical JSON: one byte string per JSON object, used for hashing, signing and sending.
//!
//! Rules: an object at the top; keys sorted by their UTF-8 bytes at every level; no
//! insignificant whitespace; strings written with the minimal escapes (`"`, `\`, and control
//! characters below U+0020 as `\u00XX`, except `\b \f \n \r \t`), every other character raw
//! UTF-8; integers of any size kept digit for digit (`-0` becomes `0`); fractions, exponents,
//! NaN and Infinity refused; duplicate keys (after unescaping) refused.

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
        todo!()
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
    let _ = text;
    todo!()
}

/// Canonicalises a `serde_json` value (fails on floats and on a non-object top level).
pub fn from_value(value: &serde_json::Value) -> Result<Canonical, CanonicalError> {
    let _ = value;
    todo!()
}
