//! Epiphan identifier patterns. Each check matches the whole value (a trailing newline fails).

/// A master (device) ID: `^[0-9a-f]{8,32}$`.
pub fn is_master_id(s: &str) -> bool {
    let _ = s;
    todo!()
}

/// A channel ID: `^[0-9a-f]{8,32}-[1-9][0-9]{0,2}$`.
pub fn is_channel_id(s: &str) -> bool {
    let _ = s;
    todo!()
}

/// The master ID a target resolves to: itself for a master ID, the part before the hyphen for
/// a channel ID, `None` for anything else.
pub fn device_of(target: &str) -> Option<&str> {
    let _ = target;
    todo!()
}

/// A stream endpoint ID: a UUID in the 8-4-4-4-12 hex form (either case).
pub fn is_uuid(s: &str) -> bool {
    let _ = s;
    todo!()
}

/// An event ID: `^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`.
pub fn is_event_id(s: &str) -> bool {
    let _ = s;
    todo!()
}

/// A channel number as a tool argument: `^[1-9][0-9]{0,2}$`.
pub fn is_channel_number(s: &str) -> bool {
    let _ = s;
    todo!()
}
