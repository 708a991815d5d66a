//! Epiphan identifier patterns. Each check matches the whole value (a trailing newline fails).
//!
//! Written as byte checks rather than regular expressions so that "whole value" cannot be lost
//! to a forgotten anchor, and so that `$` cannot match before a final newline.

fn is_lower_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

fn is_hex_either_case(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

/// A master (device) ID: `^[0-9a-f]{8,32}$`.
pub fn is_master_id(s: &str) -> bool {
    (8..=32).contains(&s.len()) && s.bytes().all(is_lower_hex)
}

/// A channel ID: `^[0-9a-f]{8,32}-[1-9][0-9]{0,2}$`.
pub fn is_channel_id(s: &str) -> bool {
    match s.split_once('-') {
        Some((device, channel)) => is_master_id(device) && is_channel_number(channel),
        None => false,
    }
}

/// The master ID a target resolves to: itself for a master ID, the part before the hyphen for
/// a channel ID, `None` for anything else.
pub fn device_of(target: &str) -> Option<&str> {
    if is_master_id(target) {
        return Some(target);
    }
    match target.split_once('-') {
        Some((device, _)) if is_channel_id(target) => Some(device),
        _ => None,
    }
}

/// A stream endpoint ID: a UUID in the 8-4-4-4-12 hex form (either case).
pub fn is_uuid(s: &str) -> bool {
    let mut groups = s.split('-');
    for expected in [8usize, 4, 4, 4, 12] {
        match groups.next() {
            Some(group) if group.len() == expected && group.bytes().all(is_hex_either_case) => {}
            _ => return false,
        }
    }
    groups.next().is_none()
}

/// An event ID: `^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`.
pub fn is_event_id(s: &str) -> bool {
    let mut bytes = s.bytes();
    match bytes.next() {
        Some(first) if first.is_ascii_alphanumeric() => {}
        _ => return false,
    }
    s.len() <= 128 && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A channel number as a tool argument: `^[1-9][0-9]{0,2}$`.
pub fn is_channel_number(s: &str) -> bool {
    let mut bytes = s.bytes();
    match bytes.next() {
        Some(b'1'..=b'9') => {}
        _ => return false,
    }
    s.len() <= 3 && bytes.all(|b| b.is_ascii_digit())
}
