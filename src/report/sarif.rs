//! `-o sarif`: SARIF 2.1.0 for GitHub code scanning: every rule of the registry with its doc, one result per finding.
//!
//! Source findings get physical locations (`%SRCROOT%`-relative URIs, 1-based regions); findings about
//! Kubernetes objects and controllers get logical locations. Findings an inline allow comment suppressed are kept
//! as results with an `inSource` suppression whose justification is the comment's reason (as semgrep and CodeQL
//! report theirs), so a viewer can audit what was silenced. Notes become tool execution notifications.

use super::{Report, normalize_path};
use crate::finding::{Evidence, Finding, Severity, Span, Subject, Suppressed};
use crate::rules::{self, RULES, Rule};
use anyhow::Context;
use serde_json::Value;
use serde_sarif::sarif::{
    ArtifactLocation, Invocation, Location, LogicalLocation, Message, MultiformatMessageString,
    Notification, PhysicalLocation, PropertyBag, Region, ReportingConfiguration,
    ReportingDescriptor, Result as SarifResult, ResultLevel, Run, Sarif, Suppression,
    SupressionKind, Tool, ToolComponent,
};
use std::collections::BTreeMap;

pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";
pub const SARIF_VERSION: &str = "2.1.0";
/// The key of `partialFingerprints`; bump the suffix if `Finding::fingerprint` ever changes meaning.
pub const FINGERPRINT_KEY: &str = "ctrlaudit/v1";
pub const SRCROOT: &str = "%SRCROOT%";
const TOOL_NAME: &str = "kubectl-ctrlaudit";

/// Renders the report as a SARIF 2.1.0 log with one run, pretty-printed, followed by a newline.
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let notifications: Vec<Notification> = report
        .notes
        .iter()
        .map(|n| {
            Notification::builder()
                .level(Value::String(ResultLevel::Note.to_string()))
                .message(message(super::note_line(n)))
                .build()
        })
        .collect();
    let results = report
        .findings
        .iter()
        .map(result)
        .chain(report.suppressed.iter().map(suppressed_result))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut properties = BTreeMap::new();
    properties.insert(
        "command".to_string(),
        Value::String(report.command.to_string()),
    );
    if !report.stats.is_empty() {
        // The keys and numbers of `-o json`, not the table's text.
        let stats = serde_json::to_value(super::stats::Typed::of(report.stats))
            .context("serializing the stats")?;
        properties.insert("stats".to_string(), stats);
    }
    let driver = ToolComponent::builder()
        .name(TOOL_NAME)
        .version(env!("CARGO_PKG_VERSION"))
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .information_uri(rules::REPOSITORY_URL)
        .rules(RULES.iter().copied().map(descriptor).collect::<Vec<_>>())
        .build();
    let invocation = Invocation::builder()
        .execution_successful(true)
        .opt_tool_execution_notifications(non_empty(notifications))
        .build();
    let run = Run::builder()
        .tool(Tool::builder().driver(driver).build())
        .invocations(vec![invocation])
        .column_kind(Value::String("unicodeCodePoints".into()))
        .results(results)
        .properties(bag(properties))
        .build();
    let log = Sarif::builder()
        .schema(SCHEMA_URI)
        .version(Value::String(SARIF_VERSION.into()))
        .runs(vec![run])
        .build();
    let mut out = serde_json::to_string_pretty(&log).context("serializing the sarif log")?;
    out.push('\n');
    Ok(out)
}

/// The SARIF level of a severity: error, warning, note.
pub fn level(severity: Severity) -> ResultLevel {
    match severity {
        Severity::Error => ResultLevel::Error,
        Severity::Warning => ResultLevel::Warning,
        Severity::Info => ResultLevel::Note,
    }
}

fn message(text: impl Into<String>) -> Message {
    Message::builder().text(text.into()).build()
}

fn multiformat(text: impl Into<String>, markdown: Option<String>) -> MultiformatMessageString {
    MultiformatMessageString::builder()
        .text(text.into())
        .opt_markdown(markdown)
        .build()
}

fn bag(properties: BTreeMap<String, Value>) -> PropertyBag {
    PropertyBag::builder()
        .additional_properties(properties)
        .build()
}

/// `None` for an empty list: SARIF consumers treat an absent array and an empty one alike, and absent is shorter.
fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

/// SARIF integers are JSON numbers; a line or index beyond i64 cannot occur in a source file.
fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn descriptor(rule: &Rule) -> ReportingDescriptor {
    let doc = rule.doc().trim();
    let help_text = if doc.is_empty() {
        format!("{}\n\nSee {}", rule.summary, rule.help_uri())
    } else {
        doc.to_string()
    };
    let tags: Vec<String> = rule.lenses.iter().map(|l| l.as_str().to_string()).collect();
    ReportingDescriptor::builder()
        .id(rule.code)
        .name(rule.name)
        .short_description(multiformat(rule.summary, None))
        .full_description(multiformat(full_description(rule), None))
        .help(multiformat(
            help_text,
            (!doc.is_empty()).then(|| doc.to_string()),
        ))
        .help_uri(rule.help_uri())
        .default_configuration(
            ReportingConfiguration::builder()
                .level(Value::String(level(rule.default_severity).to_string()))
                .build(),
        )
        .properties(PropertyBag::builder().tags(tags).build())
        .build()
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

fn result(f: &Finding) -> anyhow::Result<SarifResult> {
    let rule_index = RULES.iter().position(|r| r.code == f.code).map(int);
    let location = match &f.subject {
        Subject::Source(span) => Location::builder()
            .physical_location(physical(span))
            .build(),
        other => Location::builder()
            .logical_locations(vec![logical(other)])
            .build(),
    };
    let related_locations = f
        .evidence
        .iter()
        .filter_map(|e| match e {
            Evidence::Related { span, note } => Some((span, note)),
            _ => None,
        })
        .enumerate()
        .map(|(i, (span, note))| {
            Location::builder()
                .id(int(i))
                .physical_location(physical(span))
                .opt_message((!note.is_empty()).then(|| message(note.clone())))
                .build()
        })
        .collect();
    let mut partial_fingerprints = BTreeMap::new();
    partial_fingerprints.insert(FINGERPRINT_KEY.to_string(), f.fingerprint());
    let mut properties = BTreeMap::new();
    properties.insert("lens".to_string(), Value::String(f.lens.as_str().into()));
    if !f.help.is_empty() {
        properties.insert("help".to_string(), Value::String(f.help.clone()));
    }
    if let Some(when) = &f.when {
        properties.insert("when".to_string(), Value::String(when.path.as_str().into()));
        if let Some(c) = &when.condition {
            properties.insert("whenCondition".to_string(), Value::String(c.clone()));
        }
    }
    if !f.evidence.is_empty() {
        let evidence = serde_json::to_value(&f.evidence).context("serializing evidence")?;
        properties.insert("evidence".to_string(), evidence);
    }
    Ok(SarifResult::builder()
        .rule_id(f.code.clone())
        .opt_rule_index(rule_index)
        .level(level(f.severity))
        .message(message(f.message.clone()))
        .locations(vec![location])
        .opt_related_locations(non_empty(related_locations))
        .partial_fingerprints(partial_fingerprints)
        .properties(bag(properties))
        .build())
}

/// A suppressed finding: its result, with the allow comment as an `inSource` suppression.
fn suppressed_result(s: &Suppressed) -> anyhow::Result<SarifResult> {
    let mut r = result(&s.finding)?;
    let suppression = Suppression::builder()
        .kind(Value::String(SupressionKind::InSource.to_string()))
        .opt_justification((!s.reason.is_empty()).then(|| s.reason.clone()))
        .location(
            Location::builder()
                .physical_location(physical(&s.comment))
                .build(),
        )
        .build();
    r.suppressions = Some(vec![suppression]);
    Ok(r)
}

fn physical(span: &Span) -> PhysicalLocation {
    let (uri, uri_base_id) = artifact_uri(&span.file);
    PhysicalLocation::builder()
        .artifact_location(
            ArtifactLocation::builder()
                .uri(uri)
                .opt_uri_base_id(uri_base_id.map(str::to_string))
                .build(),
        )
        .opt_region(region(span))
        .build()
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
    Some(
        Region::builder()
            .start_line(int(start_line))
            .start_column(int(start_column))
            .end_line(int(end_line))
            .end_column(int(end_column))
            .build(),
    )
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
            namespace, name, ..
        } => {
            let gk = subject.type_label().unwrap_or_default();
            let mut fqn = gk.clone();
            if let Some(ns) = namespace {
                fqn.push('/');
                fqn.push_str(ns);
            }
            if name.is_empty() {
                logical_location(gk, fqn, "type")
            } else {
                fqn.push('/');
                fqn.push_str(name);
                logical_location(name.clone(), fqn, "object")
            }
        }
        Subject::Controller {
            manager,
            user,
            user_agent,
            ..
        } => {
            let name = manager
                .as_deref()
                .or(user.as_deref())
                .or(user_agent.as_deref())
                .unwrap_or("unknown controller")
                .to_string();
            logical_location(name, subject.label(), "module")
        }
        Subject::Source(span) => logical_location(span.file.clone(), subject.label(), "module"),
    }
}

fn logical_location(name: String, fully_qualified_name: String, kind: &str) -> LogicalLocation {
    LogicalLocation::builder()
        .name(name)
        .fully_qualified_name(fully_qualified_name)
        .kind(kind)
        .build()
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

    fn region_of(start_line: i64, start_column: i64, end_line: i64, end_column: i64) -> Region {
        Region::builder()
            .start_line(start_line)
            .start_column(start_column)
            .end_line(end_line)
            .end_column(end_column)
            .build()
    }

    #[test]
    fn regions_are_valid() {
        assert_eq!(region(&span("a.rs", 0, 0, 0, 0)), None);
        assert_eq!(
            region(&span("a.rs", 3, 0, 2, 0)),
            Some(region_of(3, 1, 3, 1))
        );
        assert_eq!(
            region(&span("a.rs", 3, 5, 4, 2)),
            Some(region_of(3, 5, 4, 2))
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
            let text = |m: Option<MultiformatMessageString>| m.map(|m| m.text).unwrap_or_default();
            assert!(!text(d.full_description).is_empty(), "{}", r.code);
            assert!(!text(d.help).is_empty(), "{}", r.code);
        }
    }
}
