//! Form tokens. Each POST carries a token that binds it to what it does (the purpose), the
//! browser session that was shown the form, the proposal, and for approvals the approval row
//! and the card's digest. A token is HMAC-SHA256 under a key made at each start, so tokens
//! from an earlier run, another session, another proposal or another purpose do not verify —
//! in particular a card's approve token cannot confirm a disruptive change.
//!
//! HMAC is written out over `sha2` (RFC 2104) rather than pulling in another crate; a
//! known-answer test from RFC 4231 pins it.

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use super::sessions::hex;

/// What a form does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// The card's Approve button.
    Approve,
    /// The second step for a disruptive change.
    Confirm,
    /// Deny one proposal.
    Deny,
    /// Deny every pending proposal.
    DenyAll,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            Purpose::Approve => b"approve",
            Purpose::Confirm => b"confirm",
            Purpose::Deny => b"deny",
            Purpose::DenyAll => b"deny-all",
        }
    }
}

/// HMAC-SHA256 (RFC 2104) with a key no longer than the block size.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        let digest = Sha256::digest(key);
        for (b, k) in block.iter_mut().zip(digest.iter()) {
            *b = *k;
        }
    } else {
        for (b, k) in block.iter_mut().zip(key.iter()) {
            *b = *k;
        }
    }
    let ipad: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
    let opad: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
    let inner = Sha256::new()
        .chain_update(&ipad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(&opad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// The per-start token key. No `Debug`, no `Clone`.
pub struct TokenKey {
    key: [u8; 32],
}

impl TokenKey {
    /// A fresh random key.
    pub fn generate() -> std::io::Result<TokenKey> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(TokenKey { key })
    }

    fn mac(&self, purpose: Purpose, session: &str, proposal: u64, extra: &str) -> [u8; 32] {
        // Length-prefixed fields: no two different tuples encode to the same message.
        let mut message = Vec::new();
        for field in [
            purpose.label(),
            session.as_bytes(),
            proposal.to_string().as_bytes(),
            extra.as_bytes(),
        ] {
            message.extend_from_slice(&(field.len() as u64).to_be_bytes());
            message.extend_from_slice(field);
        }
        hmac_sha256(&self.key, &message)
    }

    /// A token for a form.
    pub fn make(&self, purpose: Purpose, session: &str, proposal: u64, extra: &str) -> String {
        hex(&self.mac(purpose, session, proposal, extra))
    }

    /// Whether `token` was made for exactly these values (constant-time compare).
    pub fn check(
        &self,
        token: &str,
        purpose: Purpose,
        session: &str,
        proposal: u64,
        extra: &str,
    ) -> bool {
        let want = self.make(purpose, session, proposal, extra);
        token.len() == want.len() && bool::from(token.as_bytes().ct_eq(want.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_known_answers_rfc4231() {
        // Test case 2.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block size is hashed first.
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn tokens_bind_every_field() {
        let key = TokenKey::generate().unwrap();
        let t = key.make(Purpose::Approve, "s1", 7, "a1");
        assert!(key.check(&t, Purpose::Approve, "s1", 7, "a1"));
        assert!(!key.check(&t, Purpose::Confirm, "s1", 7, "a1"));
        assert!(!key.check(&t, Purpose::Approve, "s2", 7, "a1"));
        assert!(!key.check(&t, Purpose::Approve, "s1", 8, "a1"));
        assert!(!key.check(&t, Purpose::Approve, "s1", 7, "a2"));
        assert!(!key.check("", Purpose::Approve, "s1", 7, "a1"));
        let other = TokenKey::generate().unwrap();
        assert!(!other.check(&t, Purpose::Approve, "s1", 7, "a1"));
    }
}
