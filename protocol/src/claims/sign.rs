//! Signing claims with the assistant's key and writing approver key lines: what the assistant
//! does and the executor never does (the `assistant` feature).

use base64::Engine as _;
use ed25519_dalek::{Signer as _, VerifyingKey};

use super::{ApprovalSignature, KeyId, SignedApproval, TrustedKeys, signed_message};
use crate::passkey::PasskeyAssertion;

/// Signs encoded claims bytes with the assistant's key. The approval carries no passkey
/// assertion yet; the page adds those it collected ([`SignedApproval::with_passkeys`]).
pub fn sign(claims_bytes: Vec<u8>, key: &ed25519_dalek::SigningKey) -> SignedApproval {
    let signature = key.sign(&signed_message(&claims_bytes));
    SignedApproval {
        claims: claims_bytes,
        signatures: vec![ApprovalSignature {
            key_id: KeyId::of(&key.verifying_key()),
            signature: signature.to_bytes().to_vec(),
        }],
        passkeys: Vec::new(),
    }
}

impl SignedApproval {
    /// The same approval with these passkey assertions beside the signatures. The claims
    /// bytes are untouched, so the assertions' challenge still matches them.
    pub fn with_passkeys(mut self, passkeys: Vec<PasskeyAssertion>) -> SignedApproval {
        self.passkeys = passkeys;
        self
    }
}

impl TrustedKeys {
    /// A set holding the given keys (tests and the demo).
    pub fn from_keys(keys: impl IntoIterator<Item = ed25519_dalek::VerifyingKey>) -> TrustedKeys {
        let mut out: Vec<(KeyId, VerifyingKey)> = Vec::new();
        for key in keys {
            let id = KeyId::of(&key);
            if !out.iter().any(|(known, _)| *known == id) {
                out.push((id, key));
            }
        }
        TrustedKeys { keys: out }
    }
}

/// The line to install in the executor's approver key file for a public key.
pub fn key_line(key: &ed25519_dalek::VerifyingKey, comment: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(key.as_bytes());
    // A comment is one line of free text; line breaks would start a new (malformed) entry.
    let comment = comment.split_whitespace().collect::<Vec<_>>().join(" ");
    if comment.is_empty() {
        format!("ed25519 {encoded}")
    } else {
        format!("ed25519 {encoded} {comment}")
    }
}
