//! A receipt for one change (DESIGN §11): the exact signed approval, the public approver lines
//! that verified it, the executor's signed statement of the outcome and the audit rows of the
//! approval. The executor writes one (`fleetwatch-executor receipt`); a verifier that links
//! neither process (`fleetwatch-confirm verify`) checks it from public inputs alone.
//!
//! The statement is canonical JSON ([`crate::canonical`]) signed with the executor's receipt
//! key (Ed25519, used for nothing else) over [`STATEMENT_DOMAIN`] followed by the statement's
//! bytes exactly as the receipt carries them. Byte fields are standard base64, hashes hex.
//!
//! The statement binds every part of the evidence the receipt carries, not only the claims:
//! the hash of the assistant's signatures, of the passkey assertions and of the approver lines
//! (each list in the receipt's order, which the executor makes canonical), and each audit row
//! by its number and chain hash. Removing, adding, reordering or rewriting any of them changes
//! what the signed statement names, so no part of a receipt can be edited and still verify.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::claims::SignedApproval;

/// The receipt format this build writes and reads.
/// Format 1 (before statements bound all of their evidence) is refused: an assertion could be
/// dropped from one and it still verified.
pub const RECEIPT_FORMAT: u32 = 2;

/// Domain-separation prefix signed before the statement's bytes.
pub const STATEMENT_DOMAIN: &[u8] = b"fleetwatch receipt statement v2\0";

/// What the executor says came of an approval, signed with its receipt key after the outcome's
/// audit row is written (in the same transaction).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    /// SHA-256 of the claims bytes, hex.
    pub claims_sha256: String,
    /// [`signatures_sha256`] of the assistant's signatures the receipt carries.
    pub signatures_sha256: String,
    /// [`passkeys_sha256`] of the passkey assertions the receipt carries.
    pub passkeys_sha256: String,
    /// [`approvers_sha256`] of the approver lines the executor verified them with.
    pub approvers_sha256: String,
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
    /// Every audit row of the approval up to the outcome's, oldest first: `[row, chain hash
    /// hex]`, exactly the rows the receipt carries.
    pub audit: Vec<(i64, String)>,
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

/// SHA-256 of `{"<part>": [items…]}` as canonical JSON, hex: how a statement names a part of
/// the evidence (canonical JSON has an object at its top).
fn list_sha256<T: Serialize>(part: &str, items: &[T]) -> String {
    use sha2::Digest as _;
    let mut object = serde_json::Map::new();
    object.insert(
        part.to_owned(),
        serde_json::to_value(items).unwrap_or_default(),
    );
    let value = serde_json::Value::Object(object);
    // The lists hold strings only, so canonical JSON always forms; the plain form is the
    // fallback that still differs for every list.
    let text = crate::canonical::from_value(&value)
        .map(crate::canonical::Canonical::into_string)
        .unwrap_or_else(|_| value.to_string());
    crate::hex::encode(&sha2::Sha256::digest(text.as_bytes()))
}

/// The hash a statement names for the assistant's signatures, in the receipt's order.
pub fn signatures_sha256(signatures: &[KeySignature]) -> String {
    list_sha256("signatures", signatures)
}

/// The hash a statement names for the passkey assertions, in the receipt's order.
pub fn passkeys_sha256(assertions: &[Assertion]) -> String {
    list_sha256("passkeys", assertions)
}

/// The hash a statement names for the approver lines, in the receipt's order.
pub fn approvers_sha256(lines: &[String]) -> String {
    list_sha256("approvers", lines)
}

/// The evidence parts of a signed approval as a receipt carries them, in canonical order:
/// signatures by key ID, assertions by credential ID (then by their other fields), so the
/// executor states and the receipt shows one order whatever order the request came in.
pub fn evidence(approval: &SignedApproval) -> (Vec<KeySignature>, Vec<Assertion>) {
    let mut signatures: Vec<KeySignature> = approval
        .signatures
        .iter()
        .map(|s| KeySignature {
            key_id: s.key_id.to_hex(),
            signature: b64(&s.signature),
        })
        .collect();
    signatures.sort_by(|a, b| (&a.key_id, &a.signature).cmp(&(&b.key_id, &b.signature)));
    let mut order: Vec<&crate::passkey::PasskeyAssertion> = approval.passkeys.iter().collect();
    order.sort_by(|a, b| {
        (
            &a.credential_id,
            &a.authenticator_data,
            &a.client_data_json,
            &a.signature,
        )
            .cmp(&(
                &b.credential_id,
                &b.authenticator_data,
                &b.client_data_json,
                &b.signature,
            ))
    });
    let assertions = order
        .into_iter()
        .map(|a| Assertion {
            credential_id: b64(&a.credential_id),
            authenticator_data: b64(&a.authenticator_data),
            client_data_json: b64(&a.client_data_json),
            signature: b64(&a.signature),
        })
        .collect();
    (signatures, assertions)
}

/// An approver file's line as a receipt names it: an assistant key as `ed25519 <base64>`
/// (without its comment), a person's passkey as its `approver …` line re-written by the
/// record parser. `None` for a line that is neither.
pub fn approver_line(line: &str) -> Option<String> {
    if let Ok(record) = crate::passkey::PasskeyRecord::parse_line(line) {
        return Some(record.to_line());
    }
    let keys = crate::claims::TrustedKeys::parse(line).ok()?;
    keys.key_ids().first().and_then(|id| keys.line(id))
}

/// One signature of the assistant over the claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySignature {
    /// The key ID, hex.
    pub key_id: String,
    /// The signature, base64.
    pub signature: String,
}

/// One passkey assertion, each field exactly as the browser returned it, base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
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

/// The whole receipt, as one JSON file. Every field is bound by the signed statement (the
/// receipt key's public half is compared with the key a verifier trusts), and a field this
/// format does not know is refused rather than ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    /// [`RECEIPT_FORMAT`].
    pub format: u32,
    /// The claims bytes exactly as signed, base64.
    pub claims: String,
    /// The assistant's signatures over them.
    pub signatures: Vec<KeySignature>,
    /// The persons' passkey assertions over them.
    pub passkeys: Vec<Assertion>,
    /// The approver lines (assistant key and passkeys) that verified them when the executor
    /// accepted the approval, as [`approver_line`] writes them, sorted.
    pub approvers: Vec<String>,
    /// The statement's canonical JSON, exactly as signed.
    pub statement: String,
    /// The receipt key's signature over it, base64.
    pub statement_signature: String,
    /// The receipt key's public half, base64 (for reading; a verifier uses the one it trusts).
    pub receipt_key: String,
    /// The audit rows naming this approval up to the outcome's, oldest first. (A chain head
    /// read when the receipt is written would be signed by nobody; the outcome row's chain
    /// hash, in the statement, is the receipt's place in the chain.)
    pub audit: Vec<Row>,
}

/// Standard base64.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Standard base64 back to bytes.
pub fn unb64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn each_part_hash_changes_with_any_removal_reorder_or_edit() {
        let lines = vec!["a".to_owned(), "b".to_owned()];
        let base = approvers_sha256(&lines);
        for other in [
            vec!["a".to_owned()],
            vec!["b".to_owned(), "a".to_owned()],
            vec!["a".to_owned(), "c".to_owned()],
            Vec::new(),
        ] {
            assert_ne!(approvers_sha256(&other), base, "{other:?}");
        }
        // One list's hash is not another part's.
        assert_ne!(approvers_sha256(&[]), signatures_sha256(&[]));
    }
}
