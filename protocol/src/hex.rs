//! Hexadecimal, spelled one way everywhere: audit rows, chain heads, key IDs, approval IDs,
//! policy digests, the page secret. Encoding is lower case; decoding accepts either case and
//! nothing else (no `0x`, no whitespace, no odd length), so a value read back is exactly a
//! value written, and a stray character is a refusal rather than a silently shorter value.

/// Lower-case hex of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len().saturating_mul(2));
    for byte in bytes {
        for nibble in [byte >> 4, byte & 0x0f] {
            // A nibble is below 16, so the lookup always finds a digit.
            if let Some(&digit) = DIGITS.get(usize::from(nibble)) {
                out.push(char::from(digit));
            }
        }
    }
    out
}

fn nibble(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

/// The bytes `text` spells: an even number of hex digits of either case, nothing else.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks_exact(2)
        .map(|pair| match pair {
            [high, low] => Some((nibble(*high)? << 4) | nibble(*low)?),
            _ => None,
        })
        .collect()
}

/// Exactly `N` bytes (`2 × N` digits), or `None`.
pub fn decode_array<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != N.checked_mul(2)? {
        return None;
    }
    decode(text)?.try_into().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn known_answers_and_round_trips() {
        assert_eq!(encode(&[]), "");
        assert_eq!(encode(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(decode("000fa5ff").unwrap(), vec![0x00, 0x0f, 0xa5, 0xff]);
        assert_eq!(decode("000FA5Ff").unwrap(), vec![0x00, 0x0f, 0xa5, 0xff]);
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(&encode(&all)).unwrap(), all);
        assert_eq!(decode_array::<2>("abCD"), Some([0xab, 0xcd]));
    }

    #[test]
    fn anything_but_hex_digits_is_refused() {
        for bad in ["0", "abc", "0x00", " 00", "00 ", "0g", "+1", "é0", "00\n"] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
        assert_eq!(decode_array::<2>("abcdef"), None);
        assert_eq!(decode_array::<2>("ab"), None);
        assert_eq!(decode_array::<32>(&"ab".repeat(32)), Some([0xab; 32]));
    }
}
