//! `-o json`: findings, notes, a per-severity summary and the stats as one pretty, deterministic JSON document.

use super::{Counts, Note, Report};
use crate::finding::Finding;
use anyhow::Context;
use serde::Serialize;
use serde::ser::SerializeMap;

#[derive(Serialize)]
struct Document<'a> {
    version: &'static str,
    command: &'a str,
    findings: &'a [Finding],
    notes: &'a [Note],
    summary: Counts,
    stats: Stats<'a>,
}

/// The stats as a JSON object, keys in the order the caller gave them.
struct Stats<'a>(&'a [(String, String)]);

impl Serialize for Stats<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Renders the report as pretty JSON followed by a newline.
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let doc = Document {
        version: env!("CARGO_PKG_VERSION"),
        command: report.command,
        findings: report.findings,
        notes: report.notes,
        summary: Counts::of(report.findings),
        stats: Stats(report.stats),
    };
    let mut out = serde_json::to_string_pretty(&doc).context("serializing findings to json")?;
    out.push('\n');
    Ok(out)
}
