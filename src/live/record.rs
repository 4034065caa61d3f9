//! `--record DIR` and `--replay DIR`: a window saved in the fixtures layout, and read back.
//!
//! Layout: `snapshot.json` (the [`Snapshot`]), optionally `audit.jsonl` (an audit-log excerpt, summarised on
//! replay), and `expected.json` (the findings as `{code, subject}` pairs: what the fixture tests check both ways).
//! The scenarios of the live accuracy corpus also have `labels.json` ([`Labels`]), written by hand: the findings a
//! window must and must not give, with its audit log and without it, whatever a re-recording blesses.

use crate::finding::Finding;
use crate::live::audit;
use crate::live::snapshot::Snapshot;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const SNAPSHOT: &str = "snapshot.json";
pub const AUDIT: &str = "audit.jsonl";
pub const EXPECTED: &str = "expected.json";
pub const LABELS: &str = "labels.json";

/// One expected finding: its rule and its subject's label.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Expectation {
    pub code: String,
    pub subject: String,
}

impl Expectation {
    pub fn of(f: &Finding) -> Self {
        Self {
            code: f.code.clone(),
            subject: f.subject.label(),
        }
    }
}

/// The expectations for a set of findings, sorted and without duplicates.
pub fn expectations(findings: &[Finding]) -> Vec<Expectation> {
    let mut v: Vec<Expectation> = findings.iter().map(Expectation::of).collect();
    v.sort();
    v.dedup();
    v
}

/// Writes `snapshot` and the expectations of `findings` to `dir` (created if needed).
pub fn write(dir: &Path, snapshot: &Snapshot, findings: &[Finding]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let text = serde_json::to_string_pretty(snapshot).context("serialising the snapshot")?;
    std::fs::write(dir.join(SNAPSHOT), text + "\n")
        .with_context(|| format!("cannot write {}", dir.join(SNAPSHOT).display()))?;
    write_expected(dir, findings)
}

/// Makes sure a recording can be saved in `dir` before a window is spent on it: creates it and writes (then
/// removes) a probe file. A window observed and then not saved is lost.
pub fn check_writable(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--record {}: cannot create the directory", dir.display()))?;
    let probe = dir.join(".ctrlaudit-write-probe");
    std::fs::write(&probe, b"probe\n")
        .with_context(|| format!("--record {}: cannot write in it", dir.display()))?;
    // Left behind it would only be clutter; failing to remove what was just written says nothing new.
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Writes only `expected.json`.
pub fn write_expected(dir: &Path, findings: &[Finding]) -> Result<()> {
    let text = serde_json::to_string_pretty(&expectations(findings))
        .context("serialising expectations")?;
    std::fs::write(dir.join(EXPECTED), text + "\n")
        .with_context(|| format!("cannot write {}", dir.join(EXPECTED).display()))
}

/// Reads a recording: the snapshot and/or the audit excerpt.
pub fn read(dir: &Path) -> Result<Snapshot> {
    let snap_path = dir.join(SNAPSHOT);
    let audit_path = dir.join(AUDIT);
    if !snap_path.is_file() && !audit_path.is_file() {
        bail!(
            "{} is not a recording: expected {SNAPSHOT} and/or {AUDIT} in it",
            dir.display()
        );
    }
    let mut snap = if snap_path.is_file() {
        let text = std::fs::read_to_string(&snap_path)
            .with_context(|| format!("cannot read {}", snap_path.display()))?;
        serde_json::from_str::<Snapshot>(&text)
            .with_context(|| format!("{} is not a live snapshot", snap_path.display()))?
    } else {
        Snapshot::default()
    };
    if audit_path.is_file() && snap.audit.is_none() {
        // Read as the offline --audit-log is: line by line, bounded lines, any bytes (a gzip or UTF-16 file is
        // lines that are not events, not an error).
        let summary = crate::live::collect::audit_file::read_blocking(
            &audit_path,
            snap.scope.namespace.as_deref(),
            None,
        )?;
        snap.notes.extend(audit::read_note(
            &summary,
            &format!("audit log {}", audit_path.display()),
        ));
        snap.attach_audit(summary);
    }
    Ok(snap)
}

/// Reads `expected.json`.
pub fn read_expected(dir: &Path) -> Result<Vec<Expectation>> {
    let path = dir.join(EXPECTED);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut v: Vec<Expectation> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a list of {{code, subject}}", path.display()))?;
    v.sort();
    v.dedup();
    Ok(v)
}

/// A corpus scenario's hand-written truth (`labels.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Labels {
    /// What happens in the window, in a sentence.
    pub about: String,
    /// With the audit log the window was recorded with (or with none, when there was none).
    pub findings: LabelSet,
    /// The same window replayed without its audit log (a cluster whose audit log nobody can read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_audit: Option<LabelSet>,
}

/// Findings that must appear and findings that must not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelSet {
    #[serde(default)]
    pub must: Vec<Label>,
    #[serde(default)]
    pub must_not: Vec<Label>,
}

/// A description of findings: a rule (`*`: any), and optionally words its subject and its message contain and its
/// severity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Label {
    pub code: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subject: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<crate::finding::Severity>,
    /// Why this label exists: the false alarm it guards against or the finding it insists on.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

impl Label {
    pub fn matches(&self, f: &Finding) -> bool {
        (self.code == "*" || f.code == self.code)
            && f.subject.label().contains(&self.subject)
            && f.message.contains(&self.message)
            && self.severity.is_none_or(|s| s == f.severity)
    }
}

impl LabelSet {
    /// What `findings` get wrong against these labels, one line each (empty: all hold).
    pub fn check(&self, findings: &[Finding]) -> Vec<String> {
        let missing = self
            .must
            .iter()
            .filter(|l| !findings.iter().any(|f| l.matches(f)))
            .map(|l| format!("missing {l:?}"));
        let forbidden = self.must_not.iter().flat_map(|l| {
            findings.iter().filter(|f| l.matches(f)).map(move |f| {
                format!(
                    "forbidden by {l:?}: {} {} — {}",
                    f.code,
                    f.subject.label(),
                    f.message
                )
            })
        });
        missing.chain(forbidden).collect()
    }
}

/// Reads `labels.json`, if the recording has one.
pub fn read_labels(dir: &Path) -> Result<Option<Labels>> {
    let path = dir.join(LABELS);
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text)
        .map(Some)
        .with_context(|| format!("{} is not a scenario's labels", path.display()))
}

/// The same window as if no audit log had been read: the summary and the notes about it gone.
pub fn without_audit(s: &Snapshot) -> Snapshot {
    let mut s = s.clone();
    s.audit = None;
    s.notes.retain(|n| !n.subject.starts_with("audit log"));
    s
}
