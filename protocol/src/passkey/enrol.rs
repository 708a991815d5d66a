//! Checking a passkey's creation at enrolment (the `enrol` feature: `fleetwatch-confirm`).

use super::{
    AUTHENTICATOR_DATA_MIN, Backup, MAX_CLIENT_DATA_JSON, MAX_CREDENTIAL_ID, PasskeyError,
    RelyingParty, check_authenticator_data, check_client_data,
};

/// Authenticator data flag: the credential is backed up now.
const FLAG_BS: u8 = 0x10;
/// Authenticator data flag: attested credential data follows (a creation).
const FLAG_AT: u8 = 0x40;

/// What a creation (`navigator.credentials.create`) said about the new passkey, after
/// [`check_registration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registration {
    /// Backup eligible (BE): whether the passkey may be synced.
    pub backup: Backup,
    /// Backed up (BS) at the time of creation.
    pub backed_up: bool,
}

/// Checks a creation's client data and authenticator data at enrolment: `type`
/// `webauthn.create`, the challenge the enrolling program chose, an origin `rp` allows, not
/// cross-origin; the RP ID hash, the user-present and user-verified flags, and attested
/// credential data naming `credential_id` (the ID the browser returned). The public key itself
/// comes from the SPKI the browser returned; [`verify_assertion_for_challenge`] over a second
/// challenge then proves the authenticator holds its private key.
pub fn check_registration(
    client_data_json: &[u8],
    authenticator_data: &[u8],
    expected_challenge: &[u8],
    credential_id: &[u8],
    rp: &RelyingParty,
) -> Result<Registration, PasskeyError> {
    if client_data_json.len() > MAX_CLIENT_DATA_JSON
        || credential_id.is_empty()
        || credential_id.len() > MAX_CREDENTIAL_ID
    {
        return Err(PasskeyError::FieldOutOfBounds);
    }
    check_client_data(client_data_json, "webauthn.create", expected_challenge, rp)?;
    let (flags, _counter) = check_authenticator_data(authenticator_data, rp)?;
    if flags & FLAG_AT == 0 {
        return Err(PasskeyError::CredentialMismatch);
    }
    // After the 37 fixed bytes: AAGUID (16), credential ID length (2, big-endian), the ID.
    let at = AUTHENTICATOR_DATA_MIN + 16;
    let length = authenticator_data
        .get(at..at + 2)
        .ok_or(PasskeyError::AuthenticatorDataShort)?;
    let length = usize::from(u16::from_be_bytes([
        *length.first().unwrap_or(&0),
        *length.get(1).unwrap_or(&0),
    ]));
    let named = authenticator_data
        .get(at + 2..at + 2 + length)
        .ok_or(PasskeyError::AuthenticatorDataShort)?;
    if named != credential_id {
        return Err(PasskeyError::CredentialMismatch);
    }
    Ok(Registration {
        backup: Backup::from_flags(flags),
        backed_up: flags & FLAG_BS != 0,
    })
}
