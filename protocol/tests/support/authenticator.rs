//! A software passkey for tests and benchmarks: what a browser and an authenticator would hand
//! the approval page, built byte for byte (authenticator data, client data JSON, signature).
//! It lives only in test code; nothing in a binary can produce an assertion without a real
//! authenticator's private key.

#![allow(dead_code)]

use ed25519_dalek::Signer as _;
use fleetwatch_protocol::passkey::{self, Algorithm, PasskeyAssertion, PasskeyRecord};
use sha2::{Digest as _, Sha256};

/// The origin passkeys answer on in these tests: the confirm page's default, the one origin
/// the executor accepts unless configured otherwise.
pub const ORIGIN: &str = "http://localhost:8768";
/// The RP ID in production and in these tests.
pub const RP_ID: &str = "localhost";
/// User present and user verified.
pub const FLAGS_UP_UV: u8 = 0x05;

/// What an assertion is made of, every part open to a test that wants one of them wrong.
pub struct Ceremony {
    pub rp_id: String,
    pub flags: u8,
    pub counter: u32,
    pub client_data_json: Vec<u8>,
}

impl Ceremony {
    /// A well-formed ceremony for these claims bytes.
    pub fn for_claims(claims_bytes: &[u8], counter: u32) -> Ceremony {
        Ceremony {
            rp_id: RP_ID.to_owned(),
            flags: FLAGS_UP_UV,
            counter,
            client_data_json: client_data(
                "webauthn.get",
                &passkey::challenge(claims_bytes),
                ORIGIN,
            ),
        }
    }
}

/// Client data JSON as browsers write it (member order and spelling as Chromium's).
pub fn client_data(kind: &str, challenge: &[u8], origin: &str) -> Vec<u8> {
    use base64::Engine as _;
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(challenge);
    format!(
        r#"{{"type":"{kind}","challenge":"{challenge}","origin":"{origin}","crossOrigin":false}}"#
    )
    .into_bytes()
}

/// Authenticator data without extensions: RP ID hash, flags, big-endian counter.
pub fn authenticator_data(rp_id: &str, flags: u8, counter: u32) -> Vec<u8> {
    let mut out = Sha256::digest(rp_id.as_bytes()).to_vec();
    out.push(flags);
    out.extend_from_slice(&counter.to_be_bytes());
    out
}

enum Key {
    Es256(p256::ecdsa::SigningKey),
    Ed25519(ed25519_dalek::SigningKey),
}

/// One software credential.
pub struct SoftPasskey {
    key: Key,
    pub credential_id: Vec<u8>,
    pub counter: u32,
}

impl SoftPasskey {
    /// A deterministic ES256 credential (seed 1..=255).
    pub fn es256(seed: u8) -> SoftPasskey {
        let key = p256::ecdsa::SigningKey::from_slice(&[seed; 32]).expect("a valid scalar");
        SoftPasskey {
            key: Key::Es256(key),
            credential_id: vec![0xe5, seed, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06],
            counter: 0,
        }
    }

    /// A deterministic Ed25519 credential.
    pub fn ed25519(seed: u8) -> SoftPasskey {
        SoftPasskey {
            key: Key::Ed25519(ed25519_dalek::SigningKey::from_bytes(&[seed; 32])),
            credential_id: vec![0xed, seed, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06],
            counter: 0,
        }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        match self.key {
            Key::Es256(_) => Algorithm::Es256,
            Key::Ed25519(_) => Algorithm::Ed25519,
        }
    }

    /// The SPKI, as `response.getPublicKey()` returns it.
    pub fn spki(&self) -> Vec<u8> {
        match &self.key {
            Key::Es256(key) => {
                let mut out = vec![
                    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
                    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
                ];
                out.extend_from_slice(key.verifying_key().to_sec1_point(false).as_bytes());
                out
            }
            Key::Ed25519(key) => {
                let mut out = vec![
                    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
                ];
                out.extend_from_slice(key.verifying_key().as_bytes());
                out
            }
        }
    }

    /// The record `fleetwatch-confirm enrol` would print for a person called `name` with this
    /// passkey, device-bound, whose person ID is the name in lower case (see [`person_id_of`]).
    pub fn record(&self, name: &str) -> PasskeyRecord {
        self.person_record(&person_id_of(name), name, passkey::Backup::DeviceBound)
    }

    /// That record's line.
    pub fn line(&self, name: &str) -> String {
        self.record(name).to_line()
    }

    /// A person's record (an `approver` line), as `fleetwatch-confirm enrol` prints it.
    pub fn person_record(
        &self,
        person: &str,
        name: &str,
        backup: passkey::Backup,
    ) -> PasskeyRecord {
        PasskeyRecord::for_person(
            person,
            backup,
            self.algorithm(),
            self.credential_id.clone(),
            self.spki(),
            name,
        )
        .expect("a software passkey makes a valid record")
    }

    /// That record's line.
    pub fn person_line(&self, person: &str, name: &str) -> String {
        self.person_record(person, name, passkey::Backup::DeviceBound)
            .to_line()
    }

    /// The signature over `authenticator_data ‖ SHA-256(client_data_json)`: DER for ES256.
    pub fn sign(&self, authenticator_data: &[u8], client_data_json: &[u8]) -> Vec<u8> {
        let mut message = authenticator_data.to_vec();
        message.extend_from_slice(&Sha256::digest(client_data_json));
        self.sign_message(&message)
    }

    /// A signature over a raw message.
    pub fn sign_message(&self, message: &[u8]) -> Vec<u8> {
        match &self.key {
            Key::Es256(key) => {
                let signature: p256::ecdsa::Signature =
                    p256::ecdsa::signature::Signer::sign(key, message);
                signature.to_der().as_bytes().to_vec()
            }
            Key::Ed25519(key) => key.sign(message).to_bytes().to_vec(),
        }
    }

    /// An assertion for a ceremony, signed.
    pub fn assert_with(&self, ceremony: &Ceremony) -> PasskeyAssertion {
        let authenticator_data =
            authenticator_data(&ceremony.rp_id, ceremony.flags, ceremony.counter);
        let signature = self.sign(&authenticator_data, &ceremony.client_data_json);
        PasskeyAssertion {
            credential_id: self.credential_id.clone(),
            authenticator_data,
            client_data_json: ceremony.client_data_json.clone(),
            signature,
        }
    }

    /// The next assertion over these claims bytes, as a counting authenticator makes it.
    pub fn assert(&mut self, claims_bytes: &[u8]) -> PasskeyAssertion {
        self.counter += 1;
        self.assert_with(&Ceremony::for_claims(claims_bytes, self.counter))
    }
}

/// The same ECDSA signature with `S` replaced by `n - S`: valid too, and the form an
/// authenticator that does not normalise produces half the time.
pub fn other_s_form(der: &[u8]) -> Vec<u8> {
    use p256::elliptic_curve::PrimeField as _;
    let signature = p256::ecdsa::Signature::from_der(der).expect("DER");
    let (r, s) = signature.split_bytes();
    let s = p256::Scalar::from_repr(s).expect("scalar");
    let flipped = p256::ecdsa::Signature::from_scalars(r, (-s).to_repr()).expect("scalars");
    flipped.to_der().as_bytes().to_vec()
}

/// Whether a DER signature's `S` is in the upper half of the group order.
pub fn is_high_s(der: &[u8]) -> bool {
    let signature = p256::ecdsa::Signature::from_der(der).expect("DER");
    signature.normalize_s() != signature
}

/// A person ID made from a display name: ASCII letters and digits in lower case, anything else
/// as one `-`, at most 32 characters; "person" when nothing is left.
pub fn person_id_of(name: &str) -> String {
    let mut id = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c.to_ascii_lowercase());
        } else if !id.is_empty() && !id.ends_with('-') {
            id.push('-');
        }
    }
    let id: String = id.trim_end_matches('-').chars().take(32).collect();
    if id.is_empty() {
        "person".to_owned()
    } else {
        id
    }
}
