//! `-o sarif`: SARIF 2.1.0 for GitHub code scanning: every rule of the registry with its doc, one result per finding.
//!
//! Source findings get physical locations (`%SRCROOT%`-relative URIs, 1-based regions); findings about
//! Kubernetes objects and controllers get logical locations. Notes become tool execution notifications.

use super::{Report, normalize_path};
use crate::finding::{Evidence, Finding, Severity, Span, Subject};
use crate::rules::{self, RULES, Rule};
use anyhow::Context;
use serde::Serialize;
use std::collections::BTreeMap;

pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";
pub const SARIF_VERSION: &str = "2.1.0";
/// The key of `partialFingerprints`; bump the suffix if `Finding::fingerprint` ever changes meaning.
pub const FINGERPRINT_KEY: &str = "ctrlaudit/v1";
pub const SRCROOT: &str = "%SRCROOT%";
const TOOL_NAME: &str = "kubectl-ctrlaudit";

#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: Vec<Run<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    tool: Tool,
    invocations: Vec<Invocation>,
    column_kind: &'static str,
    results: Vec<SarifResult<'a>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    properties: BTreeMap<String, serde_json::Value>,
}

#[derive(Serialize)]
struct Tool {
    driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    version: &'static str,
    semantic_version: &'static str,
    information_uri: &'static str,
    rules: Vec<ReportingDescriptor>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportingDescriptor {
    id: &'static str,
    name: &'static str,
    short_description: Text,
    full_description: Text,
    help: Help,
    help_uri: String,
    default_configuration: Configuration,
    properties: RuleProperties,
}

#[derive(Serialize)]
struct Text {
    text: String,
}

#[derive(Serialize)]
struct Help {
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    markdown: Option<String>,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct RuleProperties {
    tags: Vec<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Invocation {
    execution_successful: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_execution_notifications: Vec<Notification>,
}

#[derive(Serialize)]
struct Notification {
    level: &'static str,
    message: Text,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_index: Option<usize>,
    level: &'static str,
    message: Text,
    locations: Vec<Location>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<Location>,
    partial_fingerprints: BTreeMap<&'static str, String>,
    properties: ResultProperties<'a>,
}

#[derive(Serialize)]
struct ResultProperties<'a> {
    lens: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    help: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    evidence: &'a [Evidence],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    physical_location: Option<PhysicalLocation>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    logical_locations: Vec<LogicalLocation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Text>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactLocation {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_base_id: Option<&'static str>,
}

#[derive(Serialize, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
    start_column: usize,
    end_line: usize,
    end_column: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LogicalLocation {
    name: String,
    fully_qualified_name: String,
    kind: &'static str,
}

/// Renders the report as a SARIF 2.1.0 log with one run, pretty-printed, followed by a newline.
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let rules = RULES.iter().map(descriptor).collect();
    let notifications = report
        .notes
        .iter()
        .map(|n| Notification {
            level: "note",
            message: Text {
                text: super::note_line(n),
            },
        })
        .collect();
    let results = report.findings.iter().map(result).collect();
    let mut properties = BTreeMap::new();
    properties.insert(
        "command".to_string(),
        serde_json::Value::String(report.command.to_string()),
    );
    if !report.stats.is_empty() {
        let stats: serde_json::Map<String, serde_json::Value> = report
            .stats
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        properties.insert("stats".to_string(), serde_json::Value::Object(stats));
    }
    let log = Log {
        schema: SCHEMA_URI,
        version: SARIF_VERSION,
        runs: vec![Run {
            tool: Tool {
                driver: Driver {
                    name: TOOL_NAME,
                    version: env!("CARGO_PKG_VERSION"),
                    semantic_version: env!("CARGO_PKG_VERSION"),
                    information_uri: rules::REPOSITORY_URL,
                    rules,
                },
            },
            invocations: vec![Invocation {
                execution_successful: true,
                tool_execution_notifications: notifications,
            }],
            column_kind: "unicodeCodePoints",
            results,
            properties,
        }],
    };
    let mut out = serde_json::to_string_pretty(&log).context("serializing the sarif log")?;
    out.push('\n');
    Ok(out)
}

/// The SARIF level of a severity: error, warning, note.
pub fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn descriptor(rule: &Rule) -> ReportingDescriptor {
    let doc = rule.doc().trim();
    let help_text = if doc.is_empty() {
        format!("{}\n\nSee {}", rule.summary, rule.help_uri())
    } else {
        doc.to_string()
    };
    ReportingDescriptor {
        id: rule.code,
        name: rule.name,
        short_description: Text {
            text: rule.summary.to_string(),
        },
        full_description: Text {
            text: full_description(rule),
        },
        help: Help {
            text: help_text,
            markdown: (!doc.is_empty()).then(|| doc.to_string()),
        },
        help_uri: rule.help_uri(),
        default_configuration: Configuration {
            level: level(rule.default_severity),
        },
        properties: RuleProperties {
            tags: rule.lenses.iter().map(|l| l.as_str()).collect(),
        },
    }
}

/// The doc's opening paragraph (under the title), else the first paragraph of its "What it is" section,
/// else the rule's summary. Tables, code and headings are not paragraphs.
fn full_description(rule: &Rule) -> String {
    let doc = rule.doc();
    first_paragraph(doc, |heading| heading.is_none())
        .or_else(|| {
            first_paragraph(doc, |heading| {
                heading.is_some_and(|h| h.to_ascii_lowercase().starts_with("what it is"))
            })
        })
        .unwrap_or_else(|| rule.summary.to_string())
}

/// The first prose paragraph of the section selected by `wanted`, which is called with `None` for the text
/// before the first `##` heading and with `Some(heading)` for each `##` (or deeper) section.
fn first_paragraph(doc: &str, wanted: impl Fn(Option<&str>) -> bool) -> Option<String> {
    let mut in_section = wanted(None);
    let mut in_code = false;
    let mut para: Vec<&str> = Vec::new();
    for line in doc.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_code = !in_code;
            if !para.is_empty() {
                break;
            }
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(heading) = t.strip_prefix("##") {
            if !para.is_empty() {
                break;
            }
            in_section = wanted(Some(heading.trim_start_matches('#').trim()));
            continue;
        }
        let prose = !(t.is_empty() || t.starts_with('#') || t.starts_with('|'));
        if in_section && prose {
            para.push(t);
        } else if !para.is_empty() {
            break;
        }
    }
    (!para.is_empty()).then(|| para.join(" "))
}

fn result(f: &Finding) -> SarifResult<'_> {
    let rule_index = RULES.iter().position(|r| r.code == f.code);
    let location = match &f.subject {
        Subject::Source(span) => Location {
            id: None,
            physical_location: Some(physical(span)),
            logical_locations: Vec::new(),
            message: None,
        },
        other => Location {
            id: None,
            physical_location: None,
            logical_locations: vec![logical(other)],
            message: None,
        },
    };
    let related_locations = f
        .evidence
        .iter()
        .filter_map(|e| match e {
            Evidence::Related { span, note } => Some((span, note)),
            _ => None,
        })
        .enumerate()
        .map(|(i, (span, note))| Location {
            id: Some(i),
            physical_location: Some(physical(span)),
            logical_locations: Vec::new(),
            message: (!note.is_empty()).then(|| Text { text: note.clone() }),
        })
        .collect();
    let mut partial_fingerprints = BTreeMap::new();
    partial_fingerprints.insert(FINGERPRINT_KEY, f.fingerprint());
    SarifResult {
        rule_id: &f.code,
        rule_index,
        level: level(f.severity),
        message: Text {
            text: f.message.clone(),
        },
        locations: vec![location],
        related_locations,
        partial_fingerprints,
        properties: ResultProperties {
            lens: f.lens.as_str(),
            help: &f.help,
            evidence: &f.evidence,
        },
    }
}

fn physical(span: &Span) -> PhysicalLocation {
    let (uri, uri_base_id) = artifact_uri(&span.file);
    PhysicalLocation {
        artifact_location: ArtifactLocation { uri, uri_base_id },
        region: region(span),
    }
}

/// A region with 1-based, ordered positions; `None` when the span has no line (a whole-file finding).
fn region(span: &Span) -> Option<Region> {
    if span.line == 0 {
        return None;
    }
    let start_line = span.line;
    let start_column = span.column.max(1);
    let (end_line, end_column) = if span.end_line < start_line {
        (start_line, start_column)
    } else if span.end_line == start_line {
        (start_line, span.end_column.max(start_column))
    } else {
        (span.end_line, span.end_column.max(1))
    };
    Some(Region {
        start_line,
        start_column,
        end_line,
        end_column,
    })
}

/// A relative path becomes a `%SRCROOT%`-relative URI reference; an absolute one a `file://` URI.
/// Characters that may not appear in a URI are percent-encoded.
fn artifact_uri(file: &str) -> (String, Option<&'static str>) {
    let path = normalize_path(file);
    let b = path.as_bytes();
    let windows_drive = b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/';
    if path.starts_with('/') {
        (format!("file://{}", encode_path(&path)), None)
    } else if windows_drive {
        (format!("file:///{}", encode_path(&path)), None)
    } else {
        let uri = encode_path(&path);
        // A relative reference must not have a colon in its first segment (RFC 3986 §4.2).
        let uri = match uri.split('/').next() {
            Some(first) if first.contains(':') => {
                let escaped = first.replace(':', "%3A");
                format!("{escaped}{}", &uri[first.len()..])
            }
            _ => uri,
        };
        (uri, Some(SRCROOT))
    }
}

/// Percent-encodes everything outside RFC 3986 `pchar` and `/` (as UTF-8 bytes), and `%` itself.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'/' | b'-'
                    | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
            );
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn logical(subject: &Subject) -> LogicalLocation {
    match subject {
        Subject::Object {
            group,
            kind,
            namespace,
            name,
        } => {
            let gk = if group.is_empty() {
                kind.clone()
            } else {
                format!("{kind}.{group}")
            };
            let mut fqn = gk.clone();
            if let Some(ns) = namespace {
                fqn.push('/');
                fqn.push_str(ns);
            }
            if name.is_empty() {
                LogicalLocation {
                    name: gk,
                    fully_qualified_name: fqn,
                    kind: "type",
                }
            } else {
                fqn.push('/');
                fqn.push_str(name);
                LogicalLocation {
                    name: name.clone(),
                    fully_qualified_name: fqn,
                    kind: "object",
                }
            }
        }
        Subject::Controller {
            manager,
            user,
            user_agent,
        } => {
            let name = manager
                .as_deref()
                .or(user.as_deref())
                .or(user_agent.as_deref())
                .unwrap_or("unknown controller")
                .to_string();
            LogicalLocation {
                name,
                fully_qualified_name: subject.label(),
                kind: "module",
            }
        }
        Subject::Source(span) => LogicalLocation {
            name: span.file.clone(),
            fully_qualified_name: subject.label(),
            kind: "module",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(file: &str, line: usize, col: usize, end_line: usize, end_col: usize) -> Span {
        Span {
            file: file.into(),
            line,
            column: col,
            end_line,
            end_column: end_col,
        }
    }

    #[test]
    fn uris() {
        assert_eq!(
            artifact_uri("./src/a b.rs"),
            ("src/a%20b.rs".to_string(), Some(SRCROOT))
        );
        assert_eq!(
            artifact_uri("/home/me/op/src/main.rs"),
            ("file:///home/me/op/src/main.rs".to_string(), None)
        );
        assert_eq!(
            artifact_uri("C:\\op\\src\\main.rs"),
            ("file:///C:/op/src/main.rs".to_string(), None)
        );
        assert_eq!(artifact_uri("a:b:c/d:e.rs").0, "a%3Ab%3Ac/d:e.rs");
        assert_eq!(artifact_uri("src/ünï#?.rs").0, "src/%C3%BCn%C3%AF%23%3F.rs");
    }

    #[test]
    fn regions_are_valid() {
        assert_eq!(region(&span("a.rs", 0, 0, 0, 0)), None);
        assert_eq!(
            region(&span("a.rs", 3, 0, 2, 0)),
            Some(Region {
                start_line: 3,
                start_column: 1,
                end_line: 3,
                end_column: 1
            })
        );
        assert_eq!(
            region(&span("a.rs", 3, 5, 4, 2)),
            Some(Region {
                start_line: 3,
                start_column: 5,
                end_line: 4,
                end_column: 2
            })
        );
    }

    #[test]
    fn first_paragraphs() {
        let doc = "# CA0 x\n\nOpening line one\nline two.\n\n| a | b |\n\n## What it is\n\n```rust\nfn f() {}\n```\nWhat.\n\n## Next\n";
        assert_eq!(
            first_paragraph(doc, |h| h.is_none()).as_deref(),
            Some("Opening line one line two.")
        );
        assert_eq!(
            first_paragraph(doc, |h| h == Some("What it is")).as_deref(),
            Some("What.")
        );
        assert_eq!(
            first_paragraph("# T\n## What it is\n", |h| h.is_none()),
            None
        );
    }

    #[test]
    fn every_rule_has_a_description() {
        for r in RULES {
            let d = descriptor(r);
            assert!(!d.full_description.text.is_empty(), "{}", r.code);
            assert!(!d.help.text.is_empty(), "{}", r.code);
        }
    }
}
