//! Does a value look like a timestamp or a nonce, i.e. something a controller makes up anew on every write?

/// True for RFC 3339 / ISO 8601 timestamps, Unix times in s/ms/µs/ns, UUIDs and long hex nonces.
pub fn looks_volatile(value: &str) -> bool {
    let v = value.trim().trim_matches('"');
    is_iso_timestamp(v) || is_unix_time(v) || is_uuid(v) || is_hex_nonce(v)
}

/// `2025-01-01T00:00:00Z`, `2025-01-01 00:00:00.123+01:00`, ...: a date followed by a time.
fn is_iso_timestamp(v: &str) -> bool {
    let b = v.as_bytes();
    if b.len() < 16 {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && (b[10] == b'T' || b[10] == b' ' || b[10] == b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
}

/// Seconds, milliseconds, microseconds or nanoseconds since the epoch, for dates between 2001 and 2286.
fn is_unix_time(v: &str) -> bool {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if int.is_empty()
        || !int.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return false;
    }
    matches!(int.len(), 10 | 13 | 16 | 19)
        && int.starts_with(['1', '2', '3', '4', '5', '6', '7', '8', '9'])
}

fn is_uuid(v: &str) -> bool {
    let parts: Vec<&str> = v.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.bytes().all(|c| c.is_ascii_hexdigit()))
}

/// 16 or more hex digits with both letters and digits: a random token or a hash of something volatile.
fn is_hex_nonce(v: &str) -> bool {
    v.len() >= 16
        && v.bytes().all(|c| c.is_ascii_hexdigit())
        && v.bytes().any(|c| c.is_ascii_digit())
        && v.bytes().any(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volatile_values() {
        for v in [
            "2025-01-01T00:00:00Z",
            "2026-11-29T21:30:17.123456789+00:00",
            "2026-11-29 21:30:17",
            "1764451817",
            "1764451817123",
            "1764451817123456789",
            "1764451817.5",
            "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
            "9f86d081884c7d659a2feaa0c55ad015",
        ] {
            assert!(looks_volatile(v), "{v}");
        }
    }

    #[test]
    fn stable_values() {
        for v in [
            "",
            "true",
            "Ready",
            "42",
            "v1.2.3",
            "2025-01-01",
            "my-widget-7",
            "deadbeefdeadbeef", // letters only: a word, not a nonce
            "1234567890123456", // digits only, 16 long, but begins a plausible µs time...
        ] {
            let expect = v == "1234567890123456";
            assert_eq!(looks_volatile(v), expect, "{v}");
        }
    }
}
