//! The one list of reasons a change is refused, shared by the executor, the assistant and the
//! audit tables. Each variant is a check; its [`Refusal::code`] is the audit reason code,
//! [`code_words`] says the code in a few words, and `Refusal::message` (the `assistant`
//! feature) tells the operator what failed and what to do. Variants carry only typed facts,
//! never free text, so nothing a peer sends is echoed back as prose.

use serde::{Deserialize, Serialize};

// Each refusal in a sentence for the operator (what failed and what to do), said where a person
// reads it: the assistant's page and terminal. The executor answers with the typed refusal and
// says codes in its own commands with [`code_words`], so it does not link these sentences
// (the `assistant` feature).
#[cfg(feature = "assistant")]
mod message;

/// Why the executor (or the assistant, for a proposal) refused. Nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Refusal {
    /// The connecting process's uid is not on the allowed list.
    PeerNotAllowed,
    /// A frame's length prefix is above the 64 KiB cap.
    FrameTooLarge,
    /// A frame of length zero.
    FrameEmpty,
    /// The connection ended before a whole frame arrived, or the read deadline passed.
    FrameTruncated,
    /// The frame did not decode as a request.
    Malformed,
    /// Bytes followed the encoded request or claims.
    TrailingBytes,
    /// The envelope's version is not one this build speaks.
    UnknownWireVersion,
    /// The approval carries no signature.
    NoSignature,
    /// No signature is from an installed approver key.
    UnknownKey,
    /// A signature from an installed key does not verify.
    BadSignature,
    /// The approval carries more passkey assertions than the executor accepts.
    PasskeyTooMany,
    /// A passkey assertion field is empty where it may not be, or larger than its cap.
    PasskeyOutOfBounds,
    /// The passkey that signed is not in the executor's approver file.
    PasskeyUnknownCredential,
    /// The passkey's client data is not a well-formed JSON object.
    PasskeyClientDataMalformed,
    /// The passkey's client data is not for an assertion (`webauthn.get`).
    PasskeyWrongType,
    /// The passkey signed a challenge other than the one these claims give.
    PasskeyChallengeMismatch,
    /// The passkey was used on an origin the executor's configuration does not list.
    PasskeyOriginNotAllowed,
    /// The passkey was used from a cross-origin frame.
    PasskeyCrossOrigin,
    /// The passkey's authenticator data is shorter than 37 bytes.
    PasskeyAuthenticatorDataShort,
    /// The passkey answered for another relying party ID.
    PasskeyRpIdMismatch,
    /// The passkey's user-present flag is clear.
    PasskeyUserNotPresent,
    /// The passkey's user-verified flag is clear.
    PasskeyUserNotVerified,
    /// The passkey signature is not DER (ES256) or not 64 bytes (Ed25519).
    PasskeySignatureMalformed,
    /// The passkey signature does not verify against the enrolled key.
    PasskeyBadSignature,
    /// The passkey's signature counter did not increase (a replay or a cloned passkey).
    PasskeyCounterNotIncreased,
    /// The approval carries no passkey assertion and the executor requires one.
    PasskeyRequired,
    /// Fewer distinct enrolled passkeys confirmed the approval than this change needs.
    PasskeyQuorumNotMet {
        /// Distinct enrolled passkeys that verified.
        have: u32,
        /// Distinct enrolled passkeys required.
        need: u32,
    },
    /// The claims' version is not one this build speaks.
    UnknownClaimsVersion,
    /// The signed claims did not decode.
    ClaimsMalformed,
    /// The approval expired (expiry is strict).
    Expired,
    /// The approval was issued in the future beyond the allowed clock skew.
    NotYetValid,
    /// The approval's lifetime exceeds five minutes plus the skew.
    LifetimeTooLong,
    /// This approval was already presented once.
    Replayed,
    /// The nonce could not be stored durably (for example, a full disk).
    NonceNotStored,
    /// The tool is not proposable in the executor's own policy.
    ToolNotProposable,
    /// The policy entry the approval was made under differs from the executor's.
    PolicyDigestMismatch,
    /// The argument schema version differs.
    SchemaVersionMismatch,
    /// The arguments do not pass the tool's schema.
    ArgumentsInvalid,
    /// The signed arguments are not in canonical form.
    NotCanonical,
    /// The signed targets are not the targets the arguments name.
    TargetsMismatch,
    /// More targets than the tool allows.
    TooManyTargets,
    /// Neither a device allowlist nor a team ID is configured.
    NoFence,
    /// A target is not on `FLEETWATCH_WRITE_DEVICE_IDS`.
    NotAllowlisted,
    /// The sandbox team's ID differs from `FLEETWATCH_WRITE_TEAM_ID`.
    TeamMismatch,
    /// `FLEETWATCH_WRITE_TEAM_ID` is set but the sandbox did not report a team ID.
    TeamNotReported,
    /// A target is not on the sandbox team's device list.
    NotOnTeam,
    /// The stream destination is not on the sandbox team's list.
    StreamNotFound,
    /// The event is not the one the device reports as current or next.
    EventMismatch,
    /// Live state changed since the approval (online, recording or next event).
    FingerprintMoved,
    /// A disruptive change while a target is recording.
    Recording,
    /// A disruptive change while an event is on now.
    EventLive,
    /// A disruptive change with an event starting within the lead window.
    EventSoon {
        /// Minutes until the event starts, rounded up.
        minutes: u32,
    },
    /// A disruptive change to a device whose last disruptive change is within the cooldown.
    CoolingDown {
        /// Minutes until the cooldown ends, rounded up.
        minutes: u32,
    },
    /// The executor already made its limit of writes in the last hour.
    HourlyLimit {
        /// The limit (`limits.writes_per_hour`).
        limit: u32,
    },
    /// A change to a target that is offline: it could not reach it.
    Offline,
    /// The approval expired while the executor was reading, before the write was sent.
    ExpiredAtWrite {
        /// Seconds past the expiry when the write would have gone.
        late_secs: u32,
    },
    /// A string in the claims is longer than anything the executor's policy allows.
    ClaimTooLong,
    /// A read through the sandbox sign-in failed or timed out.
    ReadFailed,
    /// There is no sandbox sign-in.
    NoSignIn,
    /// The sandbox sign-in was refused by Epiphan (expired or revoked).
    SignInExpired,
    /// The executor is at its connection limit.
    Busy,
    /// The executor could not complete the check for an internal reason (logged locally).
    Internal,
    /// The executor accepts device-bound passkeys only (`passkeys.device_bound`), and a passkey
    /// that confirmed the approval may be synced (its authenticator set backup eligible).
    PasskeySynced,
    /// A name the approval carries (a target's, a channel's, a stream destination's or an
    /// event's) is not the name the executor reads now: the person saw another name, or the
    /// assistant changed it.
    NameChanged,
    /// The confirm page's port is not held on the loopback addresses by the owner the
    /// executor's configuration names (systemd's socket unit): whoever holds it could have
    /// shown the person another change.
    ConfirmOriginNotHeld,
    /// The authenticator data says the passkey is backed up (BS) but not that it may be
    /// (BE): flags no honest authenticator sets together.
    PasskeyBackupStateWithoutEligible,
    /// With `passkeys.device_bound`, a passkey's backup-eligible flag differs from the one its
    /// enrolment recorded: the credential changed kind, or the authenticator is not the one
    /// enrolled.
    PasskeyBackupChanged,
    /// A person approved a change their approver line's scope does not cover (its tool or a
    /// target), and without them too few persons approved.
    PasskeyOutOfScope {
        /// Distinct persons in scope who approved.
        have: u32,
        /// Distinct persons required.
        need: u32,
    },
    /// With `passkeys.asker_counts: false`: the person who asked for the change approved it
    /// and does not count, and without them too few persons approved.
    PasskeyAskerApproved {
        /// Distinct persons other than the asker who approved.
        have: u32,
        /// Distinct persons required.
        need: u32,
    },
    /// A freeze window of the executor's configuration holds this change now.
    Frozen {
        /// When the window ends (Unix seconds).
        until: i64,
        /// The window's reason, in the team's words.
        reason: String,
    },
}

impl Refusal {
    /// Stable reason code, used verbatim in audit rows.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::PeerNotAllowed => "peer_not_allowed",
            Refusal::FrameTooLarge => "frame_too_large",
            Refusal::FrameEmpty => "frame_empty",
            Refusal::FrameTruncated => "frame_truncated",
            Refusal::Malformed => "malformed",
            Refusal::TrailingBytes => "trailing_bytes",
            Refusal::UnknownWireVersion => "unknown_wire_version",
            Refusal::NoSignature => "no_signature",
            Refusal::UnknownKey => "unknown_key",
            Refusal::BadSignature => "bad_signature",
            Refusal::PasskeyTooMany => "passkey_too_many",
            Refusal::PasskeyOutOfBounds => "passkey_out_of_bounds",
            Refusal::PasskeyUnknownCredential => "passkey_unknown_credential",
            Refusal::PasskeyClientDataMalformed => "passkey_client_data_malformed",
            Refusal::PasskeyWrongType => "passkey_wrong_type",
            Refusal::PasskeyChallengeMismatch => "passkey_challenge_mismatch",
            Refusal::PasskeyOriginNotAllowed => "passkey_origin_not_allowed",
            Refusal::PasskeyCrossOrigin => "passkey_cross_origin",
            Refusal::PasskeyAuthenticatorDataShort => "passkey_authenticator_data_short",
            Refusal::PasskeyRpIdMismatch => "passkey_rp_id_mismatch",
            Refusal::PasskeyUserNotPresent => "passkey_user_not_present",
            Refusal::PasskeyUserNotVerified => "passkey_user_not_verified",
            Refusal::PasskeySignatureMalformed => "passkey_signature_malformed",
            Refusal::PasskeyBadSignature => "passkey_bad_signature",
            Refusal::PasskeyCounterNotIncreased => "passkey_counter_not_increased",
            Refusal::PasskeyRequired => "passkey_required",
            Refusal::PasskeyQuorumNotMet { .. } => "passkey_quorum_not_met",
            Refusal::UnknownClaimsVersion => "unknown_claims_version",
            Refusal::ClaimsMalformed => "claims_malformed",
            Refusal::Expired => "expired",
            Refusal::NotYetValid => "not_yet_valid",
            Refusal::LifetimeTooLong => "lifetime_too_long",
            Refusal::Replayed => "replayed",
            Refusal::NonceNotStored => "nonce_not_stored",
            Refusal::ToolNotProposable => "tool_not_proposable",
            Refusal::PolicyDigestMismatch => "policy_digest_mismatch",
            Refusal::SchemaVersionMismatch => "schema_version_mismatch",
            Refusal::ArgumentsInvalid => "arguments_invalid",
            Refusal::NotCanonical => "not_canonical",
            Refusal::TargetsMismatch => "targets_mismatch",
            Refusal::TooManyTargets => "too_many_targets",
            Refusal::NoFence => "no_fence",
            Refusal::NotAllowlisted => "not_allowlisted",
            Refusal::TeamMismatch => "team_mismatch",
            Refusal::TeamNotReported => "team_not_reported",
            Refusal::NotOnTeam => "not_on_team",
            Refusal::StreamNotFound => "stream_not_found",
            Refusal::EventMismatch => "event_mismatch",
            Refusal::FingerprintMoved => "fingerprint_moved",
            Refusal::Recording => "recording",
            Refusal::EventLive => "event_live",
            Refusal::EventSoon { .. } => "event_soon",
            Refusal::CoolingDown { .. } => "cooling_down",
            Refusal::HourlyLimit { .. } => "hourly_limit",
            Refusal::Offline => "offline",
            Refusal::ExpiredAtWrite { .. } => "expired_at_write",
            Refusal::ClaimTooLong => "claim_too_long",
            Refusal::ReadFailed => "read_failed",
            Refusal::NoSignIn => "no_sign_in",
            Refusal::SignInExpired => "sign_in_expired",
            Refusal::Busy => "busy",
            Refusal::Internal => "internal",
            Refusal::PasskeySynced => "passkey_synced",
            Refusal::NameChanged => "name_changed",
            Refusal::ConfirmOriginNotHeld => "confirm_origin_not_held",
            Refusal::PasskeyBackupStateWithoutEligible => "passkey_backup_state_without_eligible",
            Refusal::PasskeyBackupChanged => "passkey_backup_changed",
            Refusal::PasskeyOutOfScope { .. } => "passkey_out_of_scope",
            Refusal::Frozen { .. } => "frozen",
            Refusal::PasskeyAskerApproved { .. } => "passkey_asker_approved",
        }
    }
}

/// A refusal's reason code (as audit rows store it) in a few words, English or Spanish, for
/// reading the audit back; `None` for a code this build does not know.
pub fn code_words(code: &str, spanish: bool) -> Option<&'static str> {
    let (en, es) = match code {
        "peer_not_allowed" => (
            "a program not on the allowed list connected",
            "se conectó un programa que no está en la lista permitida",
        ),
        "frame_too_large" => (
            "the request was too large",
            "la solicitud era demasiado grande",
        ),
        "frame_empty" => ("the request was empty", "la solicitud estaba vacía"),
        "frame_truncated" => (
            "the request arrived incomplete",
            "la solicitud llegó incompleta",
        ),
        "malformed" => (
            "the request could not be read",
            "no se pudo leer la solicitud",
        ),
        "trailing_bytes" => (
            "the request had extra bytes",
            "la solicitud tenía bytes de más",
        ),
        "unknown_wire_version" => (
            "the request's version is not this executor's",
            "la versión de la solicitud no es la de este ejecutor",
        ),
        "no_signature" => (
            "the approval carried no signature",
            "la aprobación no llevaba firma",
        ),
        "unknown_key" => (
            "the approval was signed by a key that is not installed",
            "la aprobación la firmó una clave que no está instalada",
        ),
        "bad_signature" => (
            "the approval's signature did not verify",
            "la firma de la aprobación no se verificó",
        ),
        "passkey_too_many" => (
            "too many passkey confirmations",
            "demasiadas confirmaciones con passkey",
        ),
        "passkey_out_of_bounds" => (
            "a passkey confirmation was out of bounds",
            "una confirmación con passkey excedía los límites",
        ),
        "passkey_unknown_credential" => (
            "a passkey that is not enrolled here",
            "una passkey que no está registrada aquí",
        ),
        "passkey_client_data_malformed" => (
            "a passkey's client data could not be read",
            "no se pudieron leer los datos de cliente de una passkey",
        ),
        "passkey_wrong_type" => (
            "a passkey confirmation of the wrong type",
            "una confirmación con passkey de tipo equivocado",
        ),
        "passkey_challenge_mismatch" => (
            "a passkey signed another change",
            "una passkey firmó otro cambio",
        ),
        "passkey_origin_not_allowed" => (
            "a passkey was used on a page that is not allowed",
            "una passkey se usó en una página no permitida",
        ),
        "passkey_cross_origin" => (
            "a passkey was used from inside another site",
            "una passkey se usó desde dentro de otro sitio",
        ),
        "passkey_authenticator_data_short" => (
            "a passkey's authenticator data was too short",
            "los datos del autenticador de una passkey eran demasiado cortos",
        ),
        "passkey_rp_id_mismatch" => ("a passkey for another site", "una passkey de otro sitio"),
        "passkey_user_not_present" => (
            "the passkey saw no person present",
            "la passkey no vio a nadie presente",
        ),
        "passkey_user_not_verified" => (
            "the passkey did not verify the person",
            "la passkey no verificó a la persona",
        ),
        "passkey_signature_malformed" => (
            "a passkey signature could not be read",
            "no se pudo leer la firma de una passkey",
        ),
        "passkey_bad_signature" => (
            "a passkey signature did not verify",
            "la firma de una passkey no se verificó",
        ),
        "passkey_counter_not_increased" => (
            "a passkey's counter did not move forward (a copied passkey?)",
            "el contador de una passkey no avanzó (¿una passkey copiada?)",
        ),
        "passkey_required" => (
            "no person approved it with a passkey",
            "ninguna persona la aprobó con una passkey",
        ),
        "passkey_quorum_not_met" => (
            "not enough different people approved it",
            "no la aprobaron suficientes personas distintas",
        ),
        "unknown_claims_version" => (
            "the approval's version is not this executor's",
            "la versión de la aprobación no es la de este ejecutor",
        ),
        "claims_malformed" => (
            "the approval could not be read",
            "no se pudo leer la aprobación",
        ),
        "expired" => ("the approval had expired", "la aprobación había caducado"),
        "not_yet_valid" => (
            "the approval was not valid yet",
            "la aprobación aún no era válida",
        ),
        "lifetime_too_long" => (
            "the approval was valid for too long",
            "la aprobación valía durante demasiado tiempo",
        ),
        "replayed" => (
            "the approval had been used already",
            "la aprobación ya se había usado",
        ),
        "nonce_not_stored" => (
            "the approval could not be recorded as used",
            "no se pudo registrar la aprobación como usada",
        ),
        "tool_not_proposable" => (
            "the tool may not be proposed",
            "la herramienta no se puede proponer",
        ),
        "policy_digest_mismatch" => (
            "the two sides' tool policies differ",
            "las políticas de herramientas de los dos lados difieren",
        ),
        "schema_version_mismatch" => (
            "the two sides' tool schemas differ",
            "los esquemas de herramientas de los dos lados difieren",
        ),
        "arguments_invalid" => (
            "the arguments were not valid",
            "los argumentos no eran válidos",
        ),
        "not_canonical" => (
            "the arguments were not in canonical form",
            "los argumentos no estaban en forma canónica",
        ),
        "targets_mismatch" => (
            "the signed devices did not match the arguments",
            "los equipos firmados no coincidían con los argumentos",
        ),
        "too_many_targets" => ("too many devices at once", "demasiados equipos a la vez"),
        "no_fence" => (
            "no write fence is configured",
            "no hay una valla de escritura configurada",
        ),
        "not_allowlisted" => (
            "a device is not on the write allowlist",
            "un equipo no está en la lista de escritura permitida",
        ),
        "team_mismatch" => (
            "the sandbox team is not the configured one",
            "el equipo de pruebas no es el configurado",
        ),
        "team_not_reported" => (
            "Epiphan did not report the team",
            "Epiphan no informó del equipo",
        ),
        "not_on_team" => (
            "a device is not on the sandbox team",
            "un equipo no está en el equipo de pruebas",
        ),
        "stream_not_found" => (
            "the stream destination was not found",
            "no se encontró el destino de transmisión",
        ),
        "event_mismatch" => (
            "the event is not the device's",
            "el evento no es el del equipo",
        ),
        "fingerprint_moved" => (
            "the devices changed since the card was shown",
            "los equipos cambiaron desde que se mostró la tarjeta",
        ),
        "recording" => ("a device was recording", "un equipo estaba grabando"),
        "event_live" => ("an event was live", "había un evento en curso"),
        "event_soon" => ("an event starts soon", "un evento empieza pronto"),
        "cooling_down" => (
            "a device was changed too recently",
            "un equipo se cambió hace muy poco",
        ),
        "hourly_limit" => (
            "the hourly limit of changes was reached",
            "se alcanzó el límite de cambios por hora",
        ),
        "offline" => ("a device was offline", "un equipo estaba desconectado"),
        "expired_at_write" => (
            "the approval expired before the write",
            "la aprobación caducó antes de escribir",
        ),
        "claim_too_long" => (
            "a field of the approval was too long",
            "un campo de la aprobación era demasiado largo",
        ),
        "read_failed" => (
            "the live state could not be read",
            "no se pudo leer el estado en vivo",
        ),
        "no_sign_in" => (
            "the executor has no sandbox sign-in",
            "el ejecutor no tiene sesión de pruebas",
        ),
        "sign_in_expired" => (
            "the sandbox sign-in had expired",
            "la sesión de pruebas había caducado",
        ),
        "busy" => ("the executor was busy", "el ejecutor estaba ocupado"),
        "internal" => (
            "an internal problem (see the executor's log)",
            "un problema interno (vea el registro del ejecutor)",
        ),
        "name_changed" => (
            "a name it showed is not the name read now",
            "un nombre que mostró no es el que se lee ahora",
        ),
        "confirm_origin_not_held" => (
            "the confirm page's address was not held by its service",
            "la dirección de la página de confirmación no la tenía su servicio",
        ),
        "passkey_backup_state_without_eligible" => (
            "the passkey's flags say backed up but not eligible for backup",
            "los indicadores de la passkey dicen copiada pero no apta para copia",
        ),
        "passkey_backup_changed" => (
            "the passkey's backup flag is not the one recorded at enrolment",
            "el indicador de copia de la passkey no es el registrado al inscribirla",
        ),
        "passkey_asker_approved" => (
            "the person who asked approved it and may not count",
            "la persona que lo pidió lo aprobó y no puede contar",
        ),
        "frozen" => (
            "a freeze window of the team holds changes like it",
            "una ventana de congelación del equipo retiene cambios como este",
        ),
        "passkey_out_of_scope" => (
            "a person who approved it may not approve this change",
            "una persona que la aprobó no puede aprobar este cambio",
        ),
        "passkey_synced" => (
            "a synced passkey confirmed it, and only device-bound ones are accepted",
            "la confirmó una passkey sincronizada, y solo se aceptan las ligadas a un dispositivo",
        ),
        _ => return None,
    };
    Some(if spanish { es } else { en })
}

#[cfg(test)]
mod tests {
    use super::Refusal;
    use std::collections::BTreeSet;

    /// Every variant. The exhaustive `match` below stops the build when a variant is added
    /// without being listed here.
    fn all() -> Vec<Refusal> {
        let list = vec![
            Refusal::PeerNotAllowed,
            Refusal::FrameTooLarge,
            Refusal::FrameEmpty,
            Refusal::FrameTruncated,
            Refusal::Malformed,
            Refusal::TrailingBytes,
            Refusal::UnknownWireVersion,
            Refusal::NoSignature,
            Refusal::UnknownKey,
            Refusal::BadSignature,
            Refusal::PasskeyTooMany,
            Refusal::PasskeyOutOfBounds,
            Refusal::PasskeyUnknownCredential,
            Refusal::PasskeyClientDataMalformed,
            Refusal::PasskeyWrongType,
            Refusal::PasskeyChallengeMismatch,
            Refusal::PasskeyOriginNotAllowed,
            Refusal::PasskeyCrossOrigin,
            Refusal::PasskeyAuthenticatorDataShort,
            Refusal::PasskeyRpIdMismatch,
            Refusal::PasskeyUserNotPresent,
            Refusal::PasskeyUserNotVerified,
            Refusal::PasskeySignatureMalformed,
            Refusal::PasskeyBadSignature,
            Refusal::PasskeyCounterNotIncreased,
            Refusal::PasskeyRequired,
            Refusal::PasskeyQuorumNotMet { have: 1, need: 2 },
            Refusal::UnknownClaimsVersion,
            Refusal::ClaimsMalformed,
            Refusal::Expired,
            Refusal::NotYetValid,
            Refusal::LifetimeTooLong,
            Refusal::Replayed,
            Refusal::NonceNotStored,
            Refusal::ToolNotProposable,
            Refusal::PolicyDigestMismatch,
            Refusal::SchemaVersionMismatch,
            Refusal::ArgumentsInvalid,
            Refusal::NotCanonical,
            Refusal::TargetsMismatch,
            Refusal::TooManyTargets,
            Refusal::NoFence,
            Refusal::NotAllowlisted,
            Refusal::TeamMismatch,
            Refusal::TeamNotReported,
            Refusal::NotOnTeam,
            Refusal::StreamNotFound,
            Refusal::EventMismatch,
            Refusal::FingerprintMoved,
            Refusal::Recording,
            Refusal::EventLive,
            Refusal::EventSoon { minutes: 7 },
            Refusal::CoolingDown { minutes: 6 },
            Refusal::HourlyLimit { limit: 20 },
            Refusal::Offline,
            Refusal::ExpiredAtWrite { late_secs: 3 },
            Refusal::ClaimTooLong,
            Refusal::ReadFailed,
            Refusal::NoSignIn,
            Refusal::SignInExpired,
            Refusal::Busy,
            Refusal::Internal,
            Refusal::PasskeySynced,
            Refusal::NameChanged,
            Refusal::ConfirmOriginNotHeld,
            Refusal::PasskeyBackupStateWithoutEligible,
            Refusal::PasskeyBackupChanged,
            Refusal::PasskeyOutOfScope { have: 0, need: 1 },
            Refusal::Frozen {
                until: 0,
                reason: "finals week".into(),
            },
            Refusal::PasskeyAskerApproved { have: 0, need: 1 },
        ];
        for r in &list {
            match r {
                Refusal::PeerNotAllowed
                | Refusal::FrameTooLarge
                | Refusal::FrameEmpty
                | Refusal::FrameTruncated
                | Refusal::Malformed
                | Refusal::TrailingBytes
                | Refusal::UnknownWireVersion
                | Refusal::NoSignature
                | Refusal::UnknownKey
                | Refusal::BadSignature
                | Refusal::PasskeyTooMany
                | Refusal::PasskeyOutOfBounds
                | Refusal::PasskeyUnknownCredential
                | Refusal::PasskeyClientDataMalformed
                | Refusal::PasskeyWrongType
                | Refusal::PasskeyChallengeMismatch
                | Refusal::PasskeyOriginNotAllowed
                | Refusal::PasskeyCrossOrigin
                | Refusal::PasskeyAuthenticatorDataShort
                | Refusal::PasskeyRpIdMismatch
                | Refusal::PasskeyUserNotPresent
                | Refusal::PasskeyUserNotVerified
                | Refusal::PasskeySignatureMalformed
                | Refusal::PasskeyBadSignature
                | Refusal::PasskeyCounterNotIncreased
                | Refusal::PasskeyRequired
                | Refusal::PasskeyQuorumNotMet { .. }
                | Refusal::UnknownClaimsVersion
                | Refusal::ClaimsMalformed
                | Refusal::Expired
                | Refusal::NotYetValid
                | Refusal::LifetimeTooLong
                | Refusal::Replayed
                | Refusal::NonceNotStored
                | Refusal::ToolNotProposable
                | Refusal::PolicyDigestMismatch
                | Refusal::SchemaVersionMismatch
                | Refusal::ArgumentsInvalid
                | Refusal::NotCanonical
                | Refusal::TargetsMismatch
                | Refusal::TooManyTargets
                | Refusal::NoFence
                | Refusal::NotAllowlisted
                | Refusal::TeamMismatch
                | Refusal::TeamNotReported
                | Refusal::NotOnTeam
                | Refusal::StreamNotFound
                | Refusal::EventMismatch
                | Refusal::FingerprintMoved
                | Refusal::Recording
                | Refusal::EventLive
                | Refusal::EventSoon { .. }
                | Refusal::CoolingDown { .. }
                | Refusal::HourlyLimit { .. }
                | Refusal::Offline
                | Refusal::ExpiredAtWrite { .. }
                | Refusal::ClaimTooLong
                | Refusal::ReadFailed
                | Refusal::NoSignIn
                | Refusal::SignInExpired
                | Refusal::Busy
                | Refusal::Internal
                | Refusal::PasskeySynced
                | Refusal::NameChanged
                | Refusal::ConfirmOriginNotHeld
                | Refusal::PasskeyBackupStateWithoutEligible
                | Refusal::PasskeyBackupChanged
                | Refusal::PasskeyOutOfScope { .. }
                | Refusal::Frozen { .. }
                | Refusal::PasskeyAskerApproved { .. } => {}
            }
        }
        list
    }

    #[test]
    fn codes_are_unique_snake_case() {
        let all = all();
        let codes: BTreeSet<&str> = all.iter().map(Refusal::code).collect();
        assert_eq!(codes.len(), all.len(), "two variants share a code");
        for code in codes {
            assert!(!code.is_empty());
            assert!(
                code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{code} is not snake_case"
            );
            assert!(!code.starts_with('_') && !code.ends_with('_') && !code.contains("__"));
        }
    }

    #[cfg(feature = "assistant")]
    #[test]
    fn messages_are_sentences_that_say_nothing_ran_and_what_to_do() {
        let all = all();
        let messages: BTreeSet<String> = all.iter().map(Refusal::message).collect();
        assert_eq!(messages.len(), all.len(), "two variants share a message");
        for message in messages {
            assert!(message.contains("Nothing ran."), "{message}");
            assert!(message.ends_with('.'), "{message}");
            assert!(
                message.starts_with(|c: char| c.is_ascii_uppercase()),
                "{message}"
            );
            // What to do comes after "Nothing ran.".
            let advice = message.split("Nothing ran.").nth(1).unwrap_or_default();
            assert!(advice.trim().len() > 10, "no advice in {message}");
        }
    }

    #[cfg(feature = "assistant")]
    #[test]
    fn event_soon_message_names_the_minutes() {
        assert!(
            Refusal::EventSoon { minutes: 1 }
                .message()
                .contains("in 1 minute,")
        );
        assert!(
            Refusal::EventSoon { minutes: 12 }
                .message()
                .contains("in 12 minutes,")
        );
        assert_eq!(Refusal::EventSoon { minutes: 3 }.code(), "event_soon");
    }

    #[cfg(feature = "assistant")]
    #[test]
    fn display_is_the_message() {
        assert_eq!(Refusal::Replayed.to_string(), Refusal::Replayed.message());
    }
}
