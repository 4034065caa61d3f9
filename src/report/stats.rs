//! A run's stats as typed values for the machine formats (`-o json`, SARIF), from the pairs the text formats print.
//!
//! Each command builds its stats as `(label, text)` pairs for people (`("time", "0.12s")`); a program reading
//! `-o json` wants a number under a stable key (`"seconds": 0.12`). The pairs are the one source, so both readings
//! stay in step; a value that is neither a count nor a quantity in a known unit stays text.

use serde::Serialize;
use serde::ser::SerializeMap;

/// One stat's value: a count, a quantity in the unit its key ends with, or text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum StatValue {
    Count(u64),
    Quantity(f64),
    Text(String),
}

/// The units a stat's text may end with, and the key suffix each becomes.
const UNITS: &[(&str, &str)] = &[(" MiB", "mib"), ("s", "seconds")];

/// Labels that only name the quantity the unit measures: the unit alone is the key (`time` → `seconds`).
const UNIT_ONLY: &[&str] = &["time", "duration"];

/// `(key, value)` of each stat, in the caller's order.
pub fn typed(stats: &[(String, String)]) -> Vec<(String, StatValue)> {
    stats
        .iter()
        .map(|(label, text)| typed_one(label, text))
        .collect()
}

fn typed_one(label: &str, text: &str) -> (String, StatValue) {
    let key = snake_case(label);
    let text = text.trim();
    if let Ok(n) = text.parse::<u64>() {
        return (key, StatValue::Count(n));
    }
    for (suffix, unit) in UNITS {
        let Some(number) = text.strip_suffix(suffix) else {
            continue;
        };
        // `f64::from_str` also reads `inf` and `NaN`, which JSON cannot carry.
        if let Ok(v) = number.trim_end().parse::<f64>()
            && v.is_finite()
            && number.starts_with(|c: char| c.is_ascii_digit())
        {
            let key = if UNIT_ONLY.contains(&key.as_str()) {
                (*unit).to_string()
            } else {
                format!("{key}_{unit}")
            };
            return (key, StatValue::Quantity(v));
        }
    }
    (key, StatValue::Text(text.to_string()))
}

/// `API requests by this tool` → `api_requests_by_this_tool`.
fn snake_case(label: &str) -> String {
    let mut out = String::with_capacity(label.len());
    for c in label.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// The typed stats as one JSON object, keys in the caller's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Typed(pub Vec<(String, StatValue)>);

impl Typed {
    pub fn of(stats: &[(String, String)]) -> Self {
        Typed(typed(stats))
    }
}

impl Serialize for Typed {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl schemars::JsonSchema for Typed {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Stats".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "What the run looked at and what it cost. Keys are the labels of the text formats in \
                snake_case; a quantity's key ends with its unit (`_seconds`, `_mib`; a label that only names the \
                quantity, such as `time`, is the unit alone: `seconds`). scan: rust_files, go_files (when Go was seen), lines, \
                parsed, crates, dependencies_read, seconds. live: scope (text), window_seconds, types_watched, objects, \
                writes_seen, metrics_sources, and when they apply audit_requests, listed_in_seconds, \
                api_requests_by_this_tool, peak_memory_mib.",
            "type": "object",
            "additionalProperties": { "type": ["number", "string"] }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn scan_stats_become_numbers() {
        let t = typed(&pairs(&[
            ("rust files", "12"),
            ("dependencies read", "0"),
            ("time", "1.25s"),
        ]));
        assert_eq!(
            t,
            vec![
                ("rust_files".to_string(), StatValue::Count(12)),
                ("dependencies_read".to_string(), StatValue::Count(0)),
                ("seconds".to_string(), StatValue::Quantity(1.25)),
            ]
        );
    }

    #[test]
    fn units_and_text() {
        let t = typed(&pairs(&[
            ("window", "30.0s"),
            ("peak memory", "52.2 MiB"),
            ("scope", "namespace default"),
            ("API requests by this tool", "7"),
            ("odd", "infs"),
            ("dashes", "-"),
        ]));
        assert_eq!(
            t,
            vec![
                ("window_seconds".to_string(), StatValue::Quantity(30.0)),
                ("peak_memory_mib".to_string(), StatValue::Quantity(52.2)),
                (
                    "scope".to_string(),
                    StatValue::Text("namespace default".into())
                ),
                ("api_requests_by_this_tool".to_string(), StatValue::Count(7)),
                ("odd".to_string(), StatValue::Text("infs".into())),
                ("dashes".to_string(), StatValue::Text("-".into())),
            ]
        );
    }
}
