//! `-o gitlab`: a GitLab Code Quality report, the Code Climate-style JSON array GitLab reads from a job's
//! `artifacts:reports:codequality` and shows in merge requests.
//!
//! Each finding is one issue with the fields GitLab requires (description, check_name, fingerprint, severity,
//! location.path, location.lines.begin). The fingerprint is the baseline's ([`Finding::fingerprint`]: code, file,
//! message; no line), so an issue keeps its identity across unrelated edits and GitLab can tell new from fixed.

use super::{Report, normalize_path};
use crate::finding::{Finding, Severity, Subject};
use anyhow::Context;
use serde::Serialize;
use std::collections::HashMap;

#[derive(Serialize)]
struct Issue {
    description: String,
    check_name: String,
    fingerprint: String,
    severity: &'static str,
    location: Location,
}

#[derive(Serialize)]
struct Location {
    path: String,
    lines: Lines,
}

#[derive(Serialize)]
struct Lines {
    begin: usize,
    end: usize,
}

/// Renders the findings as a pretty JSON array followed by a newline; no findings is `[]`.
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let issues: Vec<Issue> = report
        .findings
        .iter()
        .map(|f| {
            let base = f.fingerprint();
            let n = seen.entry(base.clone()).or_default();
            let fingerprint = unique(&base, *n);
            *n += 1;
            issue(f, fingerprint)
        })
        .collect();
    let mut out =
        serde_json::to_string_pretty(&issues).context("serializing the code quality report")?;
    out.push('\n');
    Ok(out)
}

/// The baseline fingerprint for the first finding that has it. GitLab keeps one issue per fingerprint, so a second
/// finding with the same code, file and message (on another line) gets one derived from it and its rank, which is
/// as stable as the order of the findings in that file.
fn unique(base: &str, rank: usize) -> String {
    if rank == 0 {
        return base.to_string();
    }
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(base.as_bytes())
        .chain_update([0])
        .chain_update(rank.to_string().as_bytes())
        .finalize();
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// Code Climate's severities are info, minor, major, critical and blocker; nothing here blocks a merge by itself.
fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "critical",
        Severity::Warning => "major",
        Severity::Info => "info",
    }
}

fn issue(f: &Finding, fingerprint: String) -> Issue {
    // GitLab requires a path and a line; a finding about a cluster object or a controller has neither, so its
    // subject stands in for the path (GitLab shows it, and a link to it leads nowhere).
    let (path, begin, end) = match &f.subject {
        Subject::Source(s) => (
            normalize_path(&s.file),
            s.line.max(1),
            s.end_line.max(s.line).max(1),
        ),
        other => (other.label(), 1, 1),
    };
    Issue {
        description: format!("{}: {}", f.code, f.message),
        check_name: f.code.clone(),
        fingerprint,
        severity: severity(f.severity),
        location: Location {
            path,
            lines: Lines { begin, end },
        },
    }
}
