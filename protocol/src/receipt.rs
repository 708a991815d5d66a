//! A receipt for one change (DESIGN §11): the exact signed approval, the public approver lines
//! that verified it, the executor's signed statement of the outcome and the audit rows of the
//! approval. The executor writes one (`fleetwatch-executor receipt`); a verifier that links
//! neither process (`fleetwatch-confirm verify`) checks it from public inputs alone.
//!
//! The statement is canonical JSON ([`crate::canonical`]) signed with the executor's receipt
//! key (Ed25519, used for nothing else) over [`STATEMENT_DOMAIN`] followed by the statement's
//! bytes exactly as the receipt carries them. Byte fields are standard base64, hashes hex.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The receipt format this build writes and reads.
pub const RECEIPT_FORMAT: u32 = 1;

/// Domain-separation prefix signed before the statement's bytes.
pub const STATEMENT_DOMAIN: &[u8] = b"fleetwatch receipt statement v1\0";

/// What the executor says came of an approval, signed with its receipt key after the outcome's
/// audit row is written (in the same transaction).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statement {
    /// SHA-256 of the claims bytes, hex.
    pub claims_sha256: String,
    /// `done`, `failed` or `unknown`.
    pub outcome: String,
    /// For `failed`: each device's error code, as Epiphan gave it.
    pub codes: BTreeMap<String, String>,
    /// When the outcome was stored (Unix seconds).
    pub time: i64,
    /// The outcome's audit row.
    pub audit_row: i64,
    /// That row's chain hash, hex.
    pub chain_hash: String,
    /// How many distinct persons the executor required for this change.
    pub quorum: u32,
    /// The passkey RP ID the executor checked the assertions against.
    pub rp_id: String,
    /// The origins it accepted the assertions from.
    pub origins: Vec<String>,
}

impl Statement {
    /// The statement's canonical JSON, the bytes that are signed.
    pub fn to_text(&self) -> String {
        let value = serde_json::to_value(self).unwrap_or_default();
        crate::canonical::from_value(&value)
            .map(crate::canonical::Canonical::into_string)
            .unwrap_or_default()
    }

    /// The bytes a receipt key signs for the statement `text`.
    pub fn signed_message(text: &str) -> Vec<u8> {
        [STATEMENT_DOMAIN, text.as_bytes()].concat()
    }
}

/// Whether `signature` is the receipt key `public`'s (32 bytes) strict signature over the
/// statement `text`.
pub fn statement_signed_by(public: &[u8], text: &str, signature: &[u8]) -> bool {
    <[u8; 32]>::try_from(public)
        .ok()
        .and_then(|bytes| ed25519_dalek::VerifyingKey::from_bytes(&bytes).ok())
        .is_some_and(|key| {
            crate::claims::verify_strict_raw(&key, &Statement::signed_message(text), signature)
        })
}

/// SHA-256 of claims bytes, hex, as a statement names them.
pub fn claims_sha256(claims: &[u8]) -> String {
    use sha2::Digest as _;
    crate::hex::encode(&sha2::Sha256::digest(claims))
}

/// One signature of the assistant over the claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeySignature {
    /// The key ID, hex.
    pub key_id: String,
    /// The signature, base64.
    pub signature: String,
}

/// One passkey assertion, each field exactly as the browser returned it, base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assertion {
    /// `rawId`.
    pub credential_id: String,
    /// `response.authenticatorData`.
    pub authenticator_data: String,
    /// `response.clientDataJSON`.
    pub client_data_json: String,
    /// `response.signature`.
    pub signature: String,
}

/// One audit row of the approval as stored: its hashed fields in the table's order, and the
/// hashes that chain it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    /// Row number.
    pub seq: i64,
    /// Unix seconds.
    pub time: i64,
    /// kind, reason, approval ID, tool, targets, assistant head, detail.
    pub fields: Vec<String>,
    /// The previous row's hash, hex.
    pub prev_hash: String,
    /// This row's hash, hex.
    pub row_hash: String,
}

/// The whole receipt, as one JSON file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// [`RECEIPT_FORMAT`].
    pub format: u32,
    /// The claims bytes exactly as signed, base64.
    pub claims: String,
    /// The assistant's signatures over them.
    pub signatures: Vec<KeySignature>,
    /// The persons' passkey assertions over them.
    pub passkeys: Vec<Assertion>,
    /// The approver lines (assistant key and passkeys) that verified them, as the approver file
    /// held them.
    pub approvers: Vec<String>,
    /// The statement's canonical JSON, exactly as signed.
    pub statement: String,
    /// The receipt key's signature over it, base64.
    pub statement_signature: String,
    /// The receipt key's public half, base64 (for reading; a verifier uses the one it trusts).
    pub receipt_key: String,
    /// The audit rows naming this approval, oldest first.
    pub audit: Vec<Row>,
    /// The chain's last row when the receipt was written: `[row, hash hex]`.
    pub chain_head: (i64, String),
}

/// Standard base64.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Standard base64 back to bytes.
pub fn unb64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}
