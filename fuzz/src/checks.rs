//! Properties of the protocol crate's byte boundaries. Each function takes untrusted bytes and
//! panics only when a property fails: a panic inside the library is itself the failure, and
//! the `assert`s here name the property that broke.

use std::sync::LazyLock;

use ed25519_dalek::{Signer as _, SigningKey};
use fleetwatch_protocol::claims::{
    self, ApprovalClaims, KeyId, SIGNING_DOMAIN, SignatureError, SignedApproval, TrustedKeys,
};
use fleetwatch_protocol::passkey::{
    self, Algorithm, Approvers, PasskeyAssertion, PasskeyError, PasskeyRecord, RelyingParty,
};
use fleetwatch_protocol::policy::Policy;
use fleetwatch_protocol::schema::Schema;
use fleetwatch_protocol::wire::{self, Request};
use fleetwatch_protocol::{canonical, fleet};
use fleetwatch_redact as redact;
use sha2::{Digest as _, Sha256};

/// The approver key the harness signs with. Fixed, so committed seeds signed with it stay
/// valid and a crasher replays the same way everywhere. It exists only in test code: nothing
/// in a binary accepts it unless an administrator installs its public half.
pub const TEST_SEED: [u8; 32] = [0x42; 32];

/// A key that is never installed.
pub const STRANGER_SEED: [u8; 32] = [0x17; 32];

/// A frame body from an untrusted peer: decoding never panics, and whatever decodes comes
/// back unchanged through encode and decode.
pub fn frame(data: &[u8]) {
    if let Ok(request) = wire::decode_request(data) {
        // Postcard can accept more than one spelling of a value (over-long varints), so the
        // value, not the bytes, is what must come back.
        let encoded = wire::encode_request(&request);
        assert!(encoded.is_ok(), "a decoded request does not re-encode");
        if let Ok(encoded) = encoded {
            assert_eq!(wire::decode_request(&encoded), Ok(request.clone()));
        }
        if let Request::Execute(execute) = &request {
            // The executor decodes claims only after verifying them; decoding unverified bytes
            // here only widens what the decoder sees, and it must still never panic.
            let _ = ApprovalClaims::decode(&execute.approval.claims);
        }
    }
    if let Ok(response) = wire::decode_response(data) {
        let encoded = wire::encode_response(&response);
        assert!(encoded.is_ok(), "a decoded response does not re-encode");
        if let Ok(encoded) = encoded {
            assert_eq!(wire::decode_response(&encoded), Ok(response));
        }
    }
}

/// Keys derived once: deriving a public key is a curve operation, and the fuzzer calls
/// [`claims`] many thousand times a second.
struct Keys {
    installed: SigningKey,
    stranger: SigningKey,
    trusted: TrustedKeys,
}

static KEYS: LazyLock<Keys> = LazyLock::new(|| {
    let installed = SigningKey::from_bytes(&TEST_SEED);
    Keys {
        trusted: TrustedKeys::from_keys([installed.verifying_key()]),
        stranger: SigningKey::from_bytes(&STRANGER_SEED),
        installed,
    }
});

fn genuine_signature(key: &SigningKey, claims_bytes: &[u8]) -> Vec<u8> {
    let mut message = SIGNING_DOMAIN.to_vec();
    message.extend_from_slice(claims_bytes);
    key.sign(&message).to_bytes().to_vec()
}

/// Claims bytes through the executor's order, verify then decode, signed here with
/// [`TEST_SEED`]; and the same bytes read as a whole signed approval nobody here signed.
/// The library has no switch to skip verification: coverage past the signature check comes
/// only from signing in the harness.
pub fn claims(data: &[u8]) {
    let keys = &*KEYS;
    let key = &keys.installed;
    let trusted = &keys.trusted;

    // Signed by an installed key: verification hands back exactly these bytes, and decoding
    // them never panics; what decodes survives a round trip.
    let signed = claims::sign(data.to_vec(), key);
    assert_eq!(trusted.verify(&signed), Ok(data));
    if let Ok(decoded) = ApprovalClaims::decode(data) {
        let encoded = decoded.encode();
        assert!(encoded.is_ok(), "decoded claims do not re-encode");
        if let Ok(encoded) = encoded {
            assert_eq!(ApprovalClaims::decode(&encoded), Ok(decoded));
        }
    }

    // One flipped signature bit, at a position the input chooses, never verifies.
    let spread = data.iter().fold(0usize, |acc, b| {
        acc.wrapping_mul(31).wrapping_add(usize::from(*b))
    });
    let mut flipped = signed.clone();
    if let Some(entry) = flipped.signatures.first_mut() {
        let bit = spread % (entry.signature.len() * 8);
        if let Some(byte) = entry.signature.get_mut(bit / 8) {
            *byte ^= 1 << (bit % 8);
        }
    }
    assert_eq!(trusted.verify(&flipped), Err(SignatureError::BadSignature));

    // The signature kept, the claims changed (one flipped bit, one byte less, one byte more),
    // or a valid signature from a key that is not installed. One of these per input, chosen
    // by the input: each costs a curve operation, and coverage comes from the decoder.
    match spread % 4 {
        0 if !data.is_empty() => {
            let mut changed = signed.clone();
            let bit = (spread / 4) % (data.len() * 8);
            if let Some(byte) = changed.claims.get_mut(bit / 8) {
                *byte ^= 1 << (bit % 8);
            }
            assert_eq!(trusted.verify(&changed), Err(SignatureError::BadSignature));
        }
        1 if !data.is_empty() => {
            let mut shorter = signed.clone();
            shorter.claims.pop();
            assert_eq!(trusted.verify(&shorter), Err(SignatureError::BadSignature));
        }
        2 => {
            let foreign = claims::sign(data.to_vec(), &keys.stranger);
            assert_eq!(trusted.verify(&foreign), Err(SignatureError::UnknownKey));
        }
        _ => {
            let mut longer = signed.clone();
            longer.claims.push(0);
            assert_eq!(trusted.verify(&longer), Err(SignatureError::BadSignature));
        }
    }

    // The input as a whole signed approval. It may verify only when every entry naming the
    // installed key carries the signature that key itself makes over those claims (Ed25519
    // signing is deterministic); anything else verifying would be a forgery.
    if let Ok(approval) = postcard::from_bytes::<SignedApproval>(data)
        && let Ok(bytes) = trusted.verify(&approval)
    {
        assert_eq!(bytes, approval.claims.as_slice());
        let id = KeyId::of(&key.verifying_key());
        let genuine = genuine_signature(key, &approval.claims);
        let naming: Vec<_> = approval
            .signatures
            .iter()
            .filter(|s| s.key_id == id)
            .collect();
        assert!(
            !naming.is_empty(),
            "verified without naming the installed key"
        );
        assert!(
            naming.iter().all(|s| s.signature == genuine),
            "a signature the installed key never made verified"
        );
        let _ = ApprovalClaims::decode(bytes);
    }
}

/// Canonical JSON from arbitrary text: never panics, and a canonical text is its own canonical
/// form, directly and through `serde_json`.
pub fn canonical(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(first) = canonical::from_str(text) else {
        return;
    };
    assert_eq!(canonical::from_str(first.as_str()).as_ref(), Ok(&first));
    // Only when every integer fits 64 bits does `to_value` succeed.
    if let Ok(value) = first.to_value() {
        assert_eq!(canonical::from_value(&value).as_ref(), Ok(&first));
    }
}

/// The policy loader on arbitrary text: loads or refuses, never panics, and the same text
/// gives the same digests.
pub fn policy(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(policy) = Policy::from_yaml(text) else {
        return;
    };
    let again = Policy::from_yaml(text);
    assert!(
        again.is_ok(),
        "the same text loaded once and was refused the second time"
    );
    let Ok(again) = again else {
        return;
    };
    assert_eq!(policy.whole_digest(), again.whole_digest());
    for entry in policy.propose_entries() {
        assert_eq!(policy.digest(&entry.name), again.digest(&entry.name));
        let _ = policy.lead_minutes(&entry.name);
        let _ = policy.is_disruptive(&entry.name, &serde_json::json!({}));
        let _ = policy.stops_recording(&entry.name, &serde_json::json!({}));
    }
}

/// An Epiphan result from a server that may say anything: every fleet parser and the
/// redaction pass take any JSON without panicking, and redaction is a fixed point.
pub fn fleet(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let devices = fleet::parse_device_list(&value);
    let recorder = fleet::parse_recorder_status(&value);
    let _ = fleet::parse_system_status(&value);
    let events = fleet::parse_events(&value);
    let _ = fleet::parse_stream_endpoints(&value);
    let _ = fleet::parse_time(&value);

    if let Ok(mut list) = devices {
        if let Ok(status) = &recorder {
            fleet::apply_recorder_status(&mut list, status);
        }
        let events = events.unwrap_or_default();
        let targets: Vec<String> = list.devices.iter().map(|d| d.id.clone()).collect();
        if let Ok(print) = fleet::fingerprint(&list, &events, &targets) {
            let _ = print.canonical();
        }
        for device in &list.devices {
            let event = events.get(&device.id).and_then(Option::as_ref);
            let _ = fleet::room_block(device, event, jiff::Timestamp::UNIX_EPOCH, 30, false, 240);
            let _ = fleet::room_block(
                device,
                event,
                jiff::Timestamp::MIN,
                u32::MAX,
                false,
                u32::MAX,
            );
            let _ = fleet::room_block(device, event, jiff::Timestamp::MAX, u32::MAX, true, 1);
        }
    }

    let mut once = value;
    redact::redact_value(&mut once);
    let mut twice = once.clone();
    redact::redact_value(&mut twice);
    assert_eq!(once, twice, "redaction is not a fixed point");
}

/// The registry's schemas, read once: every read and propose entry of the shipped policy and
/// of the fixture that has defaults and a length bound.
static REGISTRY: LazyLock<Vec<(String, Schema, jsonschema::Validator)>> = LazyLock::new(|| {
    let mut out = Vec::new();
    for text in [
        include_str!("../../tool_policy.yaml"),
        include_str!("../../protocol/tests/data/policy_pending.yaml"),
    ] {
        let Ok(policy) = Policy::from_yaml(text) else {
            continue;
        };
        let schemas = policy
            .read_tools()
            .map(|t| (t.name.clone(), t.schema.clone()))
            .chain(
                policy
                    .propose_entries()
                    .filter_map(|e| e.schema.clone().map(|s| (e.name.clone(), s))),
            );
        for (name, raw) in schemas {
            if let (Ok(mine), Ok(theirs)) =
                (Schema::compile(&raw), jsonschema::draft202012::new(&raw))
            {
                out.push((name, mine, theirs));
            }
        }
    }
    out
});

/// The hand-written JSON Schema subset against jsonschema on any JSON: every registry schema
/// gives the same verdict on the value as both validators; and a value shaped
/// `[schema, instance…]` whose schema the subset accepts must compile in jsonschema too and get
/// the same verdict on each instance.
pub fn schema(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    assert!(REGISTRY.len() >= 12, "the registry schemas did not load");
    for (name, mine, theirs) in REGISTRY.iter() {
        assert_eq!(
            mine.is_valid(&value),
            theirs.is_valid(&value),
            "{name}: the subset and jsonschema disagree on {value}"
        );
    }
    if let Some((schema, instances)) = value.as_array().and_then(|a| a.split_first())
        && let Ok(mine) = Schema::compile(schema)
    {
        let theirs = jsonschema::draft202012::new(schema);
        assert!(
            theirs.is_ok(),
            "the subset accepts a schema jsonschema refuses: {schema}"
        );
        if let Ok(theirs) = theirs {
            for instance in instances {
                assert_eq!(
                    mine.is_valid(instance),
                    theirs.is_valid(instance),
                    "{schema}: the subset and jsonschema disagree on {instance}"
                );
            }
        }
    }
}

/// The passkeys the harness enrols and signs with: one ES256, one Ed25519. Fixed, like
/// [`TEST_SEED`], and like it installed nowhere but here.
pub const PASSKEY_ES256_SEED: [u8; 32] = [0x42; 32];
/// The Ed25519 passkey's seed.
pub const PASSKEY_ED25519_SEED: [u8; 32] = [0x43; 32];
/// The origin and RP ID the harness's relying party accepts.
pub const PASSKEY_ORIGIN: &str = "http://localhost:8767";
/// The claims bytes the harness's assertions are for.
pub const PASSKEY_CLAIMS: &[u8] = b"fleetwatch fuzz claims";

struct Passkeys {
    es256: p256::ecdsa::SigningKey,
    ed25519: SigningKey,
    records: [PasskeyRecord; 2],
    approvers: Approvers,
    rp: RelyingParty,
}

static PASSKEYS: LazyLock<Passkeys> = LazyLock::new(|| {
    let es256 = p256::ecdsa::SigningKey::from_slice(&PASSKEY_ES256_SEED)
        .unwrap_or_else(|_| unreachable!("a fixed valid scalar"));
    let ed25519 = SigningKey::from_bytes(&PASSKEY_ED25519_SEED);
    let mut es_spki = vec![
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ];
    es_spki.extend_from_slice(es256.verifying_key().to_sec1_point(false).as_bytes());
    let mut ed_spki = vec![
        0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
    ];
    ed_spki.extend_from_slice(ed25519.verifying_key().as_bytes());
    let record = |person, algorithm, id: &[u8], spki, name| {
        PasskeyRecord::for_person(
            person,
            fleetwatch_protocol::passkey::Backup::DeviceBound,
            algorithm,
            id.to_vec(),
            spki,
            name,
        )
        .unwrap_or_else(|e| unreachable!("the harness's own record: {e}"))
    };
    let records = [
        record("es", Algorithm::Es256, b"fuzz es256", es_spki, "Fuzz ES256"),
        record(
            "ed",
            Algorithm::Ed25519,
            b"fuzz ed25519",
            ed_spki,
            "Fuzz Ed25519",
        ),
    ];
    let mut approvers = Approvers::default();
    for r in &records {
        approvers
            .add(r.clone())
            .unwrap_or_else(|e| unreachable!("two distinct records: {e}"));
    }
    Passkeys {
        es256,
        ed25519,
        records,
        approvers,
        rp: RelyingParty::new("localhost", [PASSKEY_ORIGIN]),
    }
});

/// Authenticator data the harness's authenticator writes: RP ID hash of `localhost`, user
/// present and verified, counter 1.
pub fn passkey_authenticator_data() -> Vec<u8> {
    let mut out = Sha256::digest(b"localhost").to_vec();
    out.push(0x05);
    out.extend_from_slice(&1u32.to_be_bytes());
    out
}

/// The harness's signature (ES256 as DER, or Ed25519) over `authenticator_data ‖
/// SHA-256(client_data_json)`.
pub fn passkey_sign(ed25519: bool, authenticator_data: &[u8], client_data_json: &[u8]) -> Vec<u8> {
    let keys = &*PASSKEYS;
    let mut message = authenticator_data.to_vec();
    message.extend_from_slice(&Sha256::digest(client_data_json));
    if ed25519 {
        keys.ed25519.sign(&message).to_bytes().to_vec()
    } else {
        let signature: p256::ecdsa::Signature =
            p256::ecdsa::signature::Signer::sign(&keys.es256, &message);
        signature.to_der().as_bytes().to_vec()
    }
}

/// A genuine assertion by one of the harness's passkeys over these client data bytes.
pub fn passkey_assertion(ed25519: bool, client_data_json: &[u8]) -> PasskeyAssertion {
    let authenticator_data = passkey_authenticator_data();
    let signature = passkey_sign(ed25519, &authenticator_data, client_data_json);
    PasskeyAssertion {
        credential_id: PASSKEYS.records[usize::from(ed25519)]
            .credential_id()
            .to_vec(),
        authenticator_data,
        client_data_json: client_data_json.to_vec(),
        signature,
    }
}

/// The harness's approver file.
pub fn passkey_approver_file() -> String {
    PASSKEYS.approvers.to_text()
}

/// Passkey bytes from an untrusted peer or file. The approver file parser and the record parser
/// never panic, and what they accept writes back to text that parses to the same thing. The
/// input as client data, signed here by an enrolled passkey, is refused (if at all) only by a
/// client data check, never by the signature; when it is accepted, an independent JSON reading
/// agrees with every client data rule; a flipped signature bit never verifies. The input read
/// as a whole assertion verifies only if its signature is one the enrolled key itself makes
/// (either form of an ECDSA `S`): anything else verifying would be a forgery.
pub fn passkey(data: &[u8]) {
    let keys = &*PASSKEYS;
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(approvers) = Approvers::parse(text) {
            assert_eq!(
                Approvers::parse(&approvers.to_text()).as_ref(),
                Ok(&approvers)
            );
        }
        if let Ok(record) = PasskeyRecord::parse_line(text) {
            assert_eq!(
                PasskeyRecord::parse_line(&record.to_line()).as_ref(),
                Ok(&record)
            );
        }
    }

    let ed25519 = data.first().is_some_and(|b| b & 1 == 1);
    let assertion = passkey_assertion(ed25519, data);
    match passkey::verify_assertion(&assertion, PASSKEY_CLAIMS, &keys.approvers, &keys.rp) {
        Ok(verified) => {
            assert_eq!(verified.counter(), 1);
            let value: Result<serde_json::Value, _> = serde_json::from_slice(data);
            assert!(value.is_ok(), "accepted client data is not JSON");
            if let Ok(value) = value {
                assert!(value.is_object(), "accepted client data is not an object");
                assert_eq!(value["type"], "webauthn.get");
                assert_eq!(
                    value["challenge"].as_str(),
                    Some(passkey::challenge_base64url(PASSKEY_CLAIMS).as_str())
                );
                assert_eq!(value["origin"], PASSKEY_ORIGIN);
                assert!(value.get("crossOrigin").is_none_or(|c| *c == false));
                assert!(value.get("topOrigin").is_none());
            }
        }
        Err(error) => assert!(
            matches!(
                error,
                PasskeyError::ClientDataMalformed
                    | PasskeyError::WrongType
                    | PasskeyError::ChallengeMismatch
                    | PasskeyError::OriginNotAllowed
                    | PasskeyError::CrossOrigin
                    | PasskeyError::FieldOutOfBounds
            ),
            "a genuine signature over this client data was refused as {error:?}"
        ),
    }
    let spread = data.iter().fold(0usize, |acc, b| {
        acc.wrapping_mul(31).wrapping_add(usize::from(*b))
    });
    let mut flipped = assertion;
    let bit = spread % (flipped.signature.len() * 8);
    if let Some(byte) = flipped.signature.get_mut(bit / 8) {
        *byte ^= 1 << (bit % 8);
    }
    assert!(
        passkey::verify_assertion(&flipped, PASSKEY_CLAIMS, &keys.approvers, &keys.rp).is_err(),
        "a flipped signature bit verified"
    );

    if let Ok(whole) = postcard::from_bytes::<PasskeyAssertion>(data)
        && passkey::verify_assertion(&whole, PASSKEY_CLAIMS, &keys.approvers, &keys.rp).is_ok()
    {
        let ed25519 = whole.credential_id == keys.records[1].credential_id();
        let genuine = passkey_sign(ed25519, &whole.authenticator_data, &whole.client_data_json);
        if ed25519 {
            assert_eq!(
                whole.signature, genuine,
                "a signature the passkey never made verified"
            );
        } else {
            let low = |der: &[u8]| {
                p256::ecdsa::Signature::from_der(der)
                    .ok()
                    .map(|s| s.normalize_s())
            };
            assert_eq!(
                low(&whole.signature),
                low(&genuine),
                "an ECDSA signature the passkey never made verified"
            );
        }
    }
}
