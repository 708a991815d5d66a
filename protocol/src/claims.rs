//! The approval claims, their Ed25519 signature and the approver key file.
//!
//! The signature covers [`SIGNING_DOMAIN`] followed by the exact postcard bytes of the claims.
//! A verifier checks those bytes with `verify_strict` **before** decoding anything from them
//! and never re-encodes them; decoding refuses trailing bytes. Beside the assistant's
//! signatures a [`SignedApproval`] carries zero or more operator passkey assertions over the
//! same bytes ([`crate::passkey`]), which the executor verifies separately.
//!
//! # Approver key file
//!
//! One public key per line, as `key_line` (the `assistant` feature) writes it:
//!
//! ```text
//! # approvers for this executor
//! ed25519 11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo= assistant on ops-01
//! ```
//!
//! The first field is the algorithm (only `ed25519`), the second the 32-byte public key in
//! standard base64 with padding, and anything after it a free comment. Blank lines and lines
//! starting with `#` are skipped. [`TrustedKeys::parse`] refuses, naming the line: another
//! algorithm, bad base64, a key that is not 32 bytes or not a curve point, a weak
//! (small-order) key, and the same key twice; a file with no key at all is refused too.

use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::passkey::PasskeyAssertion;

// Signing claims and writing key lines, which only the assistant (and the demo and tests) do:
// behind the `assistant` feature, which the executor does not enable, so it does not link them.
#[cfg(feature = "assistant")]
mod sign;
#[cfg(feature = "assistant")]
pub use sign::{key_line, sign};

/// The only claims version this build speaks. It is the first field of the encoding, so an
/// unknown version is recognised before the rest is decoded. Version 2 added [`SignedName`]s:
/// every name the confirm page shows is signed, and the executor compares each with its live
/// read. Version 3 added [`ApprovalClaims::asked_by`].
pub const CLAIMS_VERSION: u16 = 3;

/// Whether `name` is a user name as the claims may carry one: empty (nobody known), or 1 to 32
/// of `A-Z`, `a-z`, `0-9`, `_`, `.`, `-`, not starting with `-` (what a Unix account is named).
pub fn is_user_name(name: &str) -> bool {
    name.is_empty()
        || (name.len() <= 32
            && !name.starts_with('-')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')))
}

/// Domain-separation prefix signed before the claims bytes.
pub const SIGNING_DOMAIN: &[u8] = b"fleetwatch approval claims v1\0";

/// Longest lifetime an approval may have: five minutes.
pub const MAX_LIFETIME_SECS: i64 = 300;

/// Clock skew tolerated between the two processes.
pub const CLOCK_SKEW_SECS: i64 = 60;
/// The longest canonical arguments an approval may carry (the page shows no longer ones).
pub const MAX_ARGUMENTS_BYTES: usize = 4000;
/// The longest state fingerprint an approval may carry (a few hundred bytes per target).
pub const MAX_FINGERPRINT_BYTES: usize = 16 * 1024;
/// The longest name an approval may carry, in bytes (a name Epiphan reports is far shorter).
pub const MAX_NAME_BYTES: usize = 1024;
/// The most names an approval may carry: each target, its channels, a stream and an event.
pub const MAX_NAMES: usize = 256;

/// What a [`SignedName`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum NameKind {
    /// A target device; the ID is its master ID.
    Device,
    /// A channel the arguments name; the ID is `<device>-<number>`.
    Channel,
    /// The stream destination the arguments name; the ID is its ID.
    Stream,
    /// The event the arguments name; the ID is the event's ID.
    Event,
}

/// One name as the executor read it when it described the change: what a person is shown
/// beside an ID, signed so that a name the assistant changed or invented is refused at
/// Execute (the executor reads it again and compares).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SignedName {
    /// What it names.
    pub kind: NameKind,
    /// The ID it names.
    pub id: String,
    /// The name, exactly as read (never redacted: the executor compares it byte for byte).
    pub name: String,
}

/// Which sign-in an approval is for. Only the sandbox slot can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Slot {
    /// The executor's sandbox sign-in.
    Sandbox,
}

/// What a person approved, exactly. Built by the assistant from the stored proposal and the
/// values the card showed; checked field by field by the executor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalClaims {
    /// Always [`CLAIMS_VERSION`]; first so it decodes first.
    pub version: u16,
    /// Random 128-bit approval nonce; single use.
    pub approval_id: [u8; 16],
    /// The proposal this approval is for.
    pub proposal_id: u64,
    /// The write tool.
    pub tool: String,
    /// The canonical JSON arguments (see [`crate::canonical`]).
    pub arguments: String,
    /// Device IDs the arguments resolve to, sorted, no duplicates.
    pub targets: Vec<String>,
    /// Every name the confirm page shows, sorted by kind and ID: each target's, and the
    /// channel, stream destination or event the arguments name.
    pub names: Vec<SignedName>,
    /// Canonical JSON of the targets' fingerprint (see [`crate::fleet::Fingerprint`]).
    pub fingerprint: String,
    /// The tool's argument schema version.
    pub schema_version: u32,
    /// SHA-256 of the tool's canonical policy entry.
    pub policy_digest: [u8; 32],
    /// The sign-in slot the write uses.
    pub slot: Slot,
    /// Unix seconds when the person approved (database clock).
    pub approved_at: i64,
    /// Unix seconds after which the approval is void (strict).
    pub expires_at: i64,
    /// Tag of the page session that approved (a hash of the session ID, never the ID).
    pub page_session: [u8; 16],
    /// The operator who asked for the change: the user name the assistant read from the chat
    /// socket's peer credentials, empty when nobody is known ([`is_user_name`]). What the
    /// assistant reported, signed; nothing the executor can check.
    pub asked_by: String,
}

/// Why claims bytes did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimsError {
    /// The version field is not [`CLAIMS_VERSION`].
    #[error("unknown claims version")]
    UnknownVersion,
    /// The bytes are not valid claims.
    #[error("claims do not decode")]
    Malformed,
    /// Bytes remain after the claims.
    #[error("trailing bytes after the claims")]
    TrailingBytes,
}

impl ApprovalClaims {
    /// Encodes the claims (postcard).
    pub fn encode(&self) -> Result<Vec<u8>, ClaimsError> {
        postcard::to_stdvec(self).map_err(|_| ClaimsError::Malformed)
    }

    /// Decodes verified claims bytes: the version first, then the rest, every byte consumed.
    pub fn decode(bytes: &[u8]) -> Result<ApprovalClaims, ClaimsError> {
        // The version alone first: a later version may lay out the rest differently, so
        // nothing past it is interpreted until it is known.
        let (version, _) =
            postcard::take_from_bytes::<u16>(bytes).map_err(|_| ClaimsError::Malformed)?;
        if version != CLAIMS_VERSION {
            return Err(ClaimsError::UnknownVersion);
        }
        let (claims, rest) = postcard::take_from_bytes::<ApprovalClaims>(bytes)
            .map_err(|_| ClaimsError::Malformed)?;
        if !rest.is_empty() {
            return Err(ClaimsError::TrailingBytes);
        }
        Ok(claims)
    }
}

/// First 8 bytes of SHA-256 of a raw 32-byte public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct KeyId(pub [u8; 8]);

impl KeyId {
    /// The key ID of a public key.
    pub fn of(key: &ed25519_dalek::VerifyingKey) -> KeyId {
        KeyId::of_bytes(key.as_bytes())
    }
    /// The key ID of a raw 32-byte Ed25519 public key (as an Ed25519 passkey's SPKI ends).
    pub fn of_bytes(key: &[u8; 32]) -> KeyId {
        let digest = Sha256::digest(key);
        let mut id = [0u8; 8];
        for (out, byte) in id.iter_mut().zip(digest.iter()) {
            *out = *byte;
        }
        KeyId(id)
    }
    /// Lower-case hex.
    pub fn to_hex(&self) -> String {
        crate::hex::encode(&self.0)
    }
}

/// One signature over the claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalSignature {
    /// Which key signed.
    pub key_id: KeyId,
    /// The 64-byte Ed25519 signature (a `Vec` so serde can carry it; length checked).
    pub signature: Vec<u8>,
}

/// The claims bytes exactly as signed, plus their signatures: the assistant's Ed25519
/// signatures and the operators' passkey assertions, all over the same bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedApproval {
    /// Postcard encoding of [`ApprovalClaims`], never re-encoded after signing.
    pub claims: Vec<u8>,
    /// At least one signature from an installed approver key.
    pub signatures: Vec<ApprovalSignature>,
    /// The operators' passkey assertions, whose challenge is
    /// [`crate::passkey::challenge`] of `claims`; empty when no passkey is enrolled.
    pub passkeys: Vec<PasskeyAssertion>,
}

/// Why a signed approval did not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The signature list is empty.
    #[error("no signature")]
    NoSignature,
    /// No signature names an installed key.
    #[error("no signature from an installed key")]
    UnknownKey,
    /// A signature from an installed key failed `verify_strict` (or has the wrong length).
    #[error("signature does not verify")]
    BadSignature,
}

/// The bytes a signature covers: the domain prefix, then the claims bytes untouched.
pub(crate) fn signed_message(claims_bytes: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(SIGNING_DOMAIN.len() + claims_bytes.len());
    message.extend_from_slice(SIGNING_DOMAIN);
    message.extend_from_slice(claims_bytes);
    message
}

/// The one signature check: a 64-byte signature verified with `verify_strict`, which refuses
/// a non-canonical `S`, a small-order `R` and a small-order (weak) public key. Takes the raw
/// message, so known-answer vectors can drive exactly the check [`TrustedKeys::verify`] runs.
pub fn verify_strict_raw(key: &VerifyingKey, message: &[u8], signature: &[u8]) -> bool {
    let Ok(bytes) = <[u8; 64]>::try_from(signature) else {
        return false;
    };
    !key.is_weak()
        && key
            .verify_strict(message, &Signature::from_bytes(&bytes))
            .is_ok()
}

/// The approver public keys an administrator installed.
#[derive(Debug, Clone, Default)]
pub struct TrustedKeys {
    keys: Vec<(KeyId, ed25519_dalek::VerifyingKey)>,
}

/// Why a key file was refused. Names the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyFileError {
    /// A line is not `ed25519 <base64 of 32 bytes> [comment]`.
    #[error("line {line}: {reason}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The file holds no key.
    #[error("no approver key in the file")]
    Empty,
}

impl TrustedKeys {
    /// Parses a key file: one key per line, `ed25519 <base64> [comment]`; blank lines and lines
    /// starting with `#` are ignored; anything else is refused. Weak (small-order) keys and
    /// duplicates are refused.
    pub fn parse(text: &str) -> Result<TrustedKeys, KeyFileError> {
        let mut keys: Vec<(KeyId, VerifyingKey)> = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let refuse = |reason| KeyFileError::Line { line, reason };
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let mut fields = trimmed.split_whitespace();
            match fields.next() {
                Some("ed25519") => {}
                _ => return Err(refuse("unknown key algorithm (expected `ed25519`)")),
            }
            let encoded = fields
                .next()
                .ok_or_else(|| refuse("missing the base64 public key"))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|_| refuse("the public key is not valid standard base64"))?;
            let bytes = <[u8; 32]>::try_from(bytes.as_slice())
                .map_err(|_| refuse("the public key is not 32 bytes"))?;
            let key = VerifyingKey::from_bytes(&bytes)
                .map_err(|_| refuse("the public key is not a valid Ed25519 point"))?;
            if key.is_weak() {
                return Err(refuse("the public key is a weak (small-order) point"));
            }
            let id = KeyId::of(&key);
            // Equal key IDs from different keys would make a signature's key ambiguous.
            if keys.iter().any(|(known, _)| *known == id) {
                return Err(refuse("the same key is listed twice"));
            }
            keys.push((id, key));
        }
        if keys.is_empty() {
            return Err(KeyFileError::Empty);
        }
        Ok(TrustedKeys { keys })
    }

    /// The installed key IDs, in file order.
    pub fn key_ids(&self) -> Vec<KeyId> {
        self.keys.iter().map(|(id, _)| *id).collect()
    }

    /// The installed key with this ID as a key line without its comment, `ed25519 <base64>`.
    pub fn line(&self, id: &KeyId) -> Option<String> {
        self.keys
            .iter()
            .find(|(known, _)| known == id)
            .map(|(_, key)| {
                format!(
                    "ed25519 {}",
                    base64::engine::general_purpose::STANDARD.encode(key.as_bytes())
                )
            })
    }

    /// Verifies the signatures over the raw claims bytes. Every signature naming an installed
    /// key must verify strictly and at least one must; signatures from other keys are ignored.
    /// Returns the verified claims bytes, still undecoded.
    pub fn verify<'a>(&self, signed: &'a SignedApproval) -> Result<&'a [u8], SignatureError> {
        if signed.signatures.is_empty() {
            return Err(SignatureError::NoSignature);
        }
        let message = signed_message(&signed.claims);
        let mut verified = false;
        for entry in &signed.signatures {
            // A malformed entry is refused even from an unknown key: nothing well-formed
            // produces one.
            if entry.signature.len() != 64 {
                return Err(SignatureError::BadSignature);
            }
            let Some((_, key)) = self.keys.iter().find(|(id, _)| *id == entry.key_id) else {
                continue;
            };
            if !verify_strict_raw(key, &message, &entry.signature) {
                return Err(SignatureError::BadSignature);
            }
            verified = true;
        }
        if verified {
            Ok(&signed.claims)
        } else {
            Err(SignatureError::UnknownKey)
        }
    }
}
