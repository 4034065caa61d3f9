//! The one duration grammar of every flag (`--duration`, `--work`, `--probe`, `--settle`,
//! `--scrape-interval`): `90s`, `1m30s`, `1.5m`, `500ms`, `2h`, `0`; a bare number is seconds.

use std::time::Duration;

/// The longest duration any flag takes. Windows, waits and deadlines are added to `Instant`s, which panic on
/// overflow (`--duration 1e19`); no window or wait of this tool is meant to last longer than a month.
pub const MAX: Duration = Duration::from_secs(30 * 24 * 3600);

/// Why a text is not a duration; the message quotes the text and shows the expected form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?}: {why} (expected e.g. 500ms, 30s, 2m, 1h)")]
pub struct DurationError {
    text: String,
    why: String,
}

/// Parses a duration.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    let bad = |why: &str| DurationError {
        text: text.to_string(),
        why: why.to_string(),
    };
    if t.is_empty() {
        return Err(bad("empty"));
    }
    if t.starts_with('-') {
        return Err(bad("a duration cannot be negative"));
    }
    let bounded = |secs: f64| -> Result<Duration, DurationError> {
        let d = Duration::try_from_secs_f64(secs).map_err(|_| bad("not a finite duration"))?;
        if d > MAX {
            return Err(bad("longer than the maximum of 30 days"));
        }
        Ok(d)
    };
    if let Ok(secs) = t.parse::<f64>() {
        return bounded(secs);
    }
    let mut total = 0f64;
    let mut rest = t;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| bad("missing a unit"))?;
        if num_len == 0 {
            return Err(bad("expected a number"));
        }
        let (num, tail) = rest.split_at(num_len);
        let value: f64 = num.parse().map_err(|_| bad("not a number"))?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad(&format!("unknown unit {unit:?}"))),
        };
        total += value * scale;
        rest = next;
    }
    bounded(total)
}

/// For clap's `value_parser`: the same grammar, the error as text.
pub fn parse_arg(text: &str) -> Result<Duration, String> {
    parse(text).map_err(|e| e.to_string())
}

/// Formats a duration the way the flags take it: `60s`, `1m30s`, `10ms`, `1.5s`.
pub fn format(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let s = d.as_secs_f64();
    if s.fract() > 0.0 && s < 60.0 {
        return format!("{s:.1}s");
    }
    let whole = d.as_secs();
    match (whole / 60, whole % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_forms() {
        let ok = |s: &str| parse(s).ok();
        assert_eq!(ok("60s"), Some(Duration::from_secs(60)));
        assert_eq!(ok("2m"), Some(Duration::from_secs(120)));
        assert_eq!(ok("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(ok("1.5m"), Some(Duration::from_secs(90)));
        assert_eq!(ok("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(ok("2h"), Some(Duration::from_secs(7200)));
        assert_eq!(ok("15"), Some(Duration::from_secs(15)));
        assert_eq!(ok(" 45 "), Some(Duration::from_secs(45)));
        assert_eq!(ok("0"), Some(Duration::ZERO));
        assert_eq!(ok("720h"), Some(MAX));
    }

    #[test]
    fn bad_text_says_why() {
        for (bad, why) in [
            ("", "empty"),
            ("-1", "negative"),
            ("-5s", "negative"),
            ("s", "expected a number"),
            ("10x", "unknown unit"),
            ("5 parsecs", "unknown unit"),
            ("ten", "expected a number"),
            ("10s5", "missing a unit"),
            ("1e400", "not a finite duration"),
            ("1e19", "longer than the maximum of 30 days"),
            ("31d", "unknown unit"),
            ("745h", "longer than the maximum"),
            ("9999999999999999999s", "longer than the maximum"),
        ] {
            let e = parse(bad).expect_err(bad).to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
            assert!(e.contains("expected e.g."), "{bad:?}: {e}");
        }
    }

    #[test]
    fn formats_as_the_flags_take_it() {
        assert_eq!(format(Duration::from_secs(90)), "1m30s");
        assert_eq!(format(Duration::from_millis(10)), "10ms");
        assert_eq!(format(Duration::from_secs(60)), "1m");
        assert_eq!(format(Duration::from_millis(1500)), "1.5s");
        for d in [Duration::from_secs(90), Duration::from_millis(10)] {
            assert_eq!(parse(&format(d)), Ok(d));
        }
    }
}
