//! `-o json`: findings, notes, a per-severity summary and the stats as one pretty, deterministic JSON document.
//! Its shape is published as a JSON schema (`schemas/report.schema.json`, see [`super::schema`]).

use super::stats::Typed;
use super::{Counts, Note, Report};
use crate::finding::Finding;
use anyhow::Context;
use serde::Serialize;

/// The `-o json` document of scan and live.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(title = "kubectl-ctrlaudit -o json")]
pub struct Document<'a> {
    /// The version of kubectl-ctrlaudit that wrote the document.
    pub version: &'static str,
    /// The command that produced it: `scan` or `live`.
    #[schemars(extend("enum" = ["scan", "live"]))]
    pub command: &'a str,
    /// The reported findings, in the order every format uses (by subject, then code, then message).
    pub findings: &'a [Finding],
    /// What could not be looked at: skipped files, unobservable evidence sources, baseline notes.
    pub notes: &'a [Note],
    /// The number of findings per severity.
    pub summary: Counts,
    pub stats: Typed,
}

/// Renders the report as pretty JSON followed by a newline.
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let doc = Document {
        version: env!("CARGO_PKG_VERSION"),
        command: report.command,
        findings: report.findings,
        notes: report.notes,
        summary: Counts::of(report.findings),
        stats: Typed::of(report.stats),
    };
    let mut out = serde_json::to_string_pretty(&doc).context("serializing findings to json")?;
    out.push('\n');
    Ok(out)
}
