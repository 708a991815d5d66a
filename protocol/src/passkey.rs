//! The operator's passkey (WebAuthn) on an approval: the enrolled record, the challenge, the
//! assertion carried on the wire, and the verifier the executor runs before it decodes the
//! claims (DESIGN §9).
//!
//! # Approver record
//!
//! After enrolment `fleetwatch-confirm enrol` prints one public line, which an administrator
//! installs in the executor's approver file:
//!
//! ```text
//! # persons whose passkeys approve changes on this executor
//! approver ana es256 <credential ID> <public key> device-bound Ana Gómez
//! approver night-desk ed25519 <credential ID> <public key> synced Night shift desk
//! ```
//!
//! The fields are the word `approver`, the person's ID (one person may have several passkeys),
//! the algorithm (`es256` or `ed25519`), the credential ID in base64url without padding (as
//! WebAuthn writes it), the credential's public key as the SubjectPublicKeyInfo that the
//! browser's `response.getPublicKey()` returns, in standard base64 with padding, whether the
//! authenticator said at enrolment that the passkey may be synced, and the person's name (the
//! rest of the line). Lines from before persons (`passkey <alg> …`, no person, no backup
//! field) are refused with a sentence that says to enrol again: each counted as a person of its
//! own, so one human with such a line and an `approver` line could meet a quorum of two. The SPKI is read by
//! hand against the only two shapes allowed — an uncompressed P-256 point under
//! `id-ecPublicKey`/`prime256v1`, or an Ed25519 key — so no ASN.1 parser sees untrusted bytes.
//! [`Fingerprint`] is the first ten bytes of SHA-256 of the SPKI, which the operator's page and
//! the administrator's `approvers add` both show, to be compared before the line is trusted.
//!
//! # Verification
//!
//! [`verify_approval`] checks every assertion an approval carries against the claims bytes
//! exactly as received, before anything is decoded from them: the credential is enrolled; the
//! client data is a JSON object whose `type` is `webauthn.get`, whose `challenge` is
//! [`challenge`] of those bytes, whose `origin` the executor's configuration lists, and which is
//! not cross-origin; the authenticator data carries SHA-256 of the RP ID and the user-present
//! and user-verified flags; the signature over `authenticatorData ‖ SHA-256(clientDataJSON)`
//! verifies (ES256: DER, either form of `S`; Ed25519: `verify_strict`). Each failure is its own
//! [`PasskeyError`] and its own [`Refusal`]. The signature counter rule ([`check_counter`]) and
//! the quorum ([`VerifiedPasskeys::require`]) are the executor's to apply: the counter must be
//! compared and stored in the same transaction as the nonce.

use std::fmt;

use base64::Engine as _;
use p256::ecdsa::signature::Verifier as _;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use sha2::{Digest as _, Sha256};

use crate::claims::{SIGNING_DOMAIN, SignedApproval};
use crate::refusal::Refusal;

/// Domain-separation prefix of the passkey challenge. Distinct from [`SIGNING_DOMAIN`], so an
/// assistant signature and a passkey assertion can never stand in for each other.
pub const PASSKEY_DOMAIN: &[u8] = b"fleetwatch passkey challenge v1\0";

// A compile-time guard: the two prefixes must differ, or one signer's message could be replayed
// as the other's.
const _: () = assert!(!equal_bytes(PASSKEY_DOMAIN, SIGNING_DOMAIN));

const fn equal_bytes(mut a: &[u8], mut b: &[u8]) -> bool {
    while let ([x, rest_a @ ..], [y, rest_b @ ..]) = (a, b) {
        if *x != *y {
            return false;
        }
        a = rest_a;
        b = rest_b;
    }
    a.is_empty() && b.is_empty()
}

/// The RP ID the approval page runs under in production (`http://localhost:<port>/`); a
/// passkey cannot be bound to an IP address.
pub const PRODUCTION_RP_ID: &str = "localhost";

/// Most passkey assertions one approval may carry. A quorum is a handful of people; the cap
/// bounds the curve operations one frame can ask for.
pub const MAX_ASSERTIONS: usize = 8;

/// Longest credential ID WebAuthn allows, in bytes.
pub const MAX_CREDENTIAL_ID: usize = 1023;

/// Longest authenticator data accepted, in bytes (37 fixed bytes plus room for extensions).
pub const MAX_AUTHENTICATOR_DATA: usize = 1024;

/// Longest client data JSON accepted, in bytes (browsers send a few hundred).
pub const MAX_CLIENT_DATA_JSON: usize = 4096;

/// Longest signature accepted, in bytes: a DER ECDSA P-256 signature is at most 72.
pub const MAX_SIGNATURE: usize = 72;

/// Longest operator name, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// Bytes of SHA-256 of the SPKI shown as the fingerprint.
pub const FINGERPRINT_BYTES: usize = 10;

/// Authenticator data flag: the user was present (touched or confirmed).
const FLAG_UP: u8 = 0x01;
/// Authenticator data flag: the user was verified (PIN, biometrics).
const FLAG_UV: u8 = 0x04;
/// Authenticator data flag: the credential is backup eligible (may be synced).
const FLAG_BE: u8 = 0x08;
/// Backup state: the credential is backed up now. Never set without [`FLAG_BE`].
const FLAG_BS: u8 = 0x10;
/// RP ID hash (32) + flags (1) + signature counter (4).
const AUTHENTICATOR_DATA_MIN: usize = 37;

/// DER of `SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) }`
/// up to and including the uncompressed-point marker `04`; 64 bytes of X ‖ Y follow.
const P256_SPKI_PREFIX: [u8; 27] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
];
/// DER of `SEQUENCE { SEQUENCE { id-Ed25519 }, BIT STRING (0 unused bits) }` up to the 32 key
/// bytes.
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];
const P256_SPKI_LEN: usize = P256_SPKI_PREFIX.len() + 64;
const ED25519_SPKI_LEN: usize = ED25519_SPKI_PREFIX.len() + 32;

/// The challenge a passkey signs for an approval: SHA-256 of [`PASSKEY_DOMAIN`] followed by the
/// exact claims bytes the executor will receive. The page asks the browser for an assertion
/// over it; the executor recomputes it from the bytes it received.
pub fn challenge(claims_bytes: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(PASSKEY_DOMAIN);
    hasher.update(claims_bytes);
    hasher.finalize().into()
}

/// [`challenge`] as the client data writes it: base64url without padding.
pub fn challenge_base64url(claims_bytes: &[u8]) -> String {
    base64url(&challenge(claims_bytes))
}

fn base64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// One passkey assertion as the browser returned it, carried beside the assistant's signature.
/// Every field is exactly the bytes the authenticator and browser produced; nothing is
/// re-encoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasskeyAssertion {
    /// The credential's ID (`rawId`).
    pub credential_id: Vec<u8>,
    /// `response.authenticatorData`.
    pub authenticator_data: Vec<u8>,
    /// `response.clientDataJSON`.
    pub client_data_json: Vec<u8>,
    /// `response.signature`: DER for ES256, 64 bytes for Ed25519.
    pub signature: Vec<u8>,
}

/// The signature algorithms an operator's passkey may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// ECDSA over P-256 with SHA-256 (COSE -7).
    Es256,
    /// Ed25519 (COSE -8).
    Ed25519,
}

impl Algorithm {
    /// The record's spelling: `es256` or `ed25519`.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Es256 => "es256",
            Algorithm::Ed25519 => "ed25519",
        }
    }

    /// The algorithm a record names, if it is one of ours.
    pub fn from_name(name: &str) -> Option<Algorithm> {
        match name {
            "es256" => Some(Algorithm::Es256),
            "ed25519" => Some(Algorithm::Ed25519),
            _ => None,
        }
    }

    /// The COSE algorithm number, as `navigator.credentials.create` offers it.
    pub fn cose(self) -> i32 {
        match self {
            Algorithm::Es256 => -7,
            Algorithm::Ed25519 => -8,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// First [`FINGERPRINT_BYTES`] bytes of SHA-256 of a passkey's SPKI, for a person to compare.
/// Shown as lower-case hex in groups of four: `3fa2 9c01 77be 12d4 0a9f`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fingerprint(pub [u8; FINGERPRINT_BYTES]);

impl Fingerprint {
    /// The fingerprint of an SPKI.
    pub fn of_spki(spki: &[u8]) -> Fingerprint {
        let digest = Sha256::digest(spki);
        let mut out = [0u8; FINGERPRINT_BYTES];
        for (o, b) in out.iter_mut().zip(digest.iter()) {
            *o = *b;
        }
        Fingerprint(out)
    }

    /// Reads a fingerprint as [`fmt::Display`] writes it; spaces anywhere and upper-case hex
    /// are accepted, so a person can type what they see.
    pub fn parse(text: &str) -> Option<Fingerprint> {
        let digits: String = text.chars().filter(|c| *c != ' ').collect();
        crate::hex::decode_array(&digits).map(Fingerprint)
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = crate::hex::encode(&self.0);
        for (i, group) in digits.as_bytes().chunks(4).enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            // Hex digits are ASCII, so every group is text.
            f.write_str(std::str::from_utf8(group).unwrap_or_default())?;
        }
        Ok(())
    }
}

/// A verified public key of one of the two allowed shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PublicKey {
    Es256(p256::ecdsa::VerifyingKey),
    Ed25519(ed25519_dalek::VerifyingKey),
}

/// Why one approver record was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The line does not start with the word `approver`.
    #[error("the line does not start with `approver`")]
    NotAPasskeyLine,
    /// A `passkey …` line from before persons: it names no person, so it would count as a
    /// person of its own.
    #[error(
        "a `passkey …` line from before persons is no longer read: enrol this person again with `fleetwatch-confirm enrol` and put the `approver …` line it prints in its place"
    )]
    FromBeforePersons,
    /// The algorithm is neither `es256` nor `ed25519`.
    #[error("unknown passkey algorithm (expected `es256` or `ed25519`)")]
    UnknownAlgorithm,
    /// A field is missing.
    #[error("missing the {0}")]
    MissingField(&'static str),
    /// The credential ID is not base64url without padding.
    #[error("the credential ID is not base64url without padding")]
    CredentialIdNotBase64url,
    /// The credential ID is empty or longer than [`MAX_CREDENTIAL_ID`] bytes.
    #[error("the credential ID is empty or longer than 1023 bytes")]
    CredentialIdLength,
    /// The public key is not standard base64 with padding.
    #[error("the public key is not valid standard base64")]
    KeyNotBase64,
    /// The public key is not an SPKI of the named algorithm (for ES256: an uncompressed P-256
    /// point under id-ecPublicKey and prime256v1).
    #[error("the public key is not an SPKI of the named algorithm")]
    KeyNotSpki,
    /// The public key's point is not on the curve, or not canonically encoded.
    #[error("the public key is not a valid point on the curve")]
    KeyNotOnCurve,
    /// An Ed25519 key of small order, which would verify forged signatures.
    #[error("the public key is a weak (small-order) point")]
    WeakKey,
    /// The operator name is empty.
    #[error("the operator name is empty")]
    NameEmpty,
    /// The operator name is longer than [`MAX_NAME_CHARS`] characters.
    #[error("the operator name is longer than 64 characters")]
    NameTooLong,
    /// The operator name holds a control, format, private-use, unassigned or separator
    /// character (anything that could hide or reorder what a person reads).
    #[error("the operator name holds a control or invisible character")]
    NameHasControl,
    /// Another record has the same credential ID.
    #[error("the same credential ID is listed twice")]
    DuplicateCredential,
    /// Another record has the same public key.
    #[error("the same public key is listed twice")]
    DuplicateKey,
    /// The person ID is not 1 to 32 of `a-z`, `0-9`, `.`, `_`, `-`, starting with a letter or
    /// digit.
    #[error(
        "the person ID must be 1 to 32 lower-case letters, digits, `.`, `_` or `-`, starting with a letter or digit"
    )]
    PersonIdInvalid,
    /// The backup field is neither `synced` nor `device-bound`.
    #[error("the backup field is neither `synced` nor `device-bound`")]
    BackupUnknown,
    /// A person ID already listed under another display name: "approved by" must name one
    /// person one way.
    #[error(
        "the person ID is listed under another name: a second passkey of theirs must carry the same name"
    )]
    PersonNamedTwice,
    /// A `may=` field that is not `TOOLS@ROOMS`.
    #[error(
        "the scope is not `may=TOOLS@ROOMS` (tools: tool names, `calm`, `disruptive` or `all`, comma-separated; rooms: `team` or device IDs, comma-separated; nothing twice)"
    )]
    ScopeInvalid,
    /// A display name starting with `may=` or `users=`, which would read back as a field.
    #[error("the operator name may not start with `may=` or `users=`")]
    NameLooksLikeScope,
    /// A `users=` field that is not 1 to 8 user names, comma-separated, none twice.
    #[error(
        "the users field is not `users=NAME[,NAME…]` (1 to 8 user names of letters, digits, `_`, `.` and `-`, none twice)"
    )]
    UsersInvalid,
    /// A person listed with two different scopes: what a person may approve is one rule.
    #[error(
        "the person ID is listed with another scope: every passkey of one person carries the same scope"
    )]
    PersonScopedTwice,
}

/// Whether a passkey may be copied to other devices, from the backup-eligible (BE) flag its
/// authenticator set at enrolment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backup {
    /// BE set: the passkey may be synced (a password manager, a phone's keychain).
    Synced,
    /// BE clear: the passkey never leaves its authenticator (a security key).
    DeviceBound,
}

impl Backup {
    /// The record's spelling: `synced` or `device-bound`.
    pub fn name(self) -> &'static str {
        match self {
            Backup::Synced => "synced",
            Backup::DeviceBound => "device-bound",
        }
    }

    /// The value a record names.
    pub fn from_name(name: &str) -> Option<Backup> {
        match name {
            "synced" => Some(Backup::Synced),
            "device-bound" => Some(Backup::DeviceBound),
            _ => None,
        }
    }

    /// From the authenticator data's flags byte.
    pub fn from_flags(flags: u8) -> Backup {
        if flags & FLAG_BE == 0 {
            Backup::DeviceBound
        } else {
            Backup::Synced
        }
    }
}

/// Longest person ID, in characters.
pub const MAX_PERSON_CHARS: usize = 32;

/// One enrolled passkey: the line an administrator installed, checked. It names the person
/// and records whether the passkey may be synced:
///
/// ```text
/// approver <person ID> <alg> <credential ID> <SPKI base64> <synced|device-bound> <display name…>
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyRecord {
    person: String,
    backup: Backup,
    /// What the person may approve; `None`: everything.
    scope: Option<Scope>,
    /// The user names (Unix accounts) that are this person, for `passkeys.asker_counts`.
    users: Vec<String>,
    algorithm: Algorithm,
    credential_id: Vec<u8>,
    spki: Vec<u8>,
    name: String,
    key: PublicKey,
}

impl PasskeyRecord {
    /// A person's record (an `approver` line) from its parts, checked like a parsed line
    /// (enrolment builds one from what the browser returned).
    pub fn for_person(
        person: &str,
        backup: Backup,
        algorithm: Algorithm,
        credential_id: Vec<u8>,
        spki: Vec<u8>,
        name: &str,
    ) -> Result<PasskeyRecord, RecordError> {
        let person = check_person(person)?;
        if credential_id.is_empty() || credential_id.len() > MAX_CREDENTIAL_ID {
            return Err(RecordError::CredentialIdLength);
        }
        let key = parse_spki(algorithm, &spki)?;
        let name = check_name(name)?;
        Ok(PasskeyRecord {
            person,
            backup,
            scope: None,
            users: Vec::new(),
            algorithm,
            credential_id,
            spki,
            name,
            key,
        })
    }

    /// The same record with this scope (`None`: may approve everything).
    pub fn with_scope(self, scope: Option<Scope>) -> PasskeyRecord {
        PasskeyRecord { scope, ..self }
    }

    /// The same record naming these user names as the person's.
    pub fn with_users(self, users: Vec<String>) -> PasskeyRecord {
        PasskeyRecord { users, ..self }
    }

    /// The user names (Unix accounts) that are this person.
    pub fn users(&self) -> &[String] {
        &self.users
    }

    /// What the person may approve; `None` is everything.
    pub fn scope(&self) -> Option<&Scope> {
        self.scope.as_ref()
    }

    /// Parses one record line: `approver <person> <alg> <credential ID> <SPKI> <backup>
    /// <name…>`. Fields are separated by spaces or tabs; the name is the rest of the line,
    /// trimmed. A `passkey …` line from before persons is refused as such.
    pub fn parse_line(line: &str) -> Result<PasskeyRecord, RecordError> {
        let rest = line.trim();
        let (word, rest) = next_field(rest);
        let (person, rest) = match word {
            "approver" => next_field(rest),
            "passkey" => return Err(RecordError::FromBeforePersons),
            _ => return Err(RecordError::NotAPasskeyLine),
        };
        if person.is_empty() {
            return Err(RecordError::MissingField("person ID"));
        }
        let (algorithm, rest) = next_field(rest);
        if algorithm.is_empty() {
            return Err(RecordError::MissingField("algorithm"));
        }
        let algorithm = Algorithm::from_name(algorithm).ok_or(RecordError::UnknownAlgorithm)?;
        let (credential, rest) = next_field(rest);
        if credential.is_empty() {
            return Err(RecordError::MissingField("credential ID"));
        }
        let credential_id = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(credential)
            .map_err(|_| RecordError::CredentialIdNotBase64url)?;
        let (key, name) = next_field(rest);
        if key.is_empty() {
            return Err(RecordError::MissingField("public key"));
        }
        let spki = base64::engine::general_purpose::STANDARD
            .decode(key)
            .map_err(|_| RecordError::KeyNotBase64)?;
        let (backup, name) = next_field(name);
        if backup.is_empty() {
            return Err(RecordError::MissingField("backup field"));
        }
        let backup = Backup::from_name(backup).ok_or(RecordError::BackupUnknown)?;
        // Optional fields before the name, each once, in either order: `may=` and `users=`.
        let (mut scope, mut users, mut name) = (None, None, name);
        loop {
            let (field, rest) = next_field(name);
            if let Some(text) = field.strip_prefix(scope::PREFIX)
                && scope.is_none()
            {
                scope = Some(Scope::parse(text)?);
            } else if let Some(text) = field.strip_prefix(USERS_PREFIX)
                && users.is_none()
            {
                users = Some(parse_users(text)?);
            } else {
                break;
            }
            name = rest;
        }
        PasskeyRecord::for_person(person, backup, algorithm, credential_id, spki, name)
            .map(|r| r.with_scope(scope).with_users(users.unwrap_or_default()))
    }

    /// The record's line, as [`PasskeyRecord::parse_line`] reads it.
    pub fn to_line(&self) -> String {
        let mut scope = self
            .scope
            .as_ref()
            .map(|s| format!("{}{s} ", scope::PREFIX))
            .unwrap_or_default();
        if !self.users.is_empty() {
            scope.push_str(&format!("{USERS_PREFIX}{} ", self.users.join(",")));
        }
        format!(
            "approver {} {} {} {} {} {scope}{}",
            self.person,
            self.algorithm,
            base64url(&self.credential_id),
            base64::engine::general_purpose::STANDARD.encode(&self.spki),
            self.backup.name(),
            self.name
        )
    }

    /// The person's ID: who this passkey counts as in a quorum.
    pub fn person(&self) -> &str {
        &self.person
    }

    /// Whether the passkey may be synced, as recorded at enrolment.
    pub fn backup(&self) -> Backup {
        self.backup
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
    /// The credential ID.
    pub fn credential_id(&self) -> &[u8] {
        &self.credential_id
    }
    /// The SPKI public key, as installed.
    pub fn spki(&self) -> &[u8] {
        &self.spki
    }
    /// The operator's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The fingerprint to compare with the operator's page.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of_spki(&self.spki)
    }
}

impl fmt::Display for PasskeyRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_line())
    }
}

/// The word that starts an approver line's list of the person's user names.
pub const USERS_PREFIX: &str = "users=";

/// `users=` as written (without the prefix): 1 to 8 user names
/// ([`crate::claims::is_user_name`], not empty), comma-separated, none twice.
pub fn parse_users(text: &str) -> Result<Vec<String>, RecordError> {
    let users: Vec<String> = text.split(',').map(str::to_owned).collect();
    let mut seen = std::collections::BTreeSet::new();
    if users.len() > 8
        || users
            .iter()
            .any(|u| u.is_empty() || !crate::claims::is_user_name(u) || !seen.insert(u.clone()))
    {
        return Err(RecordError::UsersInvalid);
    }
    Ok(users)
}

/// Splits off the first field (up to a space or tab) and returns it with the rest, whose
/// leading separators are dropped.
fn next_field(text: &str) -> (&str, &str) {
    let text = text.trim_start_matches([' ', '\t']);
    match text.find([' ', '\t']) {
        Some(end) => {
            let (field, rest) = text.split_at(end);
            (field, rest.trim_start_matches([' ', '\t']))
        }
        None => (text, ""),
    }
}

/// A person ID as written: 1 to [`MAX_PERSON_CHARS`] of `a-z`, `0-9`, `.`, `_`, `-`, starting
/// with a letter or digit, so it reads the same on every terminal and never looks like an
/// option or a path.
pub fn check_person(person: &str) -> Result<String, RecordError> {
    let ok = !person.is_empty()
        && person.chars().count() <= MAX_PERSON_CHARS
        && person
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
        && person
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if ok {
        Ok(person.to_owned())
    } else {
        Err(RecordError::PersonIdInvalid)
    }
}

/// A display name as a record would hold it (trimmed), or why not: for a program that takes
/// one from a person before any passkey exists.
pub fn check_display_name(name: &str) -> Result<String, RecordError> {
    check_name(name)
}

/// The operator name, trimmed, if a person can read it as it is: not empty, not too long, and
/// free of anything that could hide or reorder text on a terminal or a page.
fn check_name(name: &str) -> Result<String, RecordError> {
    let name = name.trim_matches([' ', '\t']);
    if name.is_empty() {
        return Err(RecordError::NameEmpty);
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(RecordError::NameTooLong);
    }
    if name.chars().any(crate::shown::is_hidden) {
        return Err(RecordError::NameHasControl);
    }
    // A name that starts like a scope or a list of users would read back as one.
    if name.starts_with(scope::PREFIX) || name.starts_with(USERS_PREFIX) {
        return Err(RecordError::NameLooksLikeScope);
    }
    Ok(name.to_owned())
}

/// Reads an SPKI of exactly the named algorithm's one allowed shape.
fn parse_spki(algorithm: Algorithm, spki: &[u8]) -> Result<PublicKey, RecordError> {
    match algorithm {
        Algorithm::Es256 => {
            if spki.len() != P256_SPKI_LEN || !spki.starts_with(&P256_SPKI_PREFIX) {
                return Err(RecordError::KeyNotSpki);
            }
            // SEC1 encoding of the point: the `04` marker (the prefix's last byte) and X ‖ Y.
            let point = spki
                .get(P256_SPKI_PREFIX.len() - 1..)
                .ok_or(RecordError::KeyNotSpki)?;
            // Refuses coordinates not below p and points not on the curve.
            let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(point)
                .map_err(|_| RecordError::KeyNotOnCurve)?;
            Ok(PublicKey::Es256(key))
        }
        Algorithm::Ed25519 => {
            if spki.len() != ED25519_SPKI_LEN || !spki.starts_with(&ED25519_SPKI_PREFIX) {
                return Err(RecordError::KeyNotSpki);
            }
            let bytes: [u8; 32] = spki
                .get(ED25519_SPKI_PREFIX.len()..)
                .and_then(|b| b.try_into().ok())
                .ok_or(RecordError::KeyNotSpki)?;
            let key = ed25519_dalek::VerifyingKey::from_bytes(&bytes)
                .map_err(|_| RecordError::KeyNotOnCurve)?;
            // A non-canonical encoding names a point another encoding also names, which would
            // let one key be enrolled twice under two spellings.
            if key.to_edwards().compress().to_bytes() != bytes {
                return Err(RecordError::KeyNotOnCurve);
            }
            if key.is_weak() {
                return Err(RecordError::WeakKey);
            }
            Ok(PublicKey::Ed25519(key))
        }
    }
}

/// Why an approver file was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ApproverFileError {
    /// A line is not a valid record, or repeats another one.
    #[error("line {line}: {error}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        error: RecordError,
    },
}

/// The passkeys an administrator enrolled, in file order. Empty when none is: then approvals
/// are not bound to a person, which the executor reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Approvers {
    records: Vec<PasskeyRecord>,
}

impl Approvers {
    /// Parses an approver file: one [`PasskeyRecord`] line each; blank lines and lines whose
    /// first non-blank character is `#` are skipped. Any other line that is not a valid record,
    /// and a credential ID or public key listed twice, refuses the whole file, naming the line.
    pub fn parse(text: &str) -> Result<Approvers, ApproverFileError> {
        let mut approvers = Approvers::default();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let record = PasskeyRecord::parse_line(trimmed)
                .map_err(|error| ApproverFileError::Line { line, error })?;
            approvers
                .add(record)
                .map_err(|error| ApproverFileError::Line { line, error })?;
        }
        Ok(approvers)
    }

    /// Adds a record unless its credential ID or its key is already enrolled: either would make
    /// one passkey count as two people.
    pub fn add(&mut self, record: PasskeyRecord) -> Result<(), RecordError> {
        if self
            .records
            .iter()
            .any(|r| r.credential_id == record.credential_id)
        {
            return Err(RecordError::DuplicateCredential);
        }
        if self.records.iter().any(|r| r.spki == record.spki) {
            return Err(RecordError::DuplicateKey);
        }
        if self
            .records
            .iter()
            .any(|r| r.person == record.person && r.name != record.name)
        {
            return Err(RecordError::PersonNamedTwice);
        }
        if self
            .records
            .iter()
            .any(|r| r.person == record.person && r.scope != record.scope)
        {
            return Err(RecordError::PersonScopedTwice);
        }
        self.records.push(record);
        Ok(())
    }

    /// Removes the record with this fingerprint and returns it.
    pub fn remove(&mut self, fingerprint: &Fingerprint) -> Option<PasskeyRecord> {
        let at = self
            .records
            .iter()
            .position(|r| r.fingerprint() == *fingerprint)?;
        Some(self.records.remove(at))
    }

    /// The records, in file order.
    pub fn records(&self) -> &[PasskeyRecord] {
        &self.records
    }

    /// The record with this credential ID.
    pub fn get(&self, credential_id: &[u8]) -> Option<&PasskeyRecord> {
        self.records
            .iter()
            .find(|r| r.credential_id == credential_id)
    }

    /// Whether no passkey is enrolled.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// How many passkeys are enrolled.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// How many distinct persons they belong to: the most a quorum can count.
    pub fn persons(&self) -> usize {
        let persons: std::collections::BTreeSet<&str> =
            self.records.iter().map(PasskeyRecord::person).collect();
        persons.len()
    }

    /// The file text: one line per record, in order, each ending in a newline.
    pub fn to_text(&self) -> String {
        self.records.iter().map(|r| r.to_line() + "\n").collect()
    }
}

/// Where assertions must come from: the RP ID the passkeys are bound to and the page origins
/// the executor's configuration lists (for example `http://localhost:8767`). Both come from the
/// executor's own configuration, never from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelyingParty {
    rp_id: String,
    rp_id_hash: [u8; 32],
    origins: Vec<String>,
}

impl RelyingParty {
    /// An RP ID and its allowed origins. With no origin nothing verifies.
    pub fn new<S: Into<String>>(rp_id: &str, origins: impl IntoIterator<Item = S>) -> RelyingParty {
        RelyingParty {
            rp_id: rp_id.to_owned(),
            rp_id_hash: Sha256::digest(rp_id.as_bytes()).into(),
            origins: origins.into_iter().map(Into::into).collect(),
        }
    }

    /// The RP ID.
    pub fn rp_id(&self) -> &str {
        &self.rp_id
    }

    /// The allowed origins.
    pub fn origins(&self) -> &[String] {
        &self.origins
    }
}

/// Why a passkey assertion, or a set of them, was refused. Each maps to its own [`Refusal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PasskeyError {
    /// More than [`MAX_ASSERTIONS`] assertions.
    #[error("more passkey assertions than allowed")]
    TooManyAssertions,
    /// A field is larger than its cap, or a credential ID is empty.
    #[error("a passkey assertion field is out of bounds")]
    FieldOutOfBounds,
    /// The credential ID names no enrolled passkey.
    #[error("the passkey is not enrolled")]
    UnknownCredential,
    /// The client data is not a JSON object with string `type`, `challenge` and `origin`
    /// (each once) and a boolean `crossOrigin` if present.
    #[error("the client data is malformed")]
    ClientDataMalformed,
    /// The client data's `type` is not `webauthn.get` (`webauthn.create` at enrolment).
    #[error("the client data is for another kind of ceremony")]
    WrongType,
    /// The client data's `challenge` is not the one these claims bytes give.
    #[error("the passkey signed a different challenge")]
    ChallengeMismatch,
    /// The client data's `origin` is not one the executor allows.
    #[error("the origin is not allowed")]
    OriginNotAllowed,
    /// The client data says the request came from a cross-origin frame.
    #[error("the assertion was made cross-origin")]
    CrossOrigin,
    /// The authenticator data is shorter than 37 bytes.
    #[error("the authenticator data is too short")]
    AuthenticatorDataShort,
    /// The authenticator data's RP ID hash is not SHA-256 of the executor's RP ID.
    #[error("the RP ID hash does not match")]
    RpIdMismatch,
    /// The user-present flag is clear.
    #[error("the user was not present")]
    UserNotPresent,
    /// The user-verified flag is clear.
    #[error("the user was not verified")]
    UserNotVerified,
    /// The signature is not a DER ECDSA signature (ES256) or not 64 bytes (Ed25519).
    #[error("the passkey signature is malformed")]
    SignatureMalformed,
    /// The signature does not verify against the enrolled key.
    #[error("the passkey signature does not verify")]
    BadSignature,
    /// The signature counter did not increase.
    #[error("the signature counter did not increase")]
    CounterNotIncreased,
    /// The executor accepts device-bound passkeys only, and this one may be synced (its
    /// authenticator set the backup-eligible flag).
    #[error("the passkey may be synced, and only device-bound passkeys are accepted")]
    Synced,
    /// The authenticator data sets backup state (BS) without backup eligible (BE).
    #[error("the passkey's flags say it is backed up but not eligible for backup")]
    BackupStateWithoutEligible,
    /// With device-bound passkeys only: the backup-eligible flag differs from the enrolment's.
    #[error("the passkey's backup-eligible flag differs from its enrolment")]
    BackupChanged,
    /// At enrolment: the authenticator data of the creation names no credential, or another
    /// one than the browser returned.
    #[error("the new passkey's authenticator data names another credential")]
    CredentialMismatch,
    /// No passkey assertion, and at least one is required.
    #[error("no passkey assertion")]
    PasskeyRequired,
    /// Fewer distinct enrolled passkeys than required.
    #[error("{have} of {need} required passkeys")]
    QuorumNotMet {
        /// Distinct passkeys that verified.
        have: usize,
        /// Distinct passkeys required.
        need: usize,
    },
    /// The person who asked for the change approved it, and with `passkeys.asker_counts:
    /// false` they do not count, so the quorum is not met.
    #[error("{have} of {need} required persons approved besides the person who asked")]
    AskerApproved {
        /// Distinct persons other than the asker who approved.
        have: usize,
        /// Distinct persons required.
        need: usize,
    },
    /// A person approved outside what their approver line lets them approve, and without them
    /// the quorum is not met.
    #[error("{have} of {need} required persons may approve this change")]
    OutOfScope {
        /// Distinct persons in scope who approved.
        have: usize,
        /// Distinct persons required.
        need: usize,
    },
}

impl PasskeyError {
    /// The matching refusal.
    pub fn refusal(self) -> Refusal {
        match self {
            PasskeyError::TooManyAssertions => Refusal::PasskeyTooMany,
            PasskeyError::FieldOutOfBounds => Refusal::PasskeyOutOfBounds,
            PasskeyError::UnknownCredential => Refusal::PasskeyUnknownCredential,
            PasskeyError::ClientDataMalformed => Refusal::PasskeyClientDataMalformed,
            PasskeyError::WrongType => Refusal::PasskeyWrongType,
            PasskeyError::ChallengeMismatch => Refusal::PasskeyChallengeMismatch,
            PasskeyError::OriginNotAllowed => Refusal::PasskeyOriginNotAllowed,
            PasskeyError::CrossOrigin => Refusal::PasskeyCrossOrigin,
            PasskeyError::AuthenticatorDataShort => Refusal::PasskeyAuthenticatorDataShort,
            PasskeyError::RpIdMismatch => Refusal::PasskeyRpIdMismatch,
            PasskeyError::UserNotPresent => Refusal::PasskeyUserNotPresent,
            PasskeyError::UserNotVerified => Refusal::PasskeyUserNotVerified,
            PasskeyError::SignatureMalformed => Refusal::PasskeySignatureMalformed,
            PasskeyError::BadSignature => Refusal::PasskeyBadSignature,
            PasskeyError::CounterNotIncreased => Refusal::PasskeyCounterNotIncreased,
            PasskeyError::Synced => Refusal::PasskeySynced,
            PasskeyError::BackupStateWithoutEligible => Refusal::PasskeyBackupStateWithoutEligible,
            PasskeyError::BackupChanged => Refusal::PasskeyBackupChanged,
            // Only enrolment checks a creation; an approval never carries one.
            PasskeyError::CredentialMismatch => Refusal::PasskeyClientDataMalformed,
            PasskeyError::PasskeyRequired => Refusal::PasskeyRequired,
            PasskeyError::QuorumNotMet { have, need } => Refusal::PasskeyQuorumNotMet {
                have: u32::try_from(have).unwrap_or(u32::MAX),
                need: u32::try_from(need).unwrap_or(u32::MAX),
            },
            PasskeyError::AskerApproved { have, need } => Refusal::PasskeyAskerApproved {
                have: u32::try_from(have).unwrap_or(u32::MAX),
                need: u32::try_from(need).unwrap_or(u32::MAX),
            },
            PasskeyError::OutOfScope { have, need } => Refusal::PasskeyOutOfScope {
                have: u32::try_from(have).unwrap_or(u32::MAX),
                need: u32::try_from(need).unwrap_or(u32::MAX),
            },
        }
    }
}

/// One assertion that passed every check of [`verify_assertion`]. Only the verifier builds
/// one, so counting these counts verified passkeys.
#[derive(Debug, PartialEq, Eq)]
pub struct VerifiedAssertion {
    credential_id: Vec<u8>,
    person: String,
    scope: Option<Scope>,
    users: Vec<String>,
    fingerprint: Fingerprint,
    name: String,
    counter: u32,
    backup: Backup,
    enrolled: Backup,
}

impl VerifiedAssertion {
    /// The enrolled credential that signed.
    pub fn credential_id(&self) -> &[u8] {
        &self.credential_id
    }
    /// Its fingerprint (for audit rows).
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }
    /// The operator's name from the approver file (for "approved by").
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The signature counter the authenticator reported.
    pub fn counter(&self) -> u32 {
        self.counter
    }
    /// The person the passkey belongs to.
    pub fn person(&self) -> &str {
        &self.person
    }
    /// Whether the authenticator said, in this assertion, that the passkey may be synced (BE).
    pub fn backup(&self) -> Backup {
        self.backup
    }
}

/// The assertions of one approval that all verified.
#[derive(Debug, PartialEq, Eq)]
pub struct VerifiedPasskeys {
    assertions: Vec<VerifiedAssertion>,
}

/// One enrolled passkey's part in an approval, however many of its assertions came: the lowest
/// and highest counter it reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialUse {
    credential_id: Vec<u8>,
    fingerprint: Fingerprint,
    name: String,
    lowest_counter: u32,
    highest_counter: u32,
}

impl CredentialUse {
    /// The credential.
    pub fn credential_id(&self) -> &[u8] {
        &self.credential_id
    }
    /// Its fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }
    /// The operator's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The lowest counter among its assertions.
    pub fn lowest_counter(&self) -> u32 {
        self.lowest_counter
    }
    /// The highest counter among its assertions.
    pub fn highest_counter(&self) -> u32 {
        self.highest_counter
    }

    /// Applies [`check_counter`] against the stored counter to every assertion of this
    /// credential (its lowest counter) and returns the counter to store (its highest). Run it
    /// in the transaction that stores the nonce, so two approvals cannot both pass with one
    /// counter value.
    pub fn next_counter(&self, stored: u32) -> Result<u32, PasskeyError> {
        check_counter(stored, self.lowest_counter)?;
        Ok(self.highest_counter)
    }
}

impl VerifiedPasskeys {
    /// The verified assertions, in the order they came.
    pub fn assertions(&self) -> &[VerifiedAssertion] {
        &self.assertions
    }

    /// One entry per distinct enrolled passkey, in order of first appearance. The same passkey
    /// twice is one person, so it appears once.
    pub fn uses(&self) -> Vec<CredentialUse> {
        let mut out: Vec<CredentialUse> = Vec::new();
        for a in &self.assertions {
            if let Some(u) = out.iter_mut().find(|u| u.credential_id == a.credential_id) {
                u.lowest_counter = u.lowest_counter.min(a.counter);
                u.highest_counter = u.highest_counter.max(a.counter);
            } else {
                out.push(CredentialUse {
                    credential_id: a.credential_id.clone(),
                    fingerprint: a.fingerprint,
                    name: a.name.clone(),
                    lowest_counter: a.counter,
                    highest_counter: a.counter,
                });
            }
        }
        out
    }

    /// How many distinct persons' passkeys verified. One person's second passkey (a backup
    /// key) is still one person.
    pub fn distinct(&self) -> usize {
        let persons: std::collections::BTreeSet<&str> =
            self.assertions.iter().map(|a| a.person.as_str()).collect();
        persons.len()
    }

    /// For an executor whose configuration accepts device-bound passkeys only: refuses when an
    /// assertion's backup-eligible flag (BE) differs from the one its enrolment recorded (BE
    /// never changes for one credential), then when any passkey may be synced.
    pub fn require_device_bound(&self) -> Result<(), PasskeyError> {
        if self.assertions.iter().any(|a| a.backup != a.enrolled) {
            Err(PasskeyError::BackupChanged)
        } else if self.assertions.iter().any(|a| a.backup == Backup::Synced) {
            Err(PasskeyError::Synced)
        } else {
            Ok(())
        }
    }

    /// Refuses unless at least `needed` distinct persons who may count approved: each within
    /// the scope their approver line gives (the tool, whether it is disruptive, every target)
    /// and, when `asker` is given (`passkeys.asker_counts: false`), not the person whose line
    /// names that user as theirs. When the persons who may not count are what leaves the quorum
    /// unmet, [`PasskeyError::AskerApproved`] (the asker's own approval) or
    /// [`PasskeyError::OutOfScope`]; otherwise as [`VerifiedPasskeys::require`].
    pub fn require_counting(
        &self,
        needed: usize,
        change: (&str, bool, &[String]),
        asker: Option<&str>,
    ) -> Result<(), PasskeyError> {
        let (tool, disruptive, targets) = change;
        let in_scope = |a: &VerifiedAssertion| {
            a.scope
                .as_ref()
                .is_none_or(|s| s.covers(tool, disruptive, targets))
        };
        let is_asker = |a: &VerifiedAssertion| {
            asker.is_some_and(|u| !u.is_empty() && a.users.iter().any(|x| x == u))
        };
        let persons: std::collections::BTreeSet<&str> = self
            .assertions
            .iter()
            .filter(|a| in_scope(a) && !is_asker(a))
            .map(|a| a.person.as_str())
            .collect();
        if persons.len() >= needed {
            return Ok(());
        }
        let have = persons.len();
        if self.assertions.iter().any(is_asker) {
            return Err(PasskeyError::AskerApproved { have, need: needed });
        }
        if self.assertions.iter().any(|a| !in_scope(a)) {
            return Err(PasskeyError::OutOfScope { have, need: needed });
        }
        self.require(needed)
    }

    /// Refuses unless at least `needed` distinct persons' passkeys verified: none at all is
    /// [`PasskeyError::PasskeyRequired`], some but too few [`PasskeyError::QuorumNotMet`].
    pub fn require(&self, needed: usize) -> Result<(), PasskeyError> {
        let have = self.distinct();
        if have >= needed {
            Ok(())
        } else if have == 0 {
            Err(PasskeyError::PasskeyRequired)
        } else {
            Err(PasskeyError::QuorumNotMet { have, need: needed })
        }
    }
}

/// The signature counter rule: when either the stored or the new counter is non-zero, the new
/// one must be strictly greater. Both zero is an authenticator that keeps no counter (many
/// synced passkeys), where the nonce alone stops a replay.
pub fn counter_advances(stored: u32, new: u32) -> bool {
    (stored == 0 && new == 0) || new > stored
}

/// [`counter_advances`] as a check.
pub fn check_counter(stored: u32, new: u32) -> Result<(), PasskeyError> {
    if counter_advances(stored, new) {
        Ok(())
    } else {
        Err(PasskeyError::CounterNotIncreased)
    }
}

/// Verifies every passkey assertion of an approval over its claims bytes, still undecoded.
/// Refuses at the first assertion that fails; an approval without any gives an empty set,
/// which [`VerifiedPasskeys::require`] then judges.
pub fn verify_approval(
    signed: &SignedApproval,
    approvers: &Approvers,
    rp: &RelyingParty,
) -> Result<VerifiedPasskeys, PasskeyError> {
    verify_assertions(&signed.passkeys, &signed.claims, approvers, rp)
}

/// [`verify_approval`] on parts.
pub fn verify_assertions(
    assertions: &[PasskeyAssertion],
    claims_bytes: &[u8],
    approvers: &Approvers,
    rp: &RelyingParty,
) -> Result<VerifiedPasskeys, PasskeyError> {
    if assertions.len() > MAX_ASSERTIONS {
        return Err(PasskeyError::TooManyAssertions);
    }
    let expected = challenge(claims_bytes);
    let assertions = assertions
        .iter()
        .map(|a| verify_assertion_for_challenge(a, &expected, approvers, rp))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(VerifiedPasskeys { assertions })
}

/// Verifies one assertion over claims bytes.
pub fn verify_assertion(
    assertion: &PasskeyAssertion,
    claims_bytes: &[u8],
    approvers: &Approvers,
    rp: &RelyingParty,
) -> Result<VerifiedAssertion, PasskeyError> {
    verify_assertion_for_challenge(assertion, &challenge(claims_bytes), approvers, rp)
}

/// Verifies one assertion against an explicit challenge (the bytes the client data's
/// `challenge` must encode). The approval path uses [`verify_assertion`]; this form exists for
/// published ceremonies whose challenge is not one of ours.
pub fn verify_assertion_for_challenge(
    assertion: &PasskeyAssertion,
    expected_challenge: &[u8],
    approvers: &Approvers,
    rp: &RelyingParty,
) -> Result<VerifiedAssertion, PasskeyError> {
    // Sizes first, so nothing below works on an unbounded field.
    if assertion.credential_id.is_empty()
        || assertion.credential_id.len() > MAX_CREDENTIAL_ID
        || assertion.authenticator_data.len() > MAX_AUTHENTICATOR_DATA
        || assertion.client_data_json.len() > MAX_CLIENT_DATA_JSON
        || assertion.signature.len() > MAX_SIGNATURE
    {
        return Err(PasskeyError::FieldOutOfBounds);
    }
    let record = approvers
        .get(&assertion.credential_id)
        .ok_or(PasskeyError::UnknownCredential)?;

    check_client_data(
        &assertion.client_data_json,
        "webauthn.get",
        expected_challenge,
        rp,
    )?;
    let (flags, counter) = check_authenticator_data(&assertion.authenticator_data, rp)?;
    verify_signature(
        record,
        &assertion.authenticator_data,
        &assertion.client_data_json,
        &assertion.signature,
    )?;
    Ok(VerifiedAssertion {
        credential_id: record.credential_id.clone(),
        person: record.person.clone(),
        scope: record.scope.clone(),
        users: record.users.clone(),
        fingerprint: record.fingerprint(),
        name: record.name.clone(),
        counter,
        backup: Backup::from_flags(flags),
        enrolled: record.backup,
    })
}

// Checking a creation at enrolment, which only `fleetwatch-confirm enrol` does: behind the
// `enrol` feature, which the executor does not enable, so it does not link it.
#[cfg(feature = "enrol")]
mod enrol;
pub mod scope;
#[cfg(feature = "enrol")]
pub use enrol::{Registration, check_registration};
pub use scope::Scope;

/// The signature check alone: the record's key over `authenticatorData ‖
/// SHA-256(clientDataJSON)`. ES256 takes a strict DER signature and either form of `S`
/// (authenticators do not normalise it; the nonce and the counter stop replays, not the
/// signature's form); Ed25519 takes 64 bytes and `verify_strict`.
pub fn verify_signature(
    record: &PasskeyRecord,
    authenticator_data: &[u8],
    client_data_json: &[u8],
    signature: &[u8],
) -> Result<(), PasskeyError> {
    let mut message = Vec::with_capacity(authenticator_data.len() + 32);
    message.extend_from_slice(authenticator_data);
    message.extend_from_slice(&Sha256::digest(client_data_json));
    record.verify_message(&message, signature)
}

impl PasskeyRecord {
    /// The signature primitive [`verify_signature`] runs, on a raw message: ES256 hashes it
    /// with SHA-256 and takes a strict DER signature with either form of `S`; Ed25519 takes 64
    /// bytes and `verify_strict`. Public so known-answer vectors drive exactly this check.
    pub fn verify_message(&self, message: &[u8], signature: &[u8]) -> Result<(), PasskeyError> {
        match &self.key {
            PublicKey::Es256(key) => {
                let signature = p256::ecdsa::Signature::from_der(signature)
                    .map_err(|_| PasskeyError::SignatureMalformed)?;
                key.verify(message, &signature)
                    .map_err(|_| PasskeyError::BadSignature)
            }
            PublicKey::Ed25519(key) => {
                let bytes: [u8; 64] = signature
                    .try_into()
                    .map_err(|_| PasskeyError::SignatureMalformed)?;
                key.verify_strict(message, &ed25519_dalek::Signature::from_bytes(&bytes))
                    .map_err(|_| PasskeyError::BadSignature)
            }
        }
    }
}

/// The client data checks of DESIGN §9, for a ceremony of `expected_type`.
fn check_client_data(
    bytes: &[u8],
    expected_type: &str,
    expected_challenge: &[u8],
    rp: &RelyingParty,
) -> Result<(), PasskeyError> {
    let data: ClientData =
        serde_json::from_slice(bytes).map_err(|_| PasskeyError::ClientDataMalformed)?;
    let (Some(kind), Some(challenge), Some(origin)) = (data.kind, data.challenge, data.origin)
    else {
        return Err(PasskeyError::ClientDataMalformed);
    };
    if kind != expected_type {
        return Err(PasskeyError::WrongType);
    }
    if challenge != base64url(expected_challenge) {
        return Err(PasskeyError::ChallengeMismatch);
    }
    if !rp.origins.contains(&origin) {
        return Err(PasskeyError::OriginNotAllowed);
    }
    // A top origin is only ever reported for a cross-origin frame; either means the page was
    // embedded in another site.
    if data.cross_origin == Some(true) || data.top_origin {
        return Err(PasskeyError::CrossOrigin);
    }
    Ok(())
}

/// The authenticator data checks; returns the flags and the signature counter.
fn check_authenticator_data(bytes: &[u8], rp: &RelyingParty) -> Result<(u8, u32), PasskeyError> {
    let Some(fixed) = bytes.get(..AUTHENTICATOR_DATA_MIN) else {
        return Err(PasskeyError::AuthenticatorDataShort);
    };
    let (rp_id_hash, rest) = fixed.split_at(32);
    if rp_id_hash != rp.rp_id_hash {
        return Err(PasskeyError::RpIdMismatch);
    }
    let (flags, counter) = rest
        .split_first()
        .ok_or(PasskeyError::AuthenticatorDataShort)?;
    if flags & FLAG_UP == 0 {
        return Err(PasskeyError::UserNotPresent);
    }
    if flags & FLAG_UV == 0 {
        return Err(PasskeyError::UserNotVerified);
    }
    if flags & FLAG_BS != 0 && flags & FLAG_BE == 0 {
        return Err(PasskeyError::BackupStateWithoutEligible);
    }
    let counter: [u8; 4] = counter
        .try_into()
        .map_err(|_| PasskeyError::AuthenticatorDataShort)?;
    Ok((*flags, u32::from_be_bytes(counter)))
}

/// The members of the client data this verifier reads. Parsed by a visitor that accepts only a
/// JSON object and refuses any of these members twice: two readers that kept the first and the
/// last `type` respectively would judge one text differently. Other members (browsers add some)
/// are read as JSON and otherwise ignored.
struct ClientData {
    kind: Option<String>,
    challenge: Option<String>,
    origin: Option<String>,
    cross_origin: Option<bool>,
    top_origin: bool,
}

impl<'de> Deserialize<'de> for ClientData {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ClientData, D::Error> {
        deserializer.deserialize_map(ClientDataVisitor)
    }
}

struct ClientDataVisitor;

impl<'de> Visitor<'de> for ClientDataVisitor {
    type Value = ClientData;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a client data object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClientData, A::Error> {
        let mut out = ClientData {
            kind: None,
            challenge: None,
            origin: None,
            cross_origin: None,
            top_origin: false,
        };
        let mut seen_top_origin = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "type" => set_once(&mut out.kind, map.next_value()?)?,
                "challenge" => set_once(&mut out.challenge, map.next_value()?)?,
                "origin" => set_once(&mut out.origin, map.next_value()?)?,
                "crossOrigin" => set_once(&mut out.cross_origin, map.next_value()?)?,
                "topOrigin" => {
                    if seen_top_origin {
                        return Err(de::Error::custom("duplicate topOrigin"));
                    }
                    seen_top_origin = true;
                    map.next_value::<serde_json::Value>()?;
                    out.top_origin = true;
                }
                // Read, not skipped: skipping would accept what no JSON reader accepts (a
                // number beyond f64, a lone surrogate), and the whole text must be JSON.
                _ => {
                    map.next_value::<serde_json::Value>()?;
                }
            }
        }
        Ok(out)
    }
}

fn set_once<T, E: de::Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::custom("duplicate member"));
    }
    *slot = Some(value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_domains_differ_and_the_challenge_covers_the_prefix() {
        assert_ne!(PASSKEY_DOMAIN, SIGNING_DOMAIN);
        let mut manual = Sha256::new();
        manual.update(PASSKEY_DOMAIN);
        manual.update(b"claims");
        let manual: [u8; 32] = manual.finalize().into();
        assert_eq!(challenge(b"claims"), manual);
        assert_ne!(
            challenge(b"claims"),
            <[u8; 32]>::from(Sha256::digest(b"claims"))
        );
    }

    #[test]
    fn fields_split_on_spaces_and_tabs() {
        assert_eq!(next_field("  a  b c"), ("a", "b c"));
        assert_eq!(next_field("a\tb"), ("a", "b"));
        assert_eq!(next_field("a"), ("a", ""));
        assert_eq!(next_field(""), ("", ""));
    }

    #[test]
    fn counter_rule() {
        assert!(counter_advances(0, 0));
        assert!(counter_advances(0, 1));
        assert!(counter_advances(5, 6));
        assert!(!counter_advances(5, 5));
        assert!(!counter_advances(5, 4));
        assert!(!counter_advances(5, 0));
        assert!(!counter_advances(1, 0));
        assert!(counter_advances(u32::MAX - 1, u32::MAX));
        assert!(!counter_advances(u32::MAX, u32::MAX));
    }
}
