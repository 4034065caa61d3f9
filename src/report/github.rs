//! `-o github`: GitHub Actions workflow commands (`::error file=…::…`) that show as annotations on the pull request.

use super::{Report, evidence_lines, normalize_path, stats_line, summary_line};
use crate::finding::{Finding, Severity, Subject};
use crate::rules::find;
use std::fmt::Write as _;

/// Renders one workflow command per finding, a `::notice` per note, then a plain summary line.
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let mut out = String::new();
    for f in report.findings {
        writeln!(out, "{}", annotation(f))?;
    }
    for note in report.notes {
        writeln!(
            out,
            "::notice title={}::{}",
            escape_property("ctrlaudit: skipped"),
            escape_data(&format!("{} — {}", note.subject, note.message))
        )?;
    }
    let mut summary = format!(
        "ctrlaudit {}: {}",
        report.command,
        summary_line(report.findings)
    );
    let stats = stats_line(report.stats);
    if !stats.is_empty() {
        summary.push_str(" (");
        summary.push_str(&stats);
        summary.push(')');
    }
    // A plain log line; make sure it cannot be read as a workflow command.
    writeln!(out, "{}", summary.replace("::", ": :"))?;
    Ok(out)
}

/// One workflow command line for a finding.
pub fn annotation(f: &Finding) -> String {
    let command = match f.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    };
    let title = match find(&f.code) {
        Some(rule) => format!("{} {}", rule.code, rule.name),
        None => f.code.clone(),
    };
    let mut props: Vec<(&str, String)> = Vec::new();
    let mut message = String::new();
    match &f.subject {
        Subject::Source(s) => {
            props.push(("file", normalize_path(&s.file)));
            if s.line > 0 {
                props.push(("line", s.line.to_string()));
                if s.column > 0 {
                    props.push(("col", s.column.to_string()));
                }
                if s.end_line >= s.line {
                    props.push(("endLine", s.end_line.to_string()));
                    if s.end_column > 0 && (s.end_line > s.line || s.end_column >= s.column) {
                        props.push(("endColumn", s.end_column.to_string()));
                    }
                }
            }
        }
        other => {
            message.push_str(&other.label());
            message.push_str(": ");
        }
    }
    props.push(("title", title));
    message.push_str(&f.message);
    if !f.help.is_empty() {
        message.push_str(" (");
        message.push_str(&f.help);
        message.push(')');
    }
    for line in evidence_lines(f) {
        message.push('\n');
        message.push_str(&line);
    }
    let props = props
        .iter()
        .map(|(k, v)| format!("{k}={}", escape_property(v)))
        .collect::<Vec<_>>()
        .join(",");
    format!("::{command} {props}::{}", escape_data(&message))
}

/// Escapes a command's message as `@actions/core` does: `%`, `\r`, `\n`.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value: as data, plus `:` and `,`.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(escape_data("100% done\r\nnext"), "100%25 done%0D%0Anext");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }
}
