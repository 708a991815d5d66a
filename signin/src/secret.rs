//! A token or code held in memory. Deliberately neither `Debug` nor `Display`, so it cannot
//! reach a log line, an error message or standard output by accident.

use base64::Engine as _;

/// A bearer token, refresh token, client secret, authorization code or PKCE verifier.
pub struct Secret(String);

impl Secret {
    /// Wraps token text (surrounding whitespace removed). `None` for an empty value or one
    /// holding characters an HTTP header cannot carry, refused here rather than mid-request.
    pub fn new(text: &str) -> Option<Secret> {
        let t = text.trim();
        (!t.is_empty() && t.len() <= 8192 && t.bytes().all(|b| b.is_ascii_graphic()))
            .then(|| Secret(t.to_string()))
    }

    /// `bytes` random bytes from the OS, base64url without padding (state, PKCE verifier).
    pub(crate) fn random(bytes: usize) -> Result<Secret, String> {
        let mut buf = vec![0u8; bytes];
        getrandom::fill(&mut buf).map_err(|e| format!("no OS randomness: {e}"))?;
        Ok(Secret(
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&buf),
        ))
    }

    /// The value, for a request header, a request body or the slot file only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Compares in time independent of where the values differ.
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
        Secret::new(&text).ok_or_else(|| serde::de::Error::custom("not a usable token value"))
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
        let s = Secret::new(" abc ").unwrap();
        assert_eq!(s.expose(), "abc");
        assert!(s.ct_eq("abc"));
        assert!(!s.ct_eq("abd"));
        assert!(!s.ct_eq("abcd"));
        let r = Secret::random(32).unwrap();
        assert_eq!(r.expose().len(), 43);
        assert_ne!(r.expose(), Secret::random(32).unwrap().expose());
    }

    #[test]
    fn a_bad_value_is_not_echoed() {
        let err = serde_json::from_str::<Secret>("\"secret value\"")
            .err()
            .unwrap()
            .to_string();
        assert!(!err.contains("secret value"), "{err}");
    }
}
