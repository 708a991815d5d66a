//! Behaviour that mutation testing showed no other test pinned down (docs/TESTING.md): each test
//! here fails on a specific code change the rest of the suite let through.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fleetwatch_protocol::wire::{self, DecodeError, DescribeRequest, Request};

fn describe_with(arguments_len: usize) -> Request {
    Request::Describe(DescribeRequest {
        tool: "batch_recording".to_owned(),
        arguments: "a".repeat(arguments_len),
    })
}

/// The cap is 64 KiB exactly. A body of that size must pass both ends: a lower cap would
/// refuse approvals whose arguments or fingerprint are long but legitimate, and the other
/// tests only compare against the constant, so they move with it.
#[test]
fn a_body_of_exactly_64_kib_passes_and_one_byte_more_is_refused() {
    const SIXTY_FOUR_KIB: usize = 65_536;
    // The string length prefix takes three bytes for any length from 16 KiB to 2 MiB, so the
    // framing overhead measured at 20,000 is the overhead at 64 KiB too.
    let overhead = wire::encode_request(&describe_with(20_000)).unwrap().len() - 20_000;
    let fits = describe_with(SIXTY_FOUR_KIB - overhead);

    let body = wire::encode_request(&fits).expect("a 64 KiB body encodes");
    assert_eq!(body.len(), SIXTY_FOUR_KIB);
    assert_eq!(wire::decode_request(&body), Ok(fits));

    assert_eq!(
        wire::encode_request(&describe_with(SIXTY_FOUR_KIB - overhead + 1)),
        Err(DecodeError::TooLarge)
    );
    // One byte more is refused for its size before anything is decoded: the extra byte would
    // otherwise be reported as trailing.
    let mut longer = body;
    longer.push(0);
    assert_eq!(wire::decode_request(&longer), Err(DecodeError::TooLarge));
    assert_eq!(wire::decode_response(&longer), Err(DecodeError::TooLarge));
}
