//! Output formats: one `Report` (findings, notes, stats) rendered as rustc-style snippets, one line per finding, a
//! table, JSON, SARIF, JUnit, GitHub annotations, GitLab Code Quality or a self-contained HTML page.

pub mod concise;
pub mod document;
pub mod emit;
pub mod full;
pub mod github;
pub mod gitlab;
pub mod html;
pub mod json;
pub mod junit;
pub mod sarif;
pub mod schema;
pub mod stats;
pub mod table;

use crate::finding::{Evidence, Finding, Lens, Severity, Suppressed};
use anyhow::Context;
use std::fmt;
use std::str::FromStr;

pub use emit::{Color, FailOn, OutputArgs};

/// An output format of `-o` / `--output-file FORMAT=PATH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Each finding with its source lines and the span underlined, as rustc and clippy print (scan's default).
    Full,
    /// One line per finding, `path:line:col: CODE message`: clickable in terminals and editors.
    Concise,
    /// A table (the default of live, bench and rules).
    Table,
    /// Findings, notes, summary and stats as pretty JSON.
    Json,
    /// SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.
    Sarif,
    /// JUnit XML: one test case per rule, failing where the rule found something at or above `--fail-on`.
    Junit,
    /// GitHub Actions workflow commands (`::error file=…`), shown as annotations.
    Github,
    /// GitLab Code Quality JSON (`artifacts:reports:codequality`), shown in merge requests.
    Gitlab,
    /// One self-contained HTML page (findings, evidence, rule docs) to share.
    Html,
}

impl Format {
    /// Every format, in the order of the help text.
    pub const ALL: [Format; 9] = [
        Format::Full,
        Format::Concise,
        Format::Table,
        Format::Json,
        Format::Sarif,
        Format::Junit,
        Format::Github,
        Format::Gitlab,
        Format::Html,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Full => "full",
            Format::Concise => "concise",
            Format::Table => "table",
            Format::Json => "json",
            Format::Sarif => "sarif",
            Format::Junit => "junit",
            Format::Github => "github",
            Format::Gitlab => "gitlab",
            Format::Html => "html",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim();
        Format::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| {
                let valid: Vec<&str> = Format::ALL.iter().map(|f| f.as_str()).collect();
                anyhow::anyhow!(
                    "unknown output format {s:?}: expected one of {}",
                    valid.join(", ")
                )
            })
    }
}

pub use ctrlaudit_core::note::Note;

// ANSI styles of the text formats.
const RED: &str = "\x1b[31m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// The text of source files named by findings, by path as the findings give it; read at the output edge (see
/// [`emit`]) for the formats that quote source.
pub type Sources = std::collections::BTreeMap<String, String>;

/// No source text: the formats that quote source fall back to `path:line:col`.
pub static NO_SOURCES: Sources = Sources::new();

/// Everything one run has to say, borrowed from the caller.
#[derive(Debug)]
pub struct Report<'a> {
    /// The command that produced it: "scan" or "live".
    pub command: &'a str,
    /// Already sorted and filtered.
    pub findings: &'a [Finding],
    pub notes: &'a [Note],
    /// e.g. ("files scanned","42"), ("files parsed","7"), ("duration","0.12s").
    pub stats: &'a [(String, String)],
    /// ANSI color by severity (table, full and concise).
    pub color: bool,
    /// Source text for `full`; [`NO_SOURCES`] where none was read.
    pub sources: &'a Sources,
    /// Findings an inline allow comment suppressed: only SARIF shows them (`suppressions[]`).
    pub suppressed: &'a [Suppressed],
    /// The exit code's threshold: JUnit fails only the findings at or above it, so CI agrees with the exit code.
    pub fail_on: FailOn,
}

impl<'a> Report<'a> {
    /// A report without colour, source text or suppressed findings, failing at the default `--fail-on warning`.
    pub fn new(
        command: &'a str,
        findings: &'a [Finding],
        notes: &'a [Note],
        stats: &'a [(String, String)],
    ) -> Self {
        Report {
            command,
            findings,
            notes,
            stats,
            color: false,
            sources: &NO_SOURCES,
            suppressed: &[],
            fail_on: FailOn::Warning,
        }
    }
}

/// `--output-file` values, each checked: `FORMAT=PATH` (a known format and a non-empty path), or a bare `PATH`,
/// which takes `default` (the `-o` format, else the command's own). A path with a `=` in it is written
/// `FORMAT=PATH`.
pub fn output_files(
    specs: &[String],
    default: Format,
) -> anyhow::Result<Vec<(Format, std::path::PathBuf)>> {
    specs
        .iter()
        .map(|s| {
            let Some((f, p)) = s.split_once('=') else {
                if s.is_empty() {
                    anyhow::bail!("--output-file: the path is empty");
                }
                return Ok((default, std::path::PathBuf::from(s)));
            };
            if p.is_empty() {
                anyhow::bail!("--output-file {s:?}: the path is empty");
            }
            let format = f.parse::<Format>().with_context(|| {
                format!("--output-file {s:?}: expects FORMAT=PATH (or a PATH without `=`, for the -o format)")
            })?;
            Ok((format, std::path::PathBuf::from(p)))
        })
        .collect()
}

/// Renders `report` in `format`. The result ends with a newline.
pub fn render(format: Format, report: &Report<'_>) -> anyhow::Result<String> {
    let out = match format {
        Format::Full => full::render(report),
        Format::Concise => concise::render(report),
        Format::Table => table::render(report),
        Format::Json => json::render(report),
        Format::Sarif => sarif::render(report),
        Format::Junit => junit::render(report),
        Format::Github => github::render(report),
        Format::Gitlab => gitlab::render(report),
        Format::Html => html::render(report),
    };
    out.with_context(|| format!("rendering the {format} report"))
}

/// Number of findings per severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Counts {
    pub error: usize,
    pub warning: usize,
    pub info: usize,
}

impl Counts {
    pub fn of(findings: &[Finding]) -> Self {
        let mut c = Counts::default();
        for f in findings {
            match f.severity {
                Severity::Error => c.error += 1,
                Severity::Warning => c.warning += 1,
                Severity::Info => c.info += 1,
            }
        }
        c
    }

    pub fn total(&self) -> usize {
        self.error + self.warning + self.info
    }
}

/// How many findings each rule has at each severity: `--statistics` and the HTML page's per-rule table.
pub fn counts_by_rule(findings: &[Finding]) -> std::collections::BTreeMap<(&str, Severity), usize> {
    let mut counts = std::collections::BTreeMap::new();
    for f in findings {
        *counts.entry((f.code.as_str(), f.severity)).or_default() += 1;
    }
    counts
}

/// "3 findings (1 error, 2 warnings, 0 info)" or "no findings".
pub fn summary_line(findings: &[Finding]) -> String {
    let c = Counts::of(findings);
    if c.total() == 0 {
        return "no findings".to_string();
    }
    format!(
        "{} ({} {}, {} {}, {} info)",
        plural(c.total(), "finding", "findings"),
        c.error,
        if c.error == 1 { "error" } else { "errors" },
        c.warning,
        if c.warning == 1 {
            "warning"
        } else {
            "warnings"
        },
        c.info,
    )
}

/// "files scanned: 42, files parsed: 7, duration: 0.12s", or empty.
pub fn stats_line(stats: &[(String, String)]) -> String {
    stats
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lines every text format ends with: the skip notes, the summary line and the stats (when any).
pub fn footer(report: &Report<'_>) -> String {
    let paint = |style: &str, line: String| {
        if report.color {
            format!("{style}{line}{RESET}\n")
        } else {
            format!("{line}\n")
        }
    };
    let mut out = String::new();
    for note in report.notes {
        out.push_str(&paint(YELLOW, note_line(note)));
    }
    out.push_str(&paint(BOLD, summary_line(report.findings)));
    let stats = stats_line(report.stats);
    if !stats.is_empty() {
        out.push_str(&stats);
        out.push('\n');
    }
    out
}

/// "skipped: path — reason" (a file, or a count of crates not analysed and why).
pub fn note_line(note: &Note) -> String {
    format!("skipped: {} — {}", note.subject, note.message)
}

/// Under a finding's message in the text formats: each evidence line after `bullet` on a line of its own, then
/// `help: …`.
pub fn push_details(out: &mut String, finding: &Finding, bullet: &str) {
    for line in evidence_lines(finding) {
        out.push('\n');
        out.push_str(bullet);
        out.push_str(&line);
    }
    if !finding.help.is_empty() {
        out.push_str("\nhelp: ");
        out.push_str(&finding.help);
    }
}

/// Evidence as short lines, for the text formats: related places, values, call paths, metric samples.
pub fn evidence_lines(finding: &Finding) -> Vec<String> {
    const MAX_SAMPLES: usize = 3;
    let mut lines = Vec::new();
    let mut samples = 0usize;
    for ev in &finding.evidence {
        match ev {
            Evidence::Related { span, note } => {
                // In the finding's own file the line is enough; elsewhere name the file.
                let same_file = finding.subject.span().is_some_and(|s| s.file == span.file);
                if same_file {
                    lines.push(format!("line {}:{}: {note}", span.line, span.column));
                } else {
                    lines.push(format!(
                        "{}:{}:{}: {note}",
                        normalize_path(&span.file),
                        span.line,
                        span.column
                    ));
                }
            }
            Evidence::Value { name, value, unit } => {
                let unit = if unit.is_empty() {
                    String::new()
                } else {
                    format!(" {unit}")
                };
                lines.push(format!("{name} = {}{unit}", number(*value)));
            }
            Evidence::CallPath { functions } => {
                if !functions.is_empty() {
                    lines.push(format!("via {}", functions.join(" → ")));
                }
            }
            Evidence::Sample {
                metric,
                labels,
                value,
                timestamp_ms,
            } => {
                samples += 1;
                if samples <= MAX_SAMPLES {
                    let labels = labels
                        .iter()
                        .map(|(k, v)| format!("{k}={v:?}"))
                        .collect::<Vec<_>>()
                        .join(",");
                    lines.push(format!(
                        "{metric}{{{labels}}} = {} at {timestamp_ms} ms",
                        number(*value)
                    ));
                }
            }
        }
    }
    if samples > MAX_SAMPLES {
        lines.push(format!("… {} more samples", samples - MAX_SAMPLES));
    }
    lines
}

/// A number without a needless fraction: `30`, `0.25`.
fn number(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The lens whose rules a command reports on: `scan` → Scan, `live` → Live, `bench` → Bench.
pub fn lens_of_command(command: &str) -> Option<Lens> {
    match command {
        "scan" => Some(Lens::Scan),
        "live" => Some(Lens::Live),
        "bench" => Some(Lens::Bench),
        _ => None,
    }
}

/// A file path as a `/`-separated path relative to the checkout where possible:
/// backslashes become `/`, leading `./` are dropped.
pub fn normalize_path(file: &str) -> String {
    let mut p = file.replace('\\', "/");
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.trim_start_matches('/').to_string();
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_from_str() {
        assert_eq!("sarif".parse::<Format>().ok(), Some(Format::Sarif));
        assert_eq!("JUnit".parse::<Format>().ok(), Some(Format::Junit));
        let err = "xml"
            .parse::<Format>()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("\"xml\""), "{err}");
        assert!(
            err.contains("table, json, sarif, junit, github"),
            "error lists the valid formats: {err}"
        );
        for f in Format::ALL {
            assert_eq!(f.as_str().parse::<Format>().ok(), Some(f));
            assert_eq!(
                <Format as clap::ValueEnum>::from_str(f.as_str(), false).ok(),
                Some(f)
            );
        }
    }

    #[test]
    fn summary_wording() {
        assert_eq!(summary_line(&[]), "no findings");
    }

    #[test]
    fn paths() {
        assert_eq!(normalize_path("./src/a.rs"), "src/a.rs");
        assert_eq!(normalize_path(".//src\\b.rs"), "src/b.rs");
        assert_eq!(normalize_path("/abs/c.rs"), "/abs/c.rs");
    }
}
