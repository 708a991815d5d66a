//! Random secrets for the sign-in flow. The wrapper itself is the protocol's one
//! [`Secret`] (no `Debug`, no `Display`), re-exported by this crate.

use base64::Engine as _;
use fleetwatch_protocol::secret::Secret;

/// `bytes` random bytes from the OS, base64url without padding (state, PKCE verifier).
pub(crate) fn random(bytes: usize) -> Result<Secret, String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| format!("no OS randomness: {e}"))?;
    Secret::new(&base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&buf))
        .ok_or_else(|| "no random value".to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn random_values_are_long_and_differ() {
        let r = random(32).unwrap();
        assert_eq!(r.expose().len(), 43);
        assert_ne!(r.expose(), random(32).unwrap().expose());
    }
}
