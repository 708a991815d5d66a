//! The operator's passkey: approver records and files, the challenge, the verifier's every
//! refusal, the counter rule, the quorum, and the wire format that carries assertions.

// Test code: a panic is the failure report, and fixed-size fixtures are indexed directly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "support/authenticator.rs"]
mod authenticator;

use std::collections::BTreeSet;

use authenticator::{
    Ceremony, FLAGS_UP_UV, ORIGIN, RP_ID, SoftPasskey, client_data, is_high_s, other_s_form,
};
use base64::Engine as _;
use ed25519_dalek::SigningKey;
use fleetwatch_protocol::claims::{self, SIGNING_DOMAIN, SignedApproval};
use fleetwatch_protocol::passkey::{
    self, Algorithm, ApproverFileError, Approvers, Backup, FINGERPRINT_BYTES, Fingerprint,
    MAX_ASSERTIONS, MAX_CLIENT_DATA_JSON, MAX_CREDENTIAL_ID, PASSKEY_DOMAIN, PasskeyAssertion,
    PasskeyError, PasskeyRecord, RecordError, RelyingParty, check_counter, counter_advances,
    verify_approval, verify_assertion, verify_assertions,
};
use fleetwatch_protocol::refusal::Refusal;
use fleetwatch_protocol::wire::{
    self, DecodeError, ExecuteRequest, MAX_FRAME, Request, RequestEnvelope, WIRE_VERSION,
};
use sha2::{Digest as _, Sha256};

const CLAIMS: &[u8] = b"\x01 claims bytes exactly as the executor receives them";
const OTHER_CLAIMS: &[u8] = b"\x01 claims bytes of some other approval";

fn rp() -> RelyingParty {
    RelyingParty::new(RP_ID, [ORIGIN])
}

fn approvers(keys: &[&SoftPasskey]) -> Approvers {
    let text: String = keys
        .iter()
        .enumerate()
        .map(|(i, k)| k.line(&format!("Operator {i}")) + "\n")
        .collect();
    Approvers::parse(&text).expect("approver file")
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn both() -> [SoftPasskey; 2] {
    [SoftPasskey::es256(1), SoftPasskey::ed25519(2)]
}

/// Verifies one assertion of `key` made from `ceremony` against an approver file holding `key`.
fn verify_ceremony(key: &SoftPasskey, ceremony: &Ceremony) -> Result<u32, PasskeyError> {
    let assertion = key.assert_with(ceremony);
    verify_assertion(&assertion, CLAIMS, &approvers(&[key]), &rp()).map(|v| v.counter())
}

// ---- the challenge ---------------------------------------------------------------------------

#[test]
fn the_challenge_is_sha256_of_its_own_domain_then_the_claims_bytes() {
    let mut expected = Sha256::new();
    expected.update(PASSKEY_DOMAIN);
    expected.update(CLAIMS);
    let expected: [u8; 32] = expected.finalize().into();
    assert_eq!(passkey::challenge(CLAIMS), expected);
    assert_eq!(passkey::challenge_base64url(CLAIMS), b64url(&expected));
    assert_eq!(passkey::challenge_base64url(CLAIMS).len(), 43, "no padding");
    // Not the assistant's domain, and not the bare claims.
    assert_ne!(PASSKEY_DOMAIN, SIGNING_DOMAIN);
    let mut assistant = Sha256::new();
    assistant.update(SIGNING_DOMAIN);
    assistant.update(CLAIMS);
    assert_ne!(<[u8; 32]>::from(assistant.finalize()), expected);
    assert_ne!(passkey::challenge(CLAIMS), passkey::challenge(OTHER_CLAIMS));
}

// ---- records -------------------------------------------------------------------------------

#[test]
fn a_record_line_round_trips_for_both_algorithms() {
    for key in both() {
        let line = key.line("Ana Gómez");
        let parts: Vec<&str> = line.splitn(7, ' ').collect();
        assert_eq!(parts[0], "approver");
        assert_eq!(parts[1], "ana-g-mez");
        assert_eq!(parts[2], key.algorithm().name());
        assert_eq!(parts[3], b64url(&key.credential_id));
        assert_eq!(parts[4], b64(&key.spki()));
        assert_eq!(parts[5], "device-bound");
        assert_eq!(parts[6], "Ana Gómez");
        let record = PasskeyRecord::parse_line(&line).expect("parses");
        assert_eq!(record.person(), "ana-g-mez");
        assert_eq!(record.backup(), Backup::DeviceBound);
        assert_eq!(record.to_line(), line);
        assert_eq!(record.to_string(), line);
        assert_eq!(record.algorithm(), key.algorithm());
        assert_eq!(record.credential_id(), key.credential_id.as_slice());
        assert_eq!(record.spki(), key.spki().as_slice());
        assert_eq!(record.name(), "Ana Gómez");
    }
}

#[test]
fn the_name_is_the_rest_of_the_line_trimmed_and_kept_as_written() {
    let key = SoftPasskey::es256(1);
    let base = key.line("x");
    let prefix = base.strip_suffix(" x").unwrap();
    let record = PasskeyRecord::parse_line(&format!("  {prefix}\t Night  shift desk  ")).unwrap();
    assert_eq!(record.name(), "Night  shift desk");
    let tabs = prefix.replace(' ', "\t");
    assert_eq!(
        PasskeyRecord::parse_line(&format!("{tabs}\tAna"))
            .unwrap()
            .name(),
        "Ana"
    );
}

#[test]
fn the_fingerprint_is_the_start_of_sha256_of_the_spki_in_groups() {
    let key = SoftPasskey::ed25519(2);
    let record = key.record("Ana");
    let digest = Sha256::digest(key.spki());
    assert_eq!(record.fingerprint().0, digest[..FINGERPRINT_BYTES]);
    let shown = record.fingerprint().to_string();
    let hex: String = digest[..FINGERPRINT_BYTES]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let groups: Vec<&str> = shown.split(' ').collect();
    assert_eq!(groups.len(), FINGERPRINT_BYTES / 2);
    assert!(groups.iter().all(|g| g.len() == 4));
    assert_eq!(groups.concat(), hex);
    assert_eq!(Fingerprint::parse(&shown), Some(record.fingerprint()));
    assert_eq!(
        Fingerprint::parse(&hex.to_uppercase()),
        Some(record.fingerprint())
    );
    assert_eq!(Fingerprint::parse(&hex[..18]), None);
    assert_eq!(Fingerprint::parse(&format!("+{}", &hex[1..])), None);
    assert_eq!(Fingerprint::parse(&format!("g{}", &hex[1..])), None);
    assert_ne!(
        SoftPasskey::es256(1).record("Ana").fingerprint(),
        record.fingerprint()
    );
}

/// The line of `key` with one field replaced.
fn with_field(key: &SoftPasskey, index: usize, value: &str) -> String {
    let line = key.line("Ana");
    let mut parts: Vec<String> = line.splitn(7, ' ').map(str::to_owned).collect();
    parts[index] = value.to_owned();
    parts.join(" ")
}

fn p256_spki(point: &[u8]) -> Vec<u8> {
    let mut spki = SoftPasskey::es256(1).spki();
    spki.truncate(26);
    spki.extend_from_slice(point);
    spki
}

#[test]
fn record_refusals_each_name_what_is_wrong() {
    let es = SoftPasskey::es256(1);
    let ed = SoftPasskey::ed25519(2);
    let es_spki = es.spki();
    let ed_spki = ed.spki();

    // The uncompressed point of the ES256 key, and its compressed form.
    let point = es_spki[26..].to_vec();
    assert_eq!(point[0], 0x04);
    let mut compressed = vec![0x02 | (point[64] & 1)];
    compressed.extend_from_slice(&point[1..33]);
    let mut off_curve = point.clone();
    off_curve[64] ^= 0x01;
    // X = p (not below the field prime), Y as before.
    let mut x_is_p = point.clone();
    x_is_p[1..33].copy_from_slice(&[
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff,
    ]);
    // secp256k1's OID where prime256v1's belongs, same length.
    let mut k1 = es_spki.clone();
    k1[15..23].copy_from_slice(&[0x2b, 0x81, 0x04, 0x00, 0x0a, 0x00, 0x00, 0x00]);
    let mut trailing = es_spki.clone();
    trailing.push(0);
    let mut weak_ed = ed_spki[..12].to_vec();
    let mut identity = [0u8; 32];
    identity[0] = 1;
    weak_ed.extend_from_slice(&identity);
    // y = p + 1 names the identity too, non-canonically (p = 2^255 - 19).
    let mut non_canonical = ed_spki[..12].to_vec();
    let mut p_plus_one = [0xffu8; 32];
    p_plus_one[0] = 0xee;
    p_plus_one[31] = 0x7f;
    non_canonical.extend_from_slice(&p_plus_one);
    // A y that is no curve point at all (y = 2 is not on edwards25519's curve).
    let mut not_a_point = ed_spki[..12].to_vec();
    let mut two = [0u8; 32];
    two[0] = 2;
    not_a_point.extend_from_slice(&two);

    let cases: Vec<(&str, String, RecordError)> = vec![
        (
            "not an approver line",
            es.line("Ana").replacen("approver", "ed25519", 1),
            RecordError::NotAPasskeyLine,
        ),
        (
            "capitalised keyword",
            es.line("Ana").replacen("approver", "Approver", 1),
            RecordError::NotAPasskeyLine,
        ),
        (
            "a line from before persons",
            format!(
                "passkey es256 {} {} Ana",
                b64url(&es.credential_id),
                b64(&es_spki)
            ),
            RecordError::FromBeforePersons,
        ),
        (
            "person ID with a capital",
            with_field(&es, 1, "Ana"),
            RecordError::PersonIdInvalid,
        ),
        (
            "person ID that looks like an option",
            with_field(&es, 1, "-ana"),
            RecordError::PersonIdInvalid,
        ),
        (
            "unknown backup field",
            with_field(&es, 5, "backed-up"),
            RecordError::BackupUnknown,
        ),
        (
            "unknown algorithm",
            with_field(&es, 2, "rs256"),
            RecordError::UnknownAlgorithm,
        ),
        (
            "algorithm case",
            with_field(&es, 2, "ES256"),
            RecordError::UnknownAlgorithm,
        ),
        (
            "nothing after the keyword",
            "approver".to_owned(),
            RecordError::MissingField("person ID"),
        ),
        (
            "no algorithm",
            "approver ana".to_owned(),
            RecordError::MissingField("algorithm"),
        ),
        (
            "no credential",
            "approver ana es256".to_owned(),
            RecordError::MissingField("credential ID"),
        ),
        (
            "no key",
            format!("approver ana es256 {}", b64url(&es.credential_id)),
            RecordError::MissingField("public key"),
        ),
        (
            "no backup field",
            format!(
                "approver ana es256 {} {}",
                b64url(&es.credential_id),
                b64(&es_spki)
            ),
            RecordError::MissingField("backup field"),
        ),
        (
            "no name",
            format!(
                "approver ana es256 {} {} synced",
                b64url(&es.credential_id),
                b64(&es_spki)
            ),
            RecordError::NameEmpty,
        ),
        (
            "credential padded",
            with_field(&es, 3, &format!("{}=", b64url(&[1, 2, 3, 4, 5]))),
            RecordError::CredentialIdNotBase64url,
        ),
        (
            "credential in standard base64",
            with_field(&es, 3, "+/+/"),
            RecordError::CredentialIdNotBase64url,
        ),
        (
            "credential with a stray bit",
            with_field(&es, 3, "AB"),
            RecordError::CredentialIdNotBase64url,
        ),
        (
            "credential too long",
            with_field(&es, 3, &b64url(&[7u8; MAX_CREDENTIAL_ID + 1])),
            RecordError::CredentialIdLength,
        ),
        (
            "key not base64",
            with_field(&es, 4, "not*base64"),
            RecordError::KeyNotBase64,
        ),
        (
            "key unpadded",
            with_field(&es, 4, b64(&es_spki).trim_end_matches('=')),
            RecordError::KeyNotBase64,
        ),
        (
            "compressed point",
            with_field(&es, 4, &b64(&p256_spki(&compressed))),
            RecordError::KeyNotSpki,
        ),
        (
            "another curve's OID",
            with_field(&es, 4, &b64(&k1)),
            RecordError::KeyNotSpki,
        ),
        (
            "a byte after the SPKI",
            with_field(&es, 4, &b64(&trailing)),
            RecordError::KeyNotSpki,
        ),
        (
            "an Ed25519 SPKI under es256",
            with_field(&es, 4, &b64(&ed_spki)),
            RecordError::KeyNotSpki,
        ),
        (
            "a P-256 SPKI under ed25519",
            with_field(&ed, 4, &b64(&es_spki)),
            RecordError::KeyNotSpki,
        ),
        (
            "a raw point, no SPKI",
            with_field(&es, 4, &b64(&point)),
            RecordError::KeyNotSpki,
        ),
        (
            "P-256 point off the curve",
            with_field(&es, 4, &b64(&p256_spki(&off_curve))),
            RecordError::KeyNotOnCurve,
        ),
        (
            "P-256 X not below p",
            with_field(&es, 4, &b64(&p256_spki(&x_is_p))),
            RecordError::KeyNotOnCurve,
        ),
        (
            "Ed25519 y not a point",
            with_field(&ed, 4, &b64(&not_a_point)),
            RecordError::KeyNotOnCurve,
        ),
        (
            "Ed25519 non-canonical y",
            with_field(&ed, 4, &b64(&non_canonical)),
            RecordError::KeyNotOnCurve,
        ),
        (
            "Ed25519 weak key",
            with_field(&ed, 4, &b64(&weak_ed)),
            RecordError::WeakKey,
        ),
        (
            "name too long",
            with_field(&es, 6, &"é".repeat(65)),
            RecordError::NameTooLong,
        ),
        (
            "bell in the name",
            with_field(&es, 6, "Ana\u{7}"),
            RecordError::NameHasControl,
        ),
        (
            "tab inside the name",
            with_field(&es, 6, "Ana\tGómez"),
            RecordError::NameHasControl,
        ),
        (
            "right-to-left override",
            with_field(&es, 6, "Ana \u{202e}zemóG"),
            RecordError::NameHasControl,
        ),
        (
            "zero-width space",
            with_field(&es, 6, "An\u{200b}a"),
            RecordError::NameHasControl,
        ),
        (
            "no-break space",
            with_field(&es, 6, "Ana\u{a0}Gómez"),
            RecordError::NameHasControl,
        ),
        (
            "line separator",
            with_field(&es, 6, "Ana\u{2028}Gómez"),
            RecordError::NameHasControl,
        ),
        (
            "private use",
            with_field(&es, 6, "Ana\u{e000}"),
            RecordError::NameHasControl,
        ),
        (
            "unassigned",
            with_field(&es, 6, "Ana\u{378}"),
            RecordError::NameHasControl,
        ),
    ];
    for (case, line, expected) in cases {
        assert_eq!(
            PasskeyRecord::parse_line(&line),
            Err(expected),
            "{case}: {line}"
        );
        // In a file, the refusal names the line.
        let file = format!(
            "# approvers\n\n{}\n{line}\n",
            SoftPasskey::es256(9).line("Bo")
        );
        assert_eq!(
            Approvers::parse(&file),
            Err(ApproverFileError::Line {
                line: 4,
                error: expected
            }),
            "{case}"
        );
    }
    // The boundaries themselves are fine.
    assert!(PasskeyRecord::parse_line(&with_field(&es, 6, &"é".repeat(64))).is_ok());
    assert!(
        PasskeyRecord::parse_line(&with_field(&es, 3, &b64url(&[7u8; MAX_CREDENTIAL_ID]))).is_ok()
    );
    assert!(PasskeyRecord::parse_line(&with_field(&es, 6, "José O'Brien-Łukasz 李")).is_ok());
    // Empty credential ID through the constructor (base64url cannot spell it in a field).
    let made = |id: Vec<u8>, spki: Vec<u8>, name: &str| {
        PasskeyRecord::for_person("ana", Backup::Synced, Algorithm::Es256, id, spki, name)
    };
    assert_eq!(
        made(Vec::new(), es_spki.clone(), "Ana"),
        Err(RecordError::CredentialIdLength)
    );
    assert_eq!(made(vec![1], es_spki, " \t "), Err(RecordError::NameEmpty));
}

#[test]
fn an_approver_file_skips_comments_and_blank_lines_and_refuses_duplicates_by_line() {
    let a = SoftPasskey::es256(1);
    let b = SoftPasskey::ed25519(2);
    let file = format!(
        "# operators\r\n\r\n   # indented comment\n{}\r\n\t\n  {}  \n",
        a.line("Ana"),
        b.line("Bo")
    );
    let approvers = Approvers::parse(&file).expect("parses");
    assert_eq!(approvers.len(), 2);
    assert_eq!(approvers.records()[0].name(), "Ana");
    assert_eq!(approvers.records()[1].name(), "Bo");
    assert_eq!(approvers.get(&b.credential_id).unwrap().name(), "Bo");
    assert!(approvers.get(&[9, 9]).is_none());
    assert_eq!(Approvers::parse(&approvers.to_text()).unwrap(), approvers);
    assert!(Approvers::parse("# nobody yet\n\n").unwrap().is_empty());
    assert!(Approvers::parse("").unwrap().is_empty());

    // The same credential ID with another key, and the same key under another credential ID.
    let mut same_id = SoftPasskey::ed25519(3);
    same_id.credential_id = a.credential_id.clone();
    let mut same_key = SoftPasskey::es256(1);
    same_key.credential_id = vec![0x99; 16];
    for (twin, error) in [
        (&same_id, RecordError::DuplicateCredential),
        (&same_key, RecordError::DuplicateKey),
    ] {
        let file = format!("{}\n# c\n{}\n", a.line("Ana"), twin.line("Ana again"));
        assert_eq!(
            Approvers::parse(&file),
            Err(ApproverFileError::Line { line: 3, error })
        );
    }
    let message = Approvers::parse(&format!("x\n{}", a.line("Ana")))
        .unwrap_err()
        .to_string();
    assert_eq!(message, "line 1: the line does not start with `approver`");
}

#[test]
fn add_and_remove_keep_the_same_rules() {
    let a = SoftPasskey::es256(1);
    let b = SoftPasskey::ed25519(2);
    let mut approvers = Approvers::default();
    approvers.add(a.record("Ana")).unwrap();
    approvers.add(b.record("Bo")).unwrap();
    assert_eq!(
        approvers.add(a.record("Ana twice")),
        Err(RecordError::DuplicateCredential)
    );
    let removed = approvers.remove(&a.record("Ana").fingerprint()).unwrap();
    assert_eq!(removed.name(), "Ana");
    assert_eq!(approvers.len(), 1);
    assert!(approvers.remove(&a.record("Ana").fingerprint()).is_none());
}

// ---- the verifier ----------------------------------------------------------------------------

#[test]
fn a_genuine_assertion_verifies_for_both_algorithms() {
    for mut key in both() {
        let approvers = approvers(&[&key]);
        let assertion = key.assert(CLAIMS);
        let verified = verify_assertion(&assertion, CLAIMS, &approvers, &rp()).expect("verifies");
        assert_eq!(verified.counter(), 1);
        assert_eq!(verified.credential_id(), key.credential_id.as_slice());
        assert_eq!(verified.name(), "Operator 0");
        assert_eq!(verified.fingerprint(), key.record("x").fingerprint());
    }
}

#[test]
fn the_counter_is_read_big_endian() {
    let key = SoftPasskey::es256(1);
    let mut ceremony = Ceremony::for_claims(CLAIMS, 0x0102_0304);
    assert_eq!(verify_ceremony(&key, &ceremony), Ok(0x0102_0304));
    ceremony.counter = 0;
    assert_eq!(verify_ceremony(&key, &ceremony), Ok(0));
}

#[test]
fn an_assertion_over_other_claims_is_refused() {
    for mut key in both() {
        let assertion = key.assert(OTHER_CLAIMS);
        assert_eq!(
            verify_assertion(&assertion, CLAIMS, &approvers(&[&key]), &rp()),
            Err(PasskeyError::ChallengeMismatch)
        );
    }
}

#[test]
fn each_client_data_check_refuses_on_its_own() {
    let challenge = passkey::challenge(CLAIMS);
    let c = b64url(&challenge);
    let cases: Vec<(&str, Vec<u8>, PasskeyError)> = vec![
        ("enrolment type", client_data("webauthn.create", &challenge, ORIGIN), PasskeyError::WrongType),
        ("empty type", client_data("", &challenge, ORIGIN), PasskeyError::WrongType),
        ("another origin", client_data("webauthn.get", &challenge, "http://localhost:9999"), PasskeyError::OriginNotAllowed),
        ("the IP origin", client_data("webauthn.get", &challenge, "http://127.0.0.1:8768"), PasskeyError::OriginNotAllowed),
        ("origin with a slash", client_data("webauthn.get", &challenge, "http://localhost:8768/"), PasskeyError::OriginNotAllowed),
        ("a flipped challenge byte", {
            let mut other = challenge;
            other[0] ^= 1;
            client_data("webauthn.get", &other, ORIGIN)
        }, PasskeyError::ChallengeMismatch),
        ("challenge padded", format!(r#"{{"type":"webauthn.get","challenge":"{c}=","origin":"{ORIGIN}"}}"#).into_bytes(), PasskeyError::ChallengeMismatch),
        ("cross-origin", format!(r#"{{"type":"webauthn.get","challenge":"{c}","origin":"{ORIGIN}","crossOrigin":true}}"#).into_bytes(), PasskeyError::CrossOrigin),
        ("a top origin", format!(r#"{{"type":"webauthn.get","challenge":"{c}","origin":"{ORIGIN}","topOrigin":"https://example.com"}}"#).into_bytes(), PasskeyError::CrossOrigin),
        ("crossOrigin not a boolean", format!(r#"{{"type":"webauthn.get","challenge":"{c}","origin":"{ORIGIN}","crossOrigin":"false"}}"#).into_bytes(), PasskeyError::ClientDataMalformed),
        ("crossOrigin null", format!(r#"{{"type":"webauthn.get","challenge":"{c}","origin":"{ORIGIN}","crossOrigin":null}}"#).into_bytes(), PasskeyError::ClientDataMalformed),
        ("type twice", format!(r#"{{"type":"webauthn.create","type":"webauthn.get","challenge":"{c}","origin":"{ORIGIN}"}}"#).into_bytes(), PasskeyError::ClientDataMalformed),
        ("origin twice", format!(r#"{{"type":"webauthn.get","challenge":"{c}","origin":"https://evil.example","origin":"{ORIGIN}"}}"#).into_bytes(), PasskeyError::ClientDataMalformed),
        ("no origin", format!(r#"{{"type":"webauthn.get","challenge":"{c}"}}"#).into_bytes(), PasskeyError::ClientDataMalformed),
        ("no type", format!(r#"{{"challenge":"{c}","origin":"{ORIGIN}"}}"#).into_bytes(), PasskeyError::ClientDataMalformed),
        ("type not a string", format!(r#"{{"type":1,"challenge":"{c}","origin":"{ORIGIN}"}}"#).into_bytes(), PasskeyError::ClientDataMalformed),
        ("an array in the members' order", format!(r#"["webauthn.get","{c}","{ORIGIN}"]"#).into_bytes(), PasskeyError::ClientDataMalformed),
        ("a string", br#""webauthn.get""#.to_vec(), PasskeyError::ClientDataMalformed),
        ("not JSON", b"type=webauthn.get".to_vec(), PasskeyError::ClientDataMalformed),
        ("trailing text", [client_data("webauthn.get", &challenge, ORIGIN), b" x".to_vec()].concat(), PasskeyError::ClientDataMalformed),
        ("not UTF-8", [client_data("webauthn.get", &challenge, ORIGIN)[..10].to_vec(), vec![0xff, b'"', b'}']].concat(), PasskeyError::ClientDataMalformed),
        ("empty", Vec::new(), PasskeyError::ClientDataMalformed),
        ("a number beyond f64 in another member", format!(r#"{{"type":"webauthn.get","challenge":"{c}","origin":"{ORIGIN}","x":1e400}}"#).into_bytes(), PasskeyError::ClientDataMalformed),
        ("a lone surrogate in another member", format!(r#"{{"type":"webauthn.get","challenge":"{c}","origin":"{ORIGIN}","x":"\ud800"}}"#).into_bytes(), PasskeyError::ClientDataMalformed),
    ];
    for key in both() {
        for (case, client_data_json, expected) in &cases {
            let ceremony = Ceremony {
                client_data_json: client_data_json.clone(),
                ..Ceremony::for_claims(CLAIMS, 1)
            };
            assert_eq!(verify_ceremony(&key, &ceremony), Err(*expected), "{case}");
        }
    }
}

#[test]
fn client_data_that_browsers_write_verifies() {
    let challenge = passkey::challenge(CLAIMS);
    let c = b64url(&challenge);
    let accepted = [
        // Members in another order, escapes, extra members (Chromium adds one now and then),
        // nested unknown values and whitespace.
        format!(r#"{{"origin":"{ORIGIN}","challenge":"{c}","type":"webauthn.get"}}"#),
        format!(
            r#"{{"type":"webauthn\u002eget","challenge":"{c}","origin":"http:\/\/localhost:8768","crossOrigin":false}}"#
        ),
        format!(
            r#"{{"type":"webauthn.get","challenge":"{c}","origin":"{ORIGIN}","crossOrigin":false,"other_keys_can_be_added_here":"do not compare clientDataJSON against a template. See https://goo.gl/yabPex"}}"#
        ),
        format!(
            " {{ \"type\" : \"webauthn.get\" , \"challenge\" : \"{c}\" , \"origin\" : \"{ORIGIN}\" , \"x\" : [1, 2.5, {{\"y\": null}}] }} "
        ),
    ];
    for key in both() {
        for client_data_json in &accepted {
            let ceremony = Ceremony {
                client_data_json: client_data_json.clone().into_bytes(),
                ..Ceremony::for_claims(CLAIMS, 1)
            };
            assert_eq!(
                verify_ceremony(&key, &ceremony),
                Ok(1),
                "{client_data_json}"
            );
        }
    }
}

#[test]
fn each_authenticator_data_check_refuses_on_its_own() {
    // Every case below is signed genuinely, so only the check under test can refuse it.
    for key in both() {
        let good = Ceremony::for_claims(CLAIMS, 7);
        assert_eq!(verify_ceremony(&key, &good), Ok(7));
        let cases: Vec<(&str, Ceremony, PasskeyError)> = vec![
            (
                "other RP ID",
                Ceremony {
                    rp_id: "example.org".into(),
                    ..Ceremony::for_claims(CLAIMS, 7)
                },
                PasskeyError::RpIdMismatch,
            ),
            (
                "RP ID of the IP",
                Ceremony {
                    rp_id: "127.0.0.1".into(),
                    ..Ceremony::for_claims(CLAIMS, 7)
                },
                PasskeyError::RpIdMismatch,
            ),
            (
                "UV clear",
                Ceremony {
                    flags: 0x01,
                    ..Ceremony::for_claims(CLAIMS, 7)
                },
                PasskeyError::UserNotVerified,
            ),
            (
                "UP clear",
                Ceremony {
                    flags: 0x04,
                    ..Ceremony::for_claims(CLAIMS, 7)
                },
                PasskeyError::UserNotPresent,
            ),
            (
                "no flags",
                Ceremony {
                    flags: 0x00,
                    ..Ceremony::for_claims(CLAIMS, 7)
                },
                PasskeyError::UserNotPresent,
            ),
            (
                "other flags only",
                Ceremony {
                    flags: 0xfa,
                    ..Ceremony::for_claims(CLAIMS, 7)
                },
                PasskeyError::UserNotPresent,
            ),
        ];
        for (case, ceremony, expected) in cases {
            assert_eq!(verify_ceremony(&key, &ceremony), Err(expected), "{case}");
        }
        // Backup-eligible and backed-up flags beside UP and UV are fine.
        let synced = Ceremony {
            flags: FLAGS_UP_UV | 0x18,
            ..Ceremony::for_claims(CLAIMS, 0)
        };
        assert_eq!(verify_ceremony(&key, &synced), Ok(0));
        // The RP the executor is configured with is what counts.
        let assertion = key.assert_with(&good);
        let other_rp = RelyingParty::new("fleetwatch.example", [ORIGIN]);
        assert_eq!(
            verify_assertion(&assertion, CLAIMS, &approvers(&[&key]), &other_rp),
            Err(PasskeyError::RpIdMismatch)
        );
        let no_origin = RelyingParty::new(RP_ID, Vec::<String>::new());
        assert_eq!(
            verify_assertion(&assertion, CLAIMS, &approvers(&[&key]), &no_origin),
            Err(PasskeyError::OriginNotAllowed)
        );
        // 36 bytes of authenticator data, signed, are too short.
        let mut short = assertion;
        short.authenticator_data.pop();
        short.signature = key.sign(&short.authenticator_data, &short.client_data_json);
        assert_eq!(
            verify_assertion(&short, CLAIMS, &approvers(&[&key]), &rp()),
            Err(PasskeyError::AuthenticatorDataShort)
        );
        short.authenticator_data.clear();
        short.signature = key.sign(&short.authenticator_data, &short.client_data_json);
        assert_eq!(
            verify_assertion(&short, CLAIMS, &approvers(&[&key]), &rp()),
            Err(PasskeyError::AuthenticatorDataShort)
        );
    }
}

#[test]
fn a_flag_changed_after_signing_breaks_the_signature() {
    for mut key in both() {
        let mut assertion = key.assert(CLAIMS);
        // UV set on an assertion signed with UV clear: the flags are signed too.
        let mut cleared = Ceremony::for_claims(CLAIMS, 2);
        cleared.flags = 0x01;
        let mut uv_added = key.assert_with(&cleared);
        uv_added.authenticator_data[32] |= 0x04;
        assert_eq!(
            verify_assertion(&uv_added, CLAIMS, &approvers(&[&key]), &rp()),
            Err(PasskeyError::BadSignature)
        );
        // The counter raised after signing.
        assertion.authenticator_data[36] ^= 0x10;
        assert_eq!(
            verify_assertion(&assertion, CLAIMS, &approvers(&[&key]), &rp()),
            Err(PasskeyError::BadSignature)
        );
    }
}

#[test]
fn an_unknown_credential_is_refused() {
    let mut key = SoftPasskey::es256(1);
    let enrolled = SoftPasskey::es256(2);
    let assertion = key.assert(CLAIMS);
    assert_eq!(
        verify_assertion(&assertion, CLAIMS, &approvers(&[&enrolled]), &rp()),
        Err(PasskeyError::UnknownCredential)
    );
    assert_eq!(
        verify_assertion(&assertion, CLAIMS, &Approvers::default(), &rp()),
        Err(PasskeyError::UnknownCredential)
    );
}

#[test]
fn a_signature_by_another_key_or_over_other_bytes_is_refused() {
    for (mut key, impostor) in [
        (SoftPasskey::es256(1), SoftPasskey::es256(3)),
        (SoftPasskey::ed25519(2), SoftPasskey::ed25519(4)),
    ] {
        let genuine = key.assert(CLAIMS);
        // The enrolled credential ID, another key's signature over the very same bytes.
        let mut forged = genuine.clone();
        forged.signature = impostor.sign(&genuine.authenticator_data, &genuine.client_data_json);
        assert_eq!(
            verify_assertion(&forged, CLAIMS, &approvers(&[&key]), &rp()),
            Err(PasskeyError::BadSignature)
        );
        // The enrolled key, signing other bytes: the client data without its hash, and the
        // client data with one byte changed that no other check reads.
        let mut bare = genuine.clone();
        let mut message = genuine.authenticator_data.clone();
        message.extend_from_slice(&genuine.client_data_json);
        bare.signature = key.sign_message(&message);
        assert_eq!(
            verify_assertion(&bare, CLAIMS, &approvers(&[&key]), &rp()),
            Err(PasskeyError::BadSignature)
        );
        let mut spaced = genuine.clone();
        spaced.client_data_json.insert(1, b' ');
        assert_eq!(
            verify_assertion(&spaced, CLAIMS, &approvers(&[&key]), &rp()),
            Err(PasskeyError::BadSignature)
        );
        // Every single flipped signature bit.
        for bit in 0..genuine.signature.len() * 8 {
            let mut flipped = genuine.clone();
            flipped.signature[bit / 8] ^= 1 << (bit % 8);
            let result = verify_assertion(&flipped, CLAIMS, &approvers(&[&key]), &rp());
            assert!(
                matches!(
                    result,
                    Err(PasskeyError::BadSignature | PasskeyError::SignatureMalformed)
                ),
                "bit {bit}: {result:?}"
            );
        }
    }
}

#[test]
fn both_forms_of_a_valid_ecdsa_signature_verify() {
    let key = SoftPasskey::es256(1);
    let approvers = approvers(&[&key]);
    let mut seen_high = false;
    let mut seen_low = false;
    for counter in 1..40u32 {
        let assertion = key.assert_with(&Ceremony::for_claims(CLAIMS, counter));
        let mut other = assertion.clone();
        other.signature = other_s_form(&assertion.signature);
        assert_ne!(other.signature, assertion.signature);
        for form in [&assertion, &other] {
            if is_high_s(&form.signature) {
                seen_high = true;
            } else {
                seen_low = true;
            }
            assert_eq!(
                verify_assertion(form, CLAIMS, &approvers, &rp()).map(|v| v.counter()),
                Ok(counter)
            );
        }
    }
    assert!(seen_high && seen_low);
}

/// DER encodings of `r` and `s` (big-endian, no leading zero) in the given wrapping.
fn der(parts: &[&[u8]]) -> Vec<u8> {
    let body: Vec<u8> = parts.concat();
    [vec![0x30, u8::try_from(body.len()).unwrap()], body].concat()
}

fn int(bytes: &[u8]) -> Vec<u8> {
    [
        vec![0x02, u8::try_from(bytes.len()).unwrap()],
        bytes.to_vec(),
    ]
    .concat()
}

#[test]
fn malformed_der_is_refused_as_malformed() {
    let key = SoftPasskey::es256(1);
    let approvers = approvers(&[&key]);
    // A signature whose r and s need no leading zero (70 bytes), so a padded form still fits
    // the size cap and it is the DER rule that refuses it.
    let genuine = (1..)
        .map(|counter| key.assert_with(&Ceremony::for_claims(CLAIMS, counter)))
        .find(|a| a.signature.len() == 70)
        .unwrap();
    let signature = p256::ecdsa::Signature::from_der(&genuine.signature).unwrap();
    let (r, s) = signature.split_bytes();
    let (r, s) = (r.to_vec(), s.to_vec());
    let strip = |v: &[u8]| -> Vec<u8> {
        let at = v.iter().position(|b| *b != 0).unwrap_or(v.len() - 1);
        let v = &v[at..];
        if v[0] & 0x80 != 0 {
            [vec![0], v.to_vec()].concat()
        } else {
            v.to_vec()
        }
    };
    let (r_int, s_int) = (int(&strip(&r)), int(&strip(&s)));
    assert_eq!(
        der(&[&r_int, &s_int]),
        genuine.signature,
        "the helper rebuilds the DER"
    );
    let padded_r = int(&[vec![0x00], strip(&r)].concat());
    let mut long_length = vec![0x30, 0x81, u8::try_from(r_int.len() + s_int.len()).unwrap()];
    long_length.extend_from_slice(&r_int);
    long_length.extend_from_slice(&s_int);
    let mut trailing = genuine.signature.clone();
    trailing.push(0);
    let mut wrong_tag = genuine.signature.clone();
    wrong_tag[0] = 0x31;
    let raw: Vec<u8> = [r.clone(), s.clone()].concat();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("the raw 64-byte form", raw),
        ("a non-minimal integer", der(&[&padded_r, &s_int])),
        ("a long-form length", long_length),
        ("a trailing byte", trailing),
        ("a set, not a sequence", wrong_tag),
        ("one integer", der(&[&r_int])),
        ("three integers", der(&[&r_int, &int(&[1]), &int(&[1])])),
        ("r = 0", der(&[&int(&[0]), &s_int])),
        ("s = 0", der(&[&r_int, &int(&[0])])),
        ("a negative r", der(&[&int(&[0x80 | r[0], 1]), &s_int])),
        (
            "truncated",
            genuine.signature[..genuine.signature.len() - 1].to_vec(),
        ),
    ];
    for (case, bytes) in cases {
        let mut assertion = genuine.clone();
        assertion.signature = bytes;
        assert_eq!(
            verify_assertion(&assertion, CLAIMS, &approvers, &rp()),
            Err(PasskeyError::SignatureMalformed),
            "{case}"
        );
    }
    // An Ed25519 signature of the wrong length.
    let ed = SoftPasskey::ed25519(2);
    let mut short = ed.assert_with(&Ceremony::for_claims(CLAIMS, 1));
    short.signature.pop();
    assert_eq!(
        verify_assertion(&short, CLAIMS, &approvers_for(&ed), &rp()),
        Err(PasskeyError::SignatureMalformed)
    );
    short.signature.extend_from_slice(&[0, 0]);
    assert_eq!(
        verify_assertion(&short, CLAIMS, &approvers_for(&ed), &rp()),
        Err(PasskeyError::SignatureMalformed)
    );
}

fn approvers_for(key: &SoftPasskey) -> Approvers {
    approvers(&[key])
}

#[test]
fn a_non_canonical_ed25519_signature_is_refused() {
    // S + L (the group order) satisfies the lax equation; verify_strict refuses it.
    let ed = SoftPasskey::ed25519(2);
    let mut assertion = ed.assert_with(&Ceremony::for_claims(CLAIMS, 1));
    const L: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];
    let mut carry = 0u16;
    for (byte, l) in assertion.signature[32..].iter_mut().zip(L) {
        let sum = u16::from(*byte) + u16::from(l) + carry;
        *byte = (sum & 0xff) as u8;
        carry = sum >> 8;
    }
    assert_eq!(carry, 0);
    assert_eq!(
        verify_assertion(&assertion, CLAIMS, &approvers_for(&ed), &rp()),
        Err(PasskeyError::BadSignature)
    );
}

#[test]
fn oversize_fields_and_too_many_assertions_are_refused_before_any_work() {
    let mut key = SoftPasskey::es256(1);
    let approvers = approvers(&[&key]);
    let genuine = key.assert(CLAIMS);
    let mut cases: Vec<PasskeyAssertion> = Vec::new();
    let mut a = genuine.clone();
    a.credential_id = vec![1; MAX_CREDENTIAL_ID + 1];
    cases.push(a);
    let mut a = genuine.clone();
    a.credential_id.clear();
    cases.push(a);
    let mut a = genuine.clone();
    a.authenticator_data
        .resize(passkey::MAX_AUTHENTICATOR_DATA + 1, 0);
    cases.push(a);
    let mut a = genuine.clone();
    a.client_data_json.resize(MAX_CLIENT_DATA_JSON + 1, b' ');
    cases.push(a);
    let mut a = genuine.clone();
    a.signature.resize(passkey::MAX_SIGNATURE + 1, 0);
    cases.push(a);
    for assertion in cases {
        assert_eq!(
            verify_assertion(&assertion, CLAIMS, &approvers, &rp()),
            Err(PasskeyError::FieldOutOfBounds)
        );
    }
    // At the caps, the size is not what refuses.
    let mut at_cap = genuine.clone();
    at_cap.client_data_json.resize(MAX_CLIENT_DATA_JSON, b' ');
    at_cap.signature = key.sign(&at_cap.authenticator_data, &at_cap.client_data_json);
    assert!(verify_assertion(&at_cap, CLAIMS, &approvers, &rp()).is_ok());

    let many = vec![genuine.clone(); MAX_ASSERTIONS + 1];
    assert_eq!(
        verify_assertions(&many, CLAIMS, &approvers, &rp()),
        Err(PasskeyError::TooManyAssertions)
    );
    let enough = vec![genuine; MAX_ASSERTIONS];
    assert!(verify_assertions(&enough, CLAIMS, &approvers, &rp()).is_ok());
}

// ---- refusal codes -------------------------------------------------------------------------

#[test]
fn every_passkey_error_has_its_own_refusal_code_and_message() {
    let errors = [
        PasskeyError::TooManyAssertions,
        PasskeyError::FieldOutOfBounds,
        PasskeyError::UnknownCredential,
        PasskeyError::ClientDataMalformed,
        PasskeyError::WrongType,
        PasskeyError::ChallengeMismatch,
        PasskeyError::OriginNotAllowed,
        PasskeyError::CrossOrigin,
        PasskeyError::AuthenticatorDataShort,
        PasskeyError::RpIdMismatch,
        PasskeyError::UserNotPresent,
        PasskeyError::UserNotVerified,
        PasskeyError::SignatureMalformed,
        PasskeyError::BadSignature,
        PasskeyError::CounterNotIncreased,
        PasskeyError::PasskeyRequired,
        PasskeyError::QuorumNotMet { have: 1, need: 2 },
    ];
    let refusals: Vec<Refusal> = errors.iter().map(|e| e.refusal()).collect();
    let codes: BTreeSet<&str> = refusals.iter().map(Refusal::code).collect();
    assert_eq!(codes.len(), errors.len(), "two passkey errors share a code");
    assert!(codes.iter().all(|c| c.starts_with("passkey_")));
    // None of them is one of the assistant signature's codes.
    for other in [
        Refusal::BadSignature,
        Refusal::UnknownKey,
        Refusal::NoSignature,
    ] {
        assert!(!codes.contains(other.code()));
    }
    assert_eq!(
        PasskeyError::QuorumNotMet { have: 1, need: 2 }.refusal(),
        Refusal::PasskeyQuorumNotMet { have: 1, need: 2 }
    );
    let message = Refusal::PasskeyQuorumNotMet { have: 1, need: 2 }.message();
    assert!(message.contains("from 2 different operators"), "{message}");
    assert!(message.contains("carried 1"), "{message}");
}

// ---- counter and quorum ------------------------------------------------------------------

#[test]
fn the_counter_rule() {
    for (stored, new, ok) in [
        (0, 0, true),
        (0, 1, true),
        (41, 42, true),
        (41, 41, false),
        (41, 40, false),
        (41, 0, false),
        (0, u32::MAX, true),
        (u32::MAX, u32::MAX, false),
    ] {
        assert_eq!(counter_advances(stored, new), ok, "{stored} -> {new}");
        assert_eq!(
            check_counter(stored, new),
            if ok {
                Ok(())
            } else {
                Err(PasskeyError::CounterNotIncreased)
            }
        );
    }
}

#[test]
fn a_replayed_assertion_fails_the_counter_after_the_first_use() {
    // What the executor does in the nonce's transaction: read the stored counter, check, store.
    let mut key = SoftPasskey::es256(1);
    let approvers = approvers(&[&key]);
    key.counter = 41;
    let assertion = key.assert(CLAIMS);
    let mut stored = 41u32;
    for attempt in 0..2 {
        let verified =
            verify_assertions(std::slice::from_ref(&assertion), CLAIMS, &approvers, &rp())
                .expect("the signature itself stays valid");
        let uses = verified.uses();
        let result = uses[0].next_counter(stored);
        if attempt == 0 {
            stored = result.expect("first use");
            assert_eq!(stored, 42);
        } else {
            assert_eq!(result, Err(PasskeyError::CounterNotIncreased));
        }
    }
}

#[test]
fn the_same_passkey_twice_counts_once_and_both_counters_are_judged() {
    let mut a = SoftPasskey::es256(1);
    let mut b = SoftPasskey::ed25519(2);
    let approvers = approvers(&[&a, &b]);

    let first = a.assert(CLAIMS);
    let again = a.assert(CLAIMS);
    let twice =
        verify_assertions(&[first.clone(), again.clone()], CLAIMS, &approvers, &rp()).unwrap();
    assert_eq!(twice.assertions().len(), 2);
    assert_eq!(twice.distinct(), 1);
    assert_eq!(twice.require(1), Ok(()));
    assert_eq!(
        twice.require(2),
        Err(PasskeyError::QuorumNotMet { have: 1, need: 2 })
    );
    let uses = twice.uses();
    assert_eq!(uses.len(), 1);
    assert_eq!(
        (uses[0].lowest_counter(), uses[0].highest_counter()),
        (1, 2)
    );
    assert_eq!(uses[0].name(), "Operator 0");
    assert_eq!(uses[0].next_counter(0), Ok(2));
    // The lower of the two must still beat the stored value.
    assert_eq!(
        uses[0].next_counter(1),
        Err(PasskeyError::CounterNotIncreased)
    );
    // Exactly the same assertion twice is one person too.
    let same =
        verify_assertions(&[first.clone(), first.clone()], CLAIMS, &approvers, &rp()).unwrap();
    assert_eq!(same.distinct(), 1);

    let other = b.assert(CLAIMS);
    let two = verify_assertions(
        &[first.clone(), other.clone(), again],
        CLAIMS,
        &approvers,
        &rp(),
    )
    .unwrap();
    assert_eq!(two.distinct(), 2);
    assert_eq!(two.require(2), Ok(()));
    assert_eq!(
        two.require(3),
        Err(PasskeyError::QuorumNotMet { have: 2, need: 3 })
    );
    let names: Vec<String> = two.uses().iter().map(|u| u.name().to_owned()).collect();
    assert_eq!(names, ["Operator 0", "Operator 1"]);

    // One bad assertion refuses the whole approval, whatever else verified.
    let mut bad = other;
    bad.signature[10] ^= 1;
    assert!(verify_assertions(&[first, bad], CLAIMS, &approvers, &rp()).is_err());
}

#[test]
fn no_assertion_meets_a_quorum_of_zero_and_nothing_else() {
    let a = SoftPasskey::es256(1);
    let none = verify_assertions(&[], CLAIMS, &approvers(&[&a]), &rp()).unwrap();
    assert_eq!(none.distinct(), 0);
    assert_eq!(none.require(0), Ok(()));
    assert_eq!(none.require(1), Err(PasskeyError::PasskeyRequired));
    assert_eq!(none.require(2), Err(PasskeyError::PasskeyRequired));
    assert_eq!(
        PasskeyError::PasskeyRequired.refusal(),
        Refusal::PasskeyRequired
    );
}

// ---- the wire ------------------------------------------------------------------------------

fn assistant_key() -> SigningKey {
    SigningKey::from_bytes(&[0x42; 32])
}

#[test]
fn an_approval_carries_the_assistant_signature_and_the_passkeys_over_the_same_bytes() {
    let mut a = SoftPasskey::es256(1);
    let mut b = SoftPasskey::ed25519(2);
    let approvers = approvers(&[&a, &b]);
    let claims_bytes = CLAIMS.to_vec();
    let passkeys = vec![a.assert(&claims_bytes), b.assert(&claims_bytes)];
    let signed = claims::sign(claims_bytes.clone(), &assistant_key()).with_passkeys(passkeys);
    assert_eq!(
        signed.claims, claims_bytes,
        "the claims bytes are untouched"
    );

    let request = Request::Execute(ExecuteRequest {
        approval: signed.clone(),
        assistant_chain_head: [7; 32],
    });
    let body = wire::encode_request(&request).unwrap();
    let Request::Execute(received) = wire::decode_request(&body).unwrap() else {
        panic!("not an execute");
    };
    assert_eq!(received.approval, signed);

    let trusted = claims::TrustedKeys::from_keys([assistant_key().verifying_key()]);
    assert_eq!(
        trusted.verify(&received.approval),
        Ok(claims_bytes.as_slice())
    );
    let verified = verify_approval(&received.approval, &approvers, &rp()).unwrap();
    assert_eq!(verified.require(2), Ok(()));

    // Claims changed on the way: the assistant signature and every passkey refuse.
    let mut altered = received.approval.clone();
    altered.claims[0] ^= 1;
    assert!(trusted.verify(&altered).is_err());
    assert_eq!(
        verify_approval(&altered, &approvers, &rp()),
        Err(PasskeyError::ChallengeMismatch)
    );
    // An approval signed by the assistant alone carries no passkey.
    let alone = claims::sign(claims_bytes, &assistant_key());
    assert!(alone.passkeys.is_empty());
    assert_eq!(
        verify_approval(&alone, &approvers, &rp())
            .unwrap()
            .require(1),
        Err(PasskeyError::PasskeyRequired)
    );
}

#[test]
fn the_wire_version_moved_and_an_old_peer_hears_unknown_version() {
    // Version 13 refuses an asker's own approval where the asker may not count.
    assert_eq!(WIRE_VERSION, 13);
    // What a peer of the previous version sends is refused as a version, not as malformed.
    let old = postcard::to_stdvec(&RequestEnvelope {
        version: WIRE_VERSION - 1,
        request: Request::Status,
    })
    .unwrap();
    assert_eq!(wire::decode_request(&old), Err(DecodeError::UnknownVersion));
    assert_eq!(
        wire::decode_response(&old),
        Err(DecodeError::UnknownVersion)
    );
    // And what this build sends starts with its version alone, which is all a previous build
    // reads before it refuses.
    let mut key = SoftPasskey::es256(1);
    let signed =
        claims::sign(CLAIMS.to_vec(), &assistant_key()).with_passkeys(vec![key.assert(CLAIMS)]);
    let body = wire::encode_request(&Request::Execute(ExecuteRequest {
        approval: signed,
        assistant_chain_head: [0; 32],
    }))
    .unwrap();
    let (version, _) = postcard::take_from_bytes::<u16>(&body).unwrap();
    assert_eq!(version, WIRE_VERSION);
    assert_ne!(version, WIRE_VERSION - 1);
}

#[test]
fn the_largest_approval_the_verifier_accepts_still_fits_a_frame() {
    let assertion = PasskeyAssertion {
        credential_id: vec![1; MAX_CREDENTIAL_ID],
        authenticator_data: vec![2; passkey::MAX_AUTHENTICATOR_DATA],
        client_data_json: vec![3; MAX_CLIENT_DATA_JSON],
        signature: vec![4; passkey::MAX_SIGNATURE],
    };
    let signed = SignedApproval {
        claims: vec![5; 4096],
        ..claims::sign(Vec::new(), &assistant_key())
    }
    .with_passkeys(vec![assertion; MAX_ASSERTIONS]);
    let body = wire::encode_request(&Request::Execute(ExecuteRequest {
        approval: signed,
        assistant_chain_head: [0; 32],
    }))
    .expect("fits");
    assert!(body.len() <= MAX_FRAME, "{} bytes", body.len());
}

#[test]
fn a_scope_rides_on_the_approver_line_and_decides_who_counts() {
    let ana = SoftPasskey::es256(71);
    let ana_backup = SoftPasskey::ed25519(72);
    let bo = SoftPasskey::ed25519(73);
    let scope = passkey::Scope::parse("calm@abcdef0123").unwrap();
    let line = PasskeyRecord::parse_line(&ana.person_line("ana", "Ana Gómez"))
        .unwrap()
        .with_scope(Some(scope.clone()))
        .to_line();
    assert!(
        line.ends_with(" device-bound may=calm@abcdef0123 Ana Gómez"),
        "{line}"
    );
    let read = PasskeyRecord::parse_line(&line).unwrap();
    assert_eq!(read.scope(), Some(&scope));
    assert_eq!(read.name(), "Ana Gómez");
    assert_eq!(read.to_line(), line, "the line reads back as written");
    // A malformed scope, and a name that would read back as one, are refused.
    let bad = line.replace("may=calm@abcdef0123", "may=calm@room");
    assert_eq!(
        PasskeyRecord::parse_line(&bad),
        Err(RecordError::ScopeInvalid)
    );
    assert_eq!(
        passkey::check_display_name("may=all@team Ana"),
        Err(RecordError::NameLooksLikeScope)
    );
    // One person, one scope: a backup passkey with another scope is refused.
    let unscoped_backup = ana_backup.person_line("ana", "Ana Gómez");
    assert_eq!(
        Approvers::parse(&format!("{line}\n{unscoped_backup}\n")),
        Err(ApproverFileError::Line {
            line: 2,
            error: RecordError::PersonScopedTwice
        })
    );

    // Counting: a calm change in the person's room counts them; a disruptive one, or another
    // room, does not, and the refusal says it is the scope.
    let file = Approvers::parse(&format!("{line}\n{}\n", bo.person_line("bo", "Bo"))).unwrap();
    let mut ana = ana;
    let mut bo = bo;
    let both = SignedApproval {
        claims: CLAIMS.to_vec(),
        signatures: Vec::new(),
        passkeys: vec![ana.assert(CLAIMS), bo.assert(CLAIMS)],
    };
    let verified = verify_approval(&both, &file, &rp()).unwrap();
    let room = vec!["abcdef0123".to_owned()];
    let elsewhere = vec!["abcdef0999".to_owned()];
    assert_eq!(
        verified.require_counting(2, ("batch_recording", false, &room), None),
        Ok(())
    );
    assert_eq!(
        verified.require_counting(2, ("batch_reboot", true, &room), None),
        Err(PasskeyError::OutOfScope { have: 1, need: 2 })
    );
    assert_eq!(
        verified.require_counting(2, ("batch_recording", false, &elsewhere), None),
        Err(PasskeyError::OutOfScope { have: 1, need: 2 })
    );
    // Enough persons in scope without them: the out-of-scope assertion does not refuse.
    assert_eq!(
        verified.require_counting(1, ("batch_reboot", true, &room), None),
        Ok(())
    );
    assert_eq!(
        PasskeyError::OutOfScope { have: 1, need: 2 }.refusal(),
        Refusal::PasskeyOutOfScope { have: 1, need: 2 }
    );
}
