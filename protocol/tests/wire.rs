//! The socket messages: exact round trips, and refusals instead of panics for anything else.

// Test code: a panic is the failure report, and fixed-size fixtures are indexed directly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;

use fleetwatch_protocol::claims::{ApprovalSignature, KeyId, SignedApproval};
use fleetwatch_protocol::fleet::RoomBlock;
use fleetwatch_protocol::passkey::PasskeyAssertion;
use fleetwatch_protocol::refusal::Refusal;
use fleetwatch_protocol::wire::{
    self, ChannelFacts, DecodeError, DescribeRequest, Description, DeviceFacts, EventFacts,
    ExecuteRequest, MAX_FRAME, Outcome, OutcomeKind, PublisherState, Request, RequestEnvelope,
    Response, ResponseEnvelope, RoomFacts, RoomList, StatusReport, StreamFacts, ToolQuorum,
    WIRE_VERSION,
};
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9-]{0,12}", any::<String>()]
}

fn arb_signed() -> impl Strategy<Value = SignedApproval> {
    (
        proptest::collection::vec(any::<u8>(), 0..300),
        proptest::collection::vec(
            (
                any::<[u8; 8]>(),
                proptest::collection::vec(any::<u8>(), 0..70),
            )
                .prop_map(|(id, signature)| ApprovalSignature {
                    key_id: KeyId(id),
                    signature,
                }),
            0..3,
        ),
        proptest::collection::vec(arb_assertion(), 0..3),
    )
        .prop_map(|(claims, signatures, passkeys)| SignedApproval {
            claims,
            signatures,
            passkeys,
        })
}

fn arb_assertion() -> impl Strategy<Value = PasskeyAssertion> {
    let bytes = |max| proptest::collection::vec(any::<u8>(), 0..max);
    (bytes(40), bytes(60), bytes(200), bytes(80)).prop_map(
        |(credential_id, authenticator_data, client_data_json, signature)| PasskeyAssertion {
            credential_id,
            authenticator_data,
            client_data_json,
            signature,
        },
    )
}

fn arb_request() -> impl Strategy<Value = Request> {
    prop_oneof![
        (text(), text())
            .prop_map(|(tool, arguments)| Request::Describe(DescribeRequest { tool, arguments })),
        (arb_signed(), any::<[u8; 32]>()).prop_map(|(approval, assistant_chain_head)| {
            Request::Execute(ExecuteRequest {
                approval,
                assistant_chain_head,
            })
        }),
        Just(Request::Status),
        any::<[u8; 16]>().prop_map(Request::Receipt),
        Just(Request::Rooms),
    ]
}

/// Every refusal, found through its postcard variant index so a new variant is covered
/// without editing this file.
fn arb_refusal() -> impl Strategy<Value = Refusal> {
    (0u8..100, any::<(u32, u32)>()).prop_filter_map("not a variant", |(index, payload)| {
        let mut bytes = vec![index];
        bytes.extend(postcard::to_stdvec(&payload).ok()?);
        postcard::take_from_bytes::<Refusal>(&bytes)
            .ok()
            .map(|(r, _)| r)
    })
}

fn arb_block() -> impl Strategy<Value = RoomBlock> {
    prop_oneof![
        Just(RoomBlock::None),
        Just(RoomBlock::Recording),
        Just(RoomBlock::Live),
        any::<u32>().prop_map(RoomBlock::Soon),
    ]
}

fn arb_device() -> impl Strategy<Value = DeviceFacts> {
    (
        text(),
        any::<[bool; 4]>(),
        (text(), text(), text(), text()),
        proptest::collection::vec(
            (text(), text(), any::<bool>(), arb_warnings()).prop_map(
                |(number, name, recording, warnings)| ChannelFacts {
                    number,
                    name,
                    recording,
                    warnings,
                },
            ),
            0..3,
        ),
        proptest::option::of(
            (
                text(),
                text(),
                text(),
                proptest::option::of(text()),
                proptest::option::of(any::<bool>()),
            )
                .prop_map(|(id, title, start, end, confirmed)| EventFacts {
                    id,
                    title,
                    start,
                    end,
                    confirmed,
                }),
        ),
        (arb_block(), arb_warnings()),
    )
        .prop_map(
            |(
                id,
                [on_team, allowlisted, online, recording],
                (name, model, firmware, newest_firmware),
                channels,
                event,
                (block, warnings),
            )| {
                DeviceFacts {
                    id,
                    on_team,
                    allowlisted,
                    name,
                    model,
                    firmware,
                    newest_firmware,
                    online,
                    recording,
                    channels,
                    event,
                    warnings,
                    block,
                }
            },
        )
}

fn arb_warnings() -> impl Strategy<Value = Vec<fleetwatch_protocol::fleet::Warning>> {
    proptest::collection::vec(
        (
            (text(), text(), text()),
            proptest::option::of(text()),
            proptest::option::of(text()),
            proptest::option::of(any::<u8>()),
        )
            .prop_map(|((id, label, message), source, channel, used_percent)| {
                fleetwatch_protocol::fleet::Warning {
                    id,
                    label,
                    message,
                    channel_name: source.clone(),
                    source,
                    channel,
                    used_percent,
                }
            }),
        0..2,
    )
}

fn arb_publisher() -> impl Strategy<Value = PublisherState> {
    prop_oneof![
        Just(PublisherState::Unknown),
        Just(PublisherState::Absent),
        Just(PublisherState::Stopped),
        Just(PublisherState::Running),
    ]
}

fn arb_description() -> impl Strategy<Value = Description> {
    (
        proptest::collection::vec(text(), 0..3),
        proptest::collection::vec(arb_device(), 0..3),
        proptest::option::of(
            (text(), any::<bool>(), text(), text(), arb_publisher()).prop_map(
                |(id, found, name, host, publisher)| StreamFacts {
                    id,
                    found,
                    name,
                    host,
                    publisher,
                },
            ),
        ),
        proptest::option::of(any::<bool>()),
        text(),
        proptest::option::of(text()),
        any::<bool>(),
        any::<[u8; 32]>(),
        any::<u32>(),
    )
        .prop_map(
            |(
                targets,
                devices,
                stream,
                event_matches,
                fingerprint,
                team_id,
                disruptive,
                policy_digest,
                schema_version,
            )| Description {
                targets,
                names: Vec::new(),
                devices,
                stream,
                event_matches,
                frozen: disruptive.then(|| fleetwatch_protocol::wire::FreezeReport {
                    start: 1,
                    end: i64::from(schema_version),
                    holds: "disruptive changes".into(),
                    reason: fingerprint.clone(),
                    in_force: true,
                }),
                fingerprint,
                team_id,
                disruptive,
                policy_digest,
                schema_version,
            },
        )
}

fn arb_response() -> impl Strategy<Value = Response> {
    prop_oneof![
        arb_description().prop_map(Response::Described),
        (
            prop_oneof![
                Just(OutcomeKind::Done),
                Just(OutcomeKind::Unknown),
                proptest::collection::btree_map(text(), text(), 0..4).prop_map(OutcomeKind::Error),
            ],
            any::<[u8; 32]>()
        )
            .prop_map(|(kind, chain_head)| Response::Executed(Outcome { kind, chain_head })),
        (
            text(),
            any::<[bool; 2]>(),
            proptest::collection::vec(any::<[u8; 8]>().prop_map(KeyId), 0..3),
            any::<[u8; 32]>(),
            any::<[u8; 32]>(),
            any::<u32>(),
            proptest::collection::vec(
                (text(), any::<u32>(), any::<u32>()).prop_map(|(tool, calm, disruptive)| {
                    ToolQuorum {
                        tool,
                        calm,
                        disruptive,
                    }
                }),
                0..4
            )
        )
            .prop_map(
                |(
                    version,
                    [fence_configured, sandbox_sign_in],
                    key_ids,
                    policy_digest,
                    chain_head,
                    passkeys_enrolled,
                    quorums,
                )| {
                    Response::Status(StatusReport {
                        version,
                        fence_configured,
                        sandbox_sign_in,
                        key_ids,
                        policy_digest,
                        chain_head,
                        passkeys_enrolled,
                        approvers: vec!["approver ana es256 AA BB device-bound Ana".into()],
                        trial: fence_configured,
                        quorums,
                        limits: fleetwatch_protocol::wire::LimitsReport {
                            writes_last_hour: passkeys_enrolled,
                            cooling: vec![fleetwatch_protocol::wire::Cooling {
                                device: "abcdef0123".into(),
                                changed_at: i64::from(passkeys_enrolled),
                                until: i64::from(passkeys_enrolled) + 600,
                            }],
                            ..Default::default()
                        },
                        confirm_origin_not_held: (!fence_configured)
                            .then(|| "uid 1000 also listens on port 8768".to_owned()),
                        freeze: vec![fleetwatch_protocol::wire::FreezeReport {
                            start: 10,
                            end: 20,
                            holds: "every change".into(),
                            reason: "council budget session".into(),
                            in_force: sandbox_sign_in,
                        }],
                    })
                }
            ),
        arb_refusal().prop_map(Response::Refused),
        proptest::option::of(text()).prop_map(Response::Receipt),
        (
            proptest::collection::vec(
                (
                    text(),
                    text(),
                    proptest::collection::vec((text(), text()), 0..3)
                ),
                0..4
            ),
            any::<u32>()
        )
            .prop_map(|(rooms, left_out)| Response::Rooms(RoomList {
                rooms: rooms
                    .into_iter()
                    .map(|(id, name, channels)| RoomFacts { id, name, channels })
                    .collect(),
                left_out,
            })),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_request_round_trips(request in arb_request()) {
        let body = wire::encode_request(&request).expect("encode");
        prop_assert_eq!(wire::decode_request(&body), Ok(request));
    }

    #[test]
    fn any_response_round_trips(response in arb_response()) {
        let body = wire::encode_response(&response).expect("encode");
        prop_assert_eq!(wire::decode_response(&body), Ok(response));
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = wire::decode_request(&bytes);
        let _ = wire::decode_response(&bytes);
    }

    #[test]
    fn damaged_requests_never_panic(
        request in arb_request(),
        position in any::<prop::sample::Index>(),
        byte: u8,
        cut in any::<prop::sample::Index>(),
    ) {
        let mut body = wire::encode_request(&request).expect("encode");
        let at = position.index(body.len());
        body[at] = byte;
        let _ = wire::decode_request(&body);
        body.truncate(cut.index(body.len()));
        let _ = wire::decode_request(&body);
    }

    #[test]
    fn every_proper_prefix_is_refused(request in arb_request()) {
        let body = wire::encode_request(&request).expect("encode");
        for len in 0..body.len() {
            prop_assert!(wire::decode_request(&body[..len]).is_err(), "prefix {}", len);
        }
    }
}

#[test]
fn every_refusal_variant_round_trips() {
    // Indices are contiguous from zero; count them and make sure each survives the wire.
    let mut count = 0u8;
    loop {
        // Payload enough for the widest variant (two integers); the rest is left unread.
        let mut bytes = vec![count];
        bytes.extend(postcard::to_stdvec(&(5u32, 7u32)).expect("encode"));
        let Ok((refusal, _)) = postcard::take_from_bytes::<Refusal>(&bytes) else {
            break;
        };
        for spanish in [false, true] {
            assert!(
                fleetwatch_protocol::refusal::code_words(refusal.code(), spanish).is_some(),
                "{} has no words for reading the audit back",
                refusal.code()
            );
        }
        let response = Response::Refused(refusal);
        let body = wire::encode_response(&response).expect("encode");
        assert_eq!(wire::decode_response(&body), Ok(response));
        count += 1;
    }
    assert!(count >= 57, "only {count} refusal variants found");
}

#[test]
fn encoding_is_the_declared_envelope() {
    let request = Request::Describe(DescribeRequest {
        tool: "reboot_device".to_owned(),
        arguments: r#"{"device_id":"0123abcd"}"#.to_owned(),
    });
    let body = wire::encode_request(&request).expect("encode");
    let envelope = RequestEnvelope {
        version: WIRE_VERSION,
        request: request.clone(),
    };
    assert_eq!(body, postcard::to_stdvec(&envelope).expect("encode"));
    let response = Response::Refused(Refusal::Replayed);
    let body = wire::encode_response(&response).expect("encode");
    let envelope = ResponseEnvelope {
        version: WIRE_VERSION,
        response,
    };
    assert_eq!(body, postcard::to_stdvec(&envelope).expect("encode"));
}

#[test]
fn empty_frame_is_refused() {
    assert_eq!(wire::decode_request(&[]), Err(DecodeError::Empty));
    assert_eq!(wire::decode_response(&[]), Err(DecodeError::Empty));
}

#[test]
fn oversize_frame_is_refused_before_decoding() {
    // A valid envelope padded past the cap: the size is what is refused.
    let mut body = wire::encode_request(&Request::Status).expect("encode");
    body.resize(MAX_FRAME + 1, 0);
    assert_eq!(wire::decode_request(&body), Err(DecodeError::TooLarge));
    assert_eq!(wire::decode_response(&body), Err(DecodeError::TooLarge));
    // At exactly the cap the size is fine; the padding is what is refused.
    body.truncate(MAX_FRAME);
    assert_eq!(wire::decode_request(&body), Err(DecodeError::TrailingBytes));
}

#[test]
fn oversize_message_is_not_encoded() {
    let request = Request::Describe(DescribeRequest {
        tool: "x".to_owned(),
        arguments: "a".repeat(MAX_FRAME),
    });
    assert_eq!(wire::encode_request(&request), Err(DecodeError::TooLarge));
    let mut errors = BTreeMap::new();
    errors.insert("0123abcd".to_owned(), "e".repeat(MAX_FRAME));
    let response = Response::Executed(Outcome {
        kind: OutcomeKind::Error(errors),
        chain_head: [0; 32],
    });
    assert_eq!(wire::encode_response(&response), Err(DecodeError::TooLarge));
}

#[test]
fn unknown_version_is_recognised_before_the_rest() {
    for version in [0u16, WIRE_VERSION + 1, u16::MAX] {
        let envelope = RequestEnvelope {
            version,
            request: Request::Status,
        };
        let body = postcard::to_stdvec(&envelope).expect("encode");
        assert_eq!(
            wire::decode_request(&body),
            Err(DecodeError::UnknownVersion)
        );
        // Whatever follows the version is not looked at.
        let mut garbage = postcard::to_stdvec(&version).expect("encode");
        garbage.extend_from_slice(&[0xff; 9]);
        assert_eq!(
            wire::decode_request(&garbage),
            Err(DecodeError::UnknownVersion)
        );
        assert_eq!(
            wire::decode_response(&garbage),
            Err(DecodeError::UnknownVersion)
        );
    }
}

#[test]
fn trailing_bytes_are_refused() {
    let mut body = wire::encode_request(&Request::Status).expect("encode");
    body.push(0);
    assert_eq!(wire::decode_request(&body), Err(DecodeError::TrailingBytes));
    let mut body = wire::encode_response(&Response::Refused(Refusal::Busy)).expect("encode");
    body.push(0);
    assert_eq!(
        wire::decode_response(&body),
        Err(DecodeError::TrailingBytes)
    );
}

#[test]
fn malformed_bodies_are_refused() {
    let version = postcard::to_stdvec(&WIRE_VERSION).expect("encode");
    // Version alone; an unknown request variant; a version that is not a valid varint.
    let mut unknown_variant = version.clone();
    unknown_variant.push(99);
    for body in [
        version.clone(),
        unknown_variant,
        vec![0xff, 0xff, 0xff, 0xff],
    ] {
        assert_eq!(
            wire::decode_request(&body),
            Err(DecodeError::Malformed),
            "{body:?}"
        );
    }
}

#[test]
fn decode_errors_map_to_refusals() {
    assert_eq!(DecodeError::Empty.refusal(), Refusal::FrameEmpty);
    assert_eq!(DecodeError::TooLarge.refusal(), Refusal::FrameTooLarge);
    assert_eq!(
        DecodeError::UnknownVersion.refusal(),
        Refusal::UnknownWireVersion
    );
    assert_eq!(DecodeError::Malformed.refusal(), Refusal::Malformed);
    assert_eq!(DecodeError::TrailingBytes.refusal(), Refusal::TrailingBytes);
}
