//! The one wrapper for a secret held in memory: the sandbox and normal bearer tokens, refresh
//! tokens and OAuth codes, the model API key, the approval page secret.
//!
//! [`Secret`] deliberately implements neither `Debug` nor `Display` (a test below fails to
//! compile if either is added), so a secret cannot reach a log line, an audit row, an error
//! message or standard output through formatting. The value comes out only through
//! [`Secret::expose`], whose call sites are the few places a secret must go: a request header,
//! a request body, a slot file, the operator's terminal.

/// A secret text: non-empty, at most 8 KiB, visible ASCII only.
///
/// The character rule is what an HTTP header value can carry, enforced when the value is
/// made rather than discovered mid-request (where the failure might quote it).
pub struct Secret(String);

/// Longest secret accepted; real tokens and keys are a few hundred bytes.
pub const MAX_SECRET_BYTES: usize = 8192;

impl Secret {
    /// Wraps `text` with surrounding whitespace removed. `None` when nothing is left, it is
    /// longer than [`MAX_SECRET_BYTES`], or it holds a space, a control character or
    /// anything outside ASCII.
    pub fn new(text: &str) -> Option<Secret> {
        let t = text.trim();
        (!t.is_empty() && t.len() <= MAX_SECRET_BYTES && t.bytes().all(|b| b.is_ascii_graphic()))
            .then(|| Secret(t.to_owned()))
    }

    /// The value, for a header, a request body, a slot file or the operator's terminal only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Compares with `other` in time independent of where they differ. The length is not
    /// secret, so values of different lengths may return early.
    pub fn ct_eq(&self, other: &str) -> bool {
        use subtle::ConstantTimeEq as _;
        bool::from(self.0.as_bytes().ct_eq(other.as_bytes()))
    }
}

impl Clone for Secret {
    fn clone(&self) -> Secret {
        Secret(self.0.clone())
    }
}

impl serde::Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Secret, D::Error> {
        let text = String::deserialize(d)?;
        // The message must not echo the value.
        Secret::new(&text).ok_or_else(|| {
            serde::de::Error::custom("an unusable value (empty, too long, or not visible ASCII)")
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn values_and_comparison() {
        assert!(Secret::new("  ").is_none());
        assert!(Secret::new("a b").is_none());
        assert!(Secret::new("tok\u{7f}").is_none());
        assert!(Secret::new("bad\nkey").is_none());
        assert!(Secret::new("clé").is_none());
        assert!(Secret::new(&"x".repeat(MAX_SECRET_BYTES + 1)).is_none());
        assert!(Secret::new(&"x".repeat(MAX_SECRET_BYTES)).is_some());
        let s = Secret::new(" abc\n").unwrap();
        assert_eq!(s.expose(), "abc");
        assert!(s.ct_eq("abc"));
        assert!(!s.ct_eq("abd"));
        assert!(!s.ct_eq("abcd"));
        assert!(!s.ct_eq(""));
    }

    #[test]
    fn a_bad_value_is_not_echoed() {
        let err = serde_json::from_str::<Secret>("\"secret value\"")
            .err()
            .unwrap()
            .to_string();
        assert!(!err.contains("secret value"), "{err}");
        let s: Secret = serde_json::from_str("\"tok-1\"").unwrap();
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"tok-1\"");
    }

    // Compile-time proof that `Secret` has neither `Debug` nor `Display`: with either impl
    // the two blanket impls below both apply, the `_` cannot be inferred, and this module no
    // longer compiles.
    trait AmbiguousIfDebug<A> {
        fn check() {}
    }
    impl<T: ?Sized> AmbiguousIfDebug<()> for T {}
    impl<T: ?Sized + std::fmt::Debug> AmbiguousIfDebug<u8> for T {}
    trait AmbiguousIfDisplay<A> {
        fn check() {}
    }
    impl<T: ?Sized> AmbiguousIfDisplay<()> for T {}
    impl<T: ?Sized + std::fmt::Display> AmbiguousIfDisplay<u8> for T {}

    #[test]
    fn secret_has_no_debug_and_no_display() {
        <Secret as AmbiguousIfDebug<_>>::check();
        <Secret as AmbiguousIfDisplay<_>>::check();
    }
}
