//! The fuzz targets' properties as ordinary tests: every committed seed, every crasher the
//! fuzzer ever found (as a named test), and property tests over random and mutated inputs, so
//! the properties hold on a machine that cannot build the fuzzer at all.
//!
//! The properties themselves live once, in `fuzz/src/checks.rs`, compiled into both.

// Test code: a panic is the failure report, and fixed-size fixtures are indexed directly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "../../fuzz/src/checks.rs"]
mod checks;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use fleetwatch_protocol::claims::{
    self, ApprovalClaims, ApprovalSignature, CLAIMS_VERSION, KeyId, SignedApproval, Slot,
    TrustedKeys,
};
use fleetwatch_protocol::fleet::RoomBlock;
use fleetwatch_protocol::passkey::{self, Approvers, PasskeyAssertion, RelyingParty};
use fleetwatch_protocol::policy::Policy;
use fleetwatch_protocol::refusal::Refusal;
use fleetwatch_protocol::wire::{
    self, ChannelFacts, DescribeRequest, Description, DeviceFacts, EventFacts, ExecuteRequest,
    Outcome, OutcomeKind, Request, Response, StatusReport, StreamFacts, ToolQuorum,
};
use proptest::prelude::*;

const TARGETS: [&str; 7] = [
    "frame",
    "claims",
    "canonical",
    "policy",
    "fleet",
    "schema",
    "passkey",
];

/// Largest seed file and largest corpus folder the repository carries.
const MAX_SEED_BYTES: u64 = 64 * 1024;
const MAX_CORPUS_BYTES: u64 = 2 * 1024 * 1024;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
}

/// The committed seeds of one target, sorted by file name.
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(corpus_dir(target))
        .unwrap_or_else(|e| panic!("corpus of {target}: {e}"))
        .map(|entry| {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(entry.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

fn check(target: &str, data: &[u8]) {
    match target {
        "frame" => checks::frame(data),
        "claims" => checks::claims(data),
        "canonical" => checks::canonical(data),
        "policy" => checks::policy(data),
        "fleet" => checks::fleet(data),
        "schema" => checks::schema(data),
        "passkey" => checks::passkey(data),
        other => panic!("no target {other}"),
    }
}

// ---- generated seeds -----------------------------------------------------------------------

fn test_key() -> SigningKey {
    SigningKey::from_bytes(&checks::TEST_SEED)
}

fn sample_claims(tool: &str, arguments: &str, targets: &[&str]) -> ApprovalClaims {
    let fingerprint: BTreeMap<&str, serde_json::Value> = targets
        .iter()
        .map(|t| {
            (
                *t,
                serde_json::json!({"next_event_start": null, "online": true, "recording": false}),
            )
        })
        .collect();
    ApprovalClaims {
        version: CLAIMS_VERSION,
        approval_id: [0x5a; 16],
        proposal_id: 7,
        tool: tool.to_owned(),
        arguments: arguments.to_owned(),
        targets: targets.iter().map(|t| (*t).to_owned()).collect(),
        names: Vec::new(),
        fingerprint: serde_json::to_string(&fingerprint).unwrap(),
        schema_version: 1,
        policy_digest: [0x11; 32],
        slot: Slot::Sandbox,
        approved_at: 1_760_000_000,
        expires_at: 1_760_000_120,
        page_session: [0x22; 16],
        asked_by: String::new(),
    }
}

fn recording_claims() -> ApprovalClaims {
    sample_claims(
        "batch_recording",
        r#"{"action":"start","channel_ids":["0123abcd-1"]}"#,
        &["0123abcd"],
    )
}

fn reboot_claims() -> ApprovalClaims {
    sample_claims(
        "batch_reboot",
        r#"{"device_ids":["0123abcd","89ef4567"]}"#,
        &["0123abcd", "89ef4567"],
    )
}

fn signed(claims: &ApprovalClaims) -> SignedApproval {
    claims::sign(claims.encode().unwrap(), &test_key())
}

fn frame_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let request = |r: Request| wire::encode_request(&r).unwrap();
    let response = |r: Response| wire::encode_response(&r).unwrap();
    let device = DeviceFacts {
        id: "0123abcd".to_owned(),
        on_team: true,
        allowlisted: true,
        name: "Room 101".to_owned(),
        model: "Pearl Nano".to_owned(),
        firmware: "4.24.3".to_owned(),
        newest_firmware: "4.24.6".to_owned(),
        online: true,
        recording: false,
        channels: vec![ChannelFacts {
            number: "1".to_owned(),
            name: "Lectern".to_owned(),
            recording: false,
            warnings: vec![fleetwatch_protocol::fleet::Warning {
                id: "channel_no_signal".to_owned(),
                label: "No signal".to_owned(),
                message: "The input has no signal".to_owned(),
                source: Some("HDMI-A".to_owned()),
                channel: None,
                channel_name: None,
                used_percent: None,
            }],
        }],
        event: Some(EventFacts {
            id: "evt-1".to_owned(),
            title: "Lecture".to_owned(),
            start: "2026-09-24T20:08:00Z".to_owned(),
            end: Some("2026-09-24T21:08:00Z".to_owned()),
            confirmed: Some(false),
        }),
        warnings: Vec::new(),
        block: RoomBlock::Soon(12),
    };
    vec![
        ("request_status.bin", request(Request::Status)),
        ("request_receipt.bin", request(Request::Receipt([0x5a; 16]))),
        ("request_rooms.bin", request(Request::Rooms)),
        (
            "response_rooms.bin",
            response(Response::Rooms(wire::RoomList {
                rooms: vec![wire::RoomFacts {
                    id: "0123abcd".to_owned(),
                    name: "Test Room A".to_owned(),
                    channels: vec![("1".to_owned(), "Program".to_owned())],
                }],
                left_out: 0,
            })),
        ),
        (
            "response_receipt.bin",
            response(Response::Receipt(Some(r#"{"format":1}"#.to_owned()))),
        ),
        (
            "request_describe.bin",
            request(Request::Describe(DescribeRequest {
                tool: "batch_recording".to_owned(),
                arguments: r#"{"action":"start","channel_ids":["0123abcd-1"]}"#.to_owned(),
            })),
        ),
        (
            "request_execute.bin",
            request(Request::Execute(ExecuteRequest {
                approval: signed(&recording_claims()),
                assistant_chain_head: [0x33; 32],
            })),
        ),
        (
            "response_described.bin",
            response(Response::Described(Description {
                targets: vec!["0123abcd".to_owned()],
                names: Vec::new(),
                devices: vec![device],
                stream: Some(StreamFacts {
                    id: "0b5c1a52-8f0e-4d7a-9a64-4f3a2f1e9c10".to_owned(),
                    found: true,
                    name: "Main hall".to_owned(),
                    host: "live.example.com".to_owned(),
                    publisher: wire::PublisherState::Running,
                }),
                event_matches: Some(true),
                fingerprint: recording_claims().fingerprint,
                team_id: Some("team-1".to_owned()),
                disruptive: true,
                policy_digest: [0x11; 32],
                schema_version: 1,
                frozen: Some(fleetwatch_protocol::wire::FreezeReport {
                    start: 1_796_000_000,
                    end: 1_796_086_400,
                    holds: "disruptive changes".into(),
                    reason: "finals week".into(),
                    in_force: true,
                }),
            })),
        ),
        (
            "response_executed_done.bin",
            response(Response::Executed(Outcome {
                kind: OutcomeKind::Done,
                chain_head: [0x44; 32],
            })),
        ),
        (
            "response_executed_error.bin",
            response(Response::Executed(Outcome {
                kind: OutcomeKind::Error(BTreeMap::from([(
                    "0123abcd".to_owned(),
                    "device is offline".to_owned(),
                )])),
                chain_head: [0x44; 32],
            })),
        ),
        (
            "response_executed_unknown.bin",
            response(Response::Executed(Outcome {
                kind: OutcomeKind::Unknown,
                chain_head: [0x44; 32],
            })),
        ),
        (
            "response_status.bin",
            response(Response::Status(StatusReport {
                version: "0.1.0".to_owned(),
                fence_configured: true,
                sandbox_sign_in: true,
                key_ids: vec![KeyId::of(&test_key().verifying_key())],
                policy_digest: [0x55; 32],
                chain_head: [0x44; 32],
                passkeys_enrolled: 2,
                approvers: Vec::new(),
                trial: false,
                quorums: vec![ToolQuorum {
                    tool: "batch_reboot".to_owned(),
                    calm: 1,
                    disruptive: 2,
                }],
                limits: fleetwatch_protocol::wire::LimitsReport {
                    cooldown_minutes: 10,
                    writes_per_hour: 20,
                    writes_last_hour: 3,
                    open_event_minutes: 240,
                    cooling: vec![fleetwatch_protocol::wire::Cooling {
                        device: "abcdef0123".to_owned(),
                        changed_at: 1_800_000_000,
                        until: 1_800_000_600,
                    }],
                },
                confirm_origin_not_held: Some("uid 1000 also listens on port 8768".to_owned()),
                freeze: vec![fleetwatch_protocol::wire::FreezeReport {
                    start: 1_796_000_000,
                    end: 1_796_086_400,
                    holds: "every change".into(),
                    reason: "council budget session".into(),
                    in_force: false,
                }],
            })),
        ),
        (
            "response_refused.bin",
            response(Response::Refused(Refusal::BadSignature)),
        ),
        (
            "response_refused_fingerprint.bin",
            response(Response::Refused(Refusal::FingerprintMoved)),
        ),
    ]
}

fn claims_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let stranger = SigningKey::from_bytes(&checks::STRANGER_SEED);
    let mut two = signed(&reboot_claims());
    // A second signer the executor does not know is ignored, not refused.
    two.signatures.push(ApprovalSignature {
        key_id: KeyId::of(&stranger.verifying_key()),
        signature: claims::sign(two.claims.clone(), &stranger).signatures[0]
            .signature
            .clone(),
    });
    vec![
        ("claims_recording.bin", recording_claims().encode().unwrap()),
        ("claims_reboot.bin", reboot_claims().encode().unwrap()),
        (
            "signed_recording.bin",
            postcard::to_stdvec(&signed(&recording_claims())).unwrap(),
        ),
        ("signed_two_signers.bin", postcard::to_stdvec(&two).unwrap()),
    ]
}

fn passkey_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let client_data = |origin: &str| {
        format!(
            r#"{{"type":"webauthn.get","challenge":"{}","origin":"{origin}","crossOrigin":false}}"#,
            passkey::challenge_base64url(checks::PASSKEY_CLAIMS)
        )
        .into_bytes()
    };
    // The first byte picks the algorithm: `{` (0x7b, odd) signs with Ed25519, a leading space
    // (0x20, even) with ES256.
    let good = client_data(checks::PASSKEY_ORIGIN);
    let spaced = [b" ".to_vec(), good.clone()].concat();
    vec![
        ("client_data_ed25519.json", good.clone()),
        ("client_data_es256.json", spaced),
        (
            "client_data_other_origin.json",
            client_data("http://localhost:1"),
        ),
        (
            "approvers.txt",
            format!("# approvers\n\n{}", checks::passkey_approver_file()).into_bytes(),
        ),
        (
            "assertion_ed25519.bin",
            postcard::to_stdvec(&checks::passkey_assertion(true, &good)).unwrap(),
        ),
        (
            "assertion_es256.bin",
            postcard::to_stdvec(&checks::passkey_assertion(false, &good)).unwrap(),
        ),
    ]
}

/// The frame and claims seeds are real encodings; when the wire or claims format changes they
/// must be written again, or the fuzzer would start from bytes nothing sends any more:
/// `FLEETWATCH_WRITE_FUZZ_SEEDS=1 cargo test -p fleetwatch-protocol --test fuzz_regressions generated_seeds`.
#[test]
fn generated_seeds_match_the_committed_corpus() {
    let write = std::env::var("FLEETWATCH_WRITE_FUZZ_SEEDS").is_ok_and(|v| v == "1");
    for (target, generated) in [
        ("frame", frame_seeds()),
        ("claims", claims_seeds()),
        ("passkey", passkey_seeds()),
    ] {
        let dir = corpus_dir(target);
        for (name, bytes) in generated {
            let path = dir.join(name);
            if write {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &bytes).unwrap();
            }
            let committed = std::fs::read(&path).unwrap_or_default();
            assert!(
                committed == bytes,
                "{} is stale; regenerate with FLEETWATCH_WRITE_FUZZ_SEEDS=1",
                path.display()
            );
        }
    }
}

#[test]
fn every_committed_seed_holds_its_property_and_stays_small() {
    for target in TARGETS {
        let seeds = seeds(target);
        assert!(seeds.len() >= 3, "{target} has too few seeds");
        let mut total = 0u64;
        for (name, bytes) in &seeds {
            let size = bytes.len() as u64;
            assert!(size <= MAX_SEED_BYTES, "{target}/{name} is {size} bytes");
            total += size;
            check(target, bytes);
        }
        assert!(
            total <= MAX_CORPUS_BYTES,
            "{target} corpus is {total} bytes"
        );
    }
}

/// Seeds that start the fuzzer inside the accepted language rather than at its edge.
#[test]
fn committed_seeds_are_valid_inputs() {
    for (name, bytes) in seeds("frame") {
        assert!(
            wire::decode_request(&bytes).is_ok() || wire::decode_response(&bytes).is_ok(),
            "frame/{name} does not decode"
        );
    }
    let trusted = TrustedKeys::from_keys([test_key().verifying_key()]);
    for (name, bytes) in seeds("claims") {
        let as_claims = ApprovalClaims::decode(&bytes).is_ok();
        let as_signed = postcard::from_bytes::<SignedApproval>(&bytes)
            .is_ok_and(|s| trusted.verify(&s).is_ok());
        assert!(as_claims || as_signed, "claims/{name} is neither");
    }
    for (name, bytes) in seeds("canonical") {
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            fleetwatch_protocol::canonical::from_str(&text).is_ok(),
            "canonical/{name}"
        );
    }
    let policy = std::fs::read_to_string(corpus_dir("policy").join("tool_policy.yaml")).unwrap();
    Policy::from_yaml(&policy).expect("the shipped policy seed loads");
    let harness = Approvers::parse(&checks::passkey_approver_file()).unwrap();
    let rp = RelyingParty::new("localhost", [checks::PASSKEY_ORIGIN]);
    for (name, bytes) in seeds("passkey") {
        let as_file = std::str::from_utf8(&bytes)
            .ok()
            .and_then(|t| Approvers::parse(t).ok())
            .is_some_and(|a| !a.is_empty());
        let as_client_data = serde_json::from_slice::<serde_json::Value>(&bytes).is_ok();
        let as_assertion = postcard::from_bytes::<PasskeyAssertion>(&bytes).is_ok_and(|a| {
            passkey::verify_assertion(&a, checks::PASSKEY_CLAIMS, &harness, &rp).is_ok()
        });
        assert!(
            as_file || as_client_data || as_assertion,
            "passkey/{name} is none of an approver file, client data or a verifying assertion"
        );
    }
    for target in ["fleet", "schema"] {
        for (name, bytes) in seeds(target) {
            assert!(
                serde_json::from_slice::<serde_json::Value>(&bytes).is_ok(),
                "{target}/{name} is not JSON"
            );
        }
    }
}

// ---- crashers the fuzzer found ---------------------------------------------------------------
//
// One named test per minimised crasher, input in hex, so it replays without the fuzzer.

/// The notes space the bytes out; the protocol's one hex decoder reads the digits.
fn hex(text: &str) -> Vec<u8> {
    let digits: String = text.split_whitespace().collect();
    fleetwatch_protocol::hex::decode(&digits).unwrap()
}

#[test]
fn hex_reads_what_the_crasher_notes_write() {
    assert_eq!(hex("00 ff 7A"), vec![0x00, 0xff, 0x7a]);
}

/// Edges of the passkey property a random search reaches rarely: unknown members the verifier
/// skips but an independent JSON reading might judge differently (a number beyond f64, deep
/// nesting, a lone surrogate), and escapes in the members it reads.
#[test]
fn passkey_property_holds_at_the_client_data_edges() {
    let challenge = passkey::challenge_base64url(checks::PASSKEY_CLAIMS);
    let origin = checks::PASSKEY_ORIGIN;
    for extra in [
        r#""x":1e400"#.to_owned(),
        r#""x":-1e400"#.to_owned(),
        r#""x":123456789012345678901234567890"#.to_owned(),
        format!(r#""x":{}1{}"#, "[".repeat(200), "]".repeat(200)),
        format!(r#""x":{}1{}"#, "[".repeat(100), "]".repeat(100)),
        r#""x":"\ud800""#.to_owned(),
        r#""typ\u0065":"webauthn.get""#.to_owned(),
    ] {
        for lead in ["", " "] {
            let data = format!(
                r#"{lead}{{"type":"webauthn.get","challenge":"{challenge}","origin":"{origin}",{extra}}}"#
            );
            checks::passkey(data.as_bytes());
        }
    }
}

// ---- the property-test floor ----------------------------------------------------------------

/// Small edits to a seed: overwrite, insert, delete or cut at a position, as libFuzzer's
/// simplest mutators do.
fn mutated(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::sample::select(seeds),
        proptest::collection::vec(
            (any::<proptest::sample::Index>(), any::<u8>(), 0u8..4),
            0..8,
        ),
    )
        .prop_map(|(mut bytes, edits)| {
            for (at, byte, kind) in edits {
                let len = bytes.len();
                match kind {
                    0 if len > 0 => bytes[at.index(len)] = byte,
                    1 => bytes.insert(at.index(len + 1), byte),
                    2 if len > 0 => {
                        bytes.remove(at.index(len));
                    }
                    3 => bytes.truncate(at.index(len + 1)),
                    _ => {}
                }
            }
            bytes
        })
}

fn seed_bytes(target: &str) -> Vec<Vec<u8>> {
    seeds(target).into_iter().map(|(_, bytes)| bytes).collect()
}

/// Random bytes, or a mutated seed.
fn hostile_bytes(target: &str) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..512),
        mutated(seed_bytes(target)),
    ]
}

/// Text for the text boundaries: random, made of JSON's punctuation, or a mutated seed made
/// valid UTF-8 (the checks skip anything else).
fn hostile_text(target: &str) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<String>().prop_map(String::into_bytes),
        "[\\{}\\[\\]\":,0-9a-z\\\\ .eE+-]{0,64}".prop_map(String::into_bytes),
        mutated(seed_bytes(target))
            .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned().into_bytes()),
    ]
}

/// The case count, or `PROPTEST_CASES` for a soak run (an explicit count in the config would
/// otherwise win over proptest's own reading of that variable).
fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default);
    ProptestConfig::with_cases(cases)
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let key = prop_oneof![
        Just("Id".to_owned()),
        Just("devices".to_owned()),
        Just("channels".to_owned()),
        Just("event".to_owned()),
        Just("start".to_owned()),
        Just("end".to_owned()),
        Just("url".to_owned()),
        Just("stream_key".to_owned()),
        Just("Status".to_owned()),
        "[a-zA-Z_]{1,10}",
    ];
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        any::<String>().prop_map(serde_json::Value::from),
        Just(serde_json::Value::from("0123abcd")),
        Just(serde_json::Value::from("2026-09-24T20:08:00Z")),
        Just(serde_json::Value::from(
            "rtmp://live.example.com/app/secret-key"
        )),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(cases(512))]

    #[test]
    fn frame_never_panics_and_round_trips(data in hostile_bytes("frame")) {
        checks::frame(&data);
    }

    #[test]
    fn canonical_never_panics_and_is_idempotent(data in hostile_text("canonical")) {
        checks::canonical(&data);
    }

    #[test]
    fn fleet_parsers_never_panic_and_redaction_is_a_fixed_point(
        data in prop_oneof![
            json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
            hostile_text("fleet"),
        ]
    ) {
        checks::fleet(&data);
    }
}

proptest! {
    // Each case signs and verifies several times.
    #![proptest_config(cases(128))]

    #[test]
    fn claims_verify_then_decode_never_panics_and_mutations_never_verify(
        data in hostile_bytes("claims")
    ) {
        checks::claims(&data);
    }
}

proptest! {
    // Each case signs and verifies a passkey assertion twice.
    #![proptest_config(cases(128))]

    #[test]
    fn passkey_parsers_and_verifier_never_panic_and_forge_nothing(
        data in prop_oneof![hostile_bytes("passkey"), hostile_text("passkey")]
    ) {
        checks::passkey(&data);
    }
}

proptest! {
    // Each accepted case compiles every schema in the policy twice.
    #![proptest_config(cases(64))]

    #[test]
    fn policy_loader_never_panics_and_is_deterministic(data in hostile_text("policy")) {
        checks::policy(&data);
    }
}

proptest! {
    #![proptest_config(cases(512))]

    #[test]
    fn schema_subset_and_jsonschema_agree(
        data in prop_oneof![
            json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
            hostile_text("schema"),
        ]
    ) {
        checks::schema(&data);
    }
}
