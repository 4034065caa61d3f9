//! The one shape every lens reports in: a `Finding` with its rule code, severity, subject and evidence.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

/// How bad a finding is. Ordered so that `Error > Warning > Info`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which of the three ways of looking at a controller produced a finding.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Lens {
    Scan,
    Live,
    Bench,
}

impl Lens {
    pub fn as_str(self) -> &'static str {
        match self {
            Lens::Scan => "scan",
            Lens::Live => "live",
            Lens::Bench => "bench",
        }
    }
}

/// A 1-based line/column range in a source file.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct Span {
    /// Path as given on the command line joined with the walked path, `/`-separated.
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

/// What a finding is about.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Subject {
    /// A place in source code (scan).
    Source(Span),
    /// A Kubernetes object or, with an empty name, a whole resource type (live).
    Object {
        group: String,
        kind: String,
        namespace: Option<String>,
        name: String,
    },
    /// A controller identified by its field manager, user or user agent (live).
    Controller {
        manager: Option<String>,
        user: Option<String>,
        user_agent: Option<String>,
        /// What live took this writer or reader for, and why: only controllers are judged by the rules about
        /// reconcile behaviour. Absent in scan and bench findings and in recordings made before it existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        actor: Option<Actor>,
    },
}

/// Who is behind requests and writes that live observed, as classified from the user agent, the user, the field
/// manager and the shape of the traffic (see `live::actor`).
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct Actor {
    pub kind: ActorKind,
    /// The evidence the kind rests on: `holds a watch`, `user agent kubectl/v1.34.12`.
    pub why: String,
}

/// The kinds of actor a cluster has.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ActorKind {
    /// Long-lived, reconcile-shaped traffic: judged by every live rule.
    Controller,
    /// A person or a one-off client (kubectl, helm, a CI apply burst): it has no reconcile to judge.
    Client,
    /// kubectl-ctrlaudit itself.
    Tool,
}

impl ActorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ActorKind::Controller => "controller",
            ActorKind::Client => "client",
            ActorKind::Tool => "tool",
        }
    }
}

impl Subject {
    pub fn span(&self) -> Option<&Span> {
        match self {
            Subject::Source(s) => Some(s),
            _ => None,
        }
    }

    /// `Kind.group` of an object or a resource type (see [`group_kind`]); `None` for other subjects.
    pub fn type_label(&self) -> Option<String> {
        match self {
            Subject::Object { group, kind, .. } => Some(group_kind(group, kind)),
            _ => None,
        }
    }

    /// A short, human-readable location: `src/a.rs:12:5`, `widgets.example.com/ns/name`, `manager=foo`.
    pub fn label(&self) -> String {
        match self {
            Subject::Source(s) => format!("{}:{}:{}", s.file, s.line, s.column),
            Subject::Object {
                group,
                kind,
                namespace,
                name,
            } => {
                let gk = group_kind(group, kind);
                match (namespace, name.is_empty()) {
                    (Some(ns), false) => format!("{gk} {ns}/{name}"),
                    (None, false) => format!("{gk} {name}"),
                    (Some(ns), true) => format!("{gk} in {ns}"),
                    (None, true) => gk,
                }
            }
            Subject::Controller {
                manager,
                user,
                user_agent,
                ..
            } => {
                let mut parts = Vec::new();
                if let Some(m) = manager {
                    parts.push(format!("manager={m}"));
                }
                if let Some(u) = user {
                    parts.push(format!("user={u}"));
                }
                if let Some(a) = user_agent {
                    parts.push(format!("userAgent={a}"));
                }
                parts.join(" ")
            }
        }
    }
}

/// Data behind a finding, kept as data so that every output format can render it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Evidence {
    /// A related place in source: the call that makes the finding matter (e.g. the status patch
    /// that re-triggers a controller without a predicate), with a note on its role.
    Related { span: Span, note: String },
    /// A named number: a requeue in seconds, a rate, a count.
    Value {
        name: String,
        value: f64,
        unit: String,
    },
    /// A metric sample as scraped.
    Sample {
        metric: String,
        labels: Vec<(String, String)>,
        value: f64,
        timestamp_ms: i64,
    },
    /// A call path from a root (reconcile) to the finding's place.
    CallPath { functions: Vec<String> },
}

/// One finding of one rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    pub code: String,
    pub severity: Severity,
    pub lens: Lens,
    pub message: String,
    pub subject: Subject,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    pub help: String,
    /// The objects a live finding is seen on, the worst first, at most [`MAX_OBJECTS`]: where
    /// `live --serve --events` posts its Events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ObjectRef>,
    /// On which path of a controller the thing happens (scan: every reconcile, on deletion, …); live and bench
    /// findings are about what was observed, whatever the path, and leave it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
}

/// The path of a controller on which a scan finding's read, write or requeue happens. How often it runs is what
/// the finding costs: a rule's default severity is for [`WhenKind::EveryReconcile`].
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct When {
    pub path: WhenKind,
    /// The condition of the branch it is on, as written (`spec.tls.is_some()`), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

/// The kinds of path (JSON `when.path`, SARIF `properties.when`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum WhenKind {
    /// Every pass of reconcile, the steady state included.
    EveryReconcile,
    /// When the spec changed (a generation or spec comparison guards it).
    SpecChange,
    /// A state transition: a creation or phase step that runs until its write lands.
    Transition,
    /// When the actual state drifted from the desired one (a comparison of the two guards it).
    Drift,
    /// On deletion: a finalizer's cleanup, a branch on `deletion_timestamp`.
    Deletion,
    /// Outside reconcile: how a controller is built and run at start-up, code no reconcile reaches.
    Startup,
    /// After something failed: an error arm, `error_policy`'s retry.
    ErrorRetry,
    /// On a branch whose condition says nothing of change (a feature switched on in the spec, an `Option`
    /// present): on every pass on which the condition holds, so judged as the steady state.
    Branch,
}

impl WhenKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WhenKind::EveryReconcile => "every-reconcile",
            WhenKind::SpecChange => "spec-change",
            WhenKind::Transition => "transition",
            WhenKind::Drift => "drift",
            WhenKind::Deletion => "deletion",
            WhenKind::Startup => "startup",
            WhenKind::ErrorRetry => "error-retry",
            WhenKind::Branch => "branch",
        }
    }
}

impl When {
    pub fn new(path: WhenKind) -> Self {
        Self {
            path,
            condition: None,
        }
    }

    /// The path in words, for a message: "on every reconcile", "when `spec.tls.is_some()`".
    pub fn phrase(&self) -> String {
        let cond = self.condition.as_deref().map(|c| format!(" (`{c}`)"));
        match (self.path, cond) {
            (WhenKind::EveryReconcile, _) => "on every reconcile".into(),
            (WhenKind::SpecChange, c) => format!("when the spec changes{}", c.unwrap_or_default()),
            (WhenKind::Transition, c) => {
                format!("on a state transition{}", c.unwrap_or_default())
            }
            (WhenKind::Drift, c) => format!("when drift is found{}", c.unwrap_or_default()),
            (WhenKind::Deletion, _) => "on deletion".into(),
            // Calls through trait objects, closures stored in fields or macros are not all followed: say so.
            (WhenKind::Startup, _) => "outside reconcile, as far as scan follows calls".into(),
            (WhenKind::ErrorRetry, _) => "when an error is retried".into(),
            (WhenKind::Branch, Some(_)) => {
                format!("when `{}`", self.condition.as_deref().unwrap_or_default())
            }
            (WhenKind::Branch, None) => "on a branch of reconcile".into(),
        }
    }
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.path.as_str())
    }
}

/// A finding that an inline allow comment (`// ctrlaudit: allow(CODE) reason: …`) suppressed. Only SARIF shows
/// these (as `suppressions[]`, the way semgrep and CodeQL keep theirs auditable); the other formats and the exit
/// code see only what was reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suppressed {
    pub finding: Finding,
    /// What the comment says after `reason:`.
    pub reason: String,
    /// Where the allow comment is.
    pub comment: Span,
}

/// One Kubernetes object: what a live finding is seen on.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct ObjectRef {
    pub group: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

/// Objects a finding names at most.
pub const MAX_OBJECTS: usize = 10;

impl Finding {
    /// The deterministic order every output uses: by subject (file, line, column), then code, then message.
    pub fn sort_key_cmp(&self, other: &Self) -> Ordering {
        self.subject
            .cmp(&other.subject)
            .then_with(|| self.code.cmp(&other.code))
            .then_with(|| self.message.cmp(&other.message))
    }

    /// A fingerprint that survives unrelated edits (no line numbers): code, file or subject, message.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let subject = match &self.subject {
            Subject::Source(s) => s.file.clone(),
            other => other.label(),
        };
        let mut h = Sha256::new();
        h.update(self.code.as_bytes());
        h.update([0]);
        h.update(subject.as_bytes());
        h.update([0]);
        h.update(self.message.as_bytes());
        let digest = h.finalize();
        digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
    }
}

/// Sorts findings into the one order that every output format uses.
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(Finding::sort_key_cmp);
}

/// `Kind.group` as kubectl prints a resource type (`Widget.bench.ctrlaudit.io`); the core group is just `Kind`.
pub fn group_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_said_in_words_and_named_in_kebab_case() {
        let spec = When {
            path: WhenKind::SpecChange,
            condition: Some("observed != generation".into()),
        };
        assert_eq!(
            spec.phrase(),
            "when the spec changes (`observed != generation`)"
        );
        let every = When::new(WhenKind::EveryReconcile);
        assert_eq!(every.phrase(), "on every reconcile");
        let branch = When {
            path: WhenKind::Branch,
            condition: Some("spec.tls is Some(tls)".into()),
        };
        assert_eq!(branch.phrase(), "when `spec.tls is Some(tls)`");
        assert_eq!(When::new(WhenKind::ErrorRetry).to_string(), "error-retry");
        assert_eq!(WhenKind::EveryReconcile.as_str(), "every-reconcile");
    }
}
