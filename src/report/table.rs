//! The default human-readable output: a table of findings, the skip notes, a summary line and the stats.

use super::{CYAN, RED, Report, YELLOW, footer, normalize_path, push_details};
use crate::finding::{Finding, Severity, Subject};
use comfy_table::{
    Attribute, Cell, Color, ColumnConstraint, ContentArrangement, Table, Width, presets,
};
use std::fmt::Write as _;
use std::io::IsTerminal;

/// Width used when stdout is not a terminal (files, pipes, tests), so that output is deterministic.
pub const DEFAULT_WIDTH: u16 = 120;

/// Renders the table (omitted when there are no findings), then notes, summary and stats.
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let width = if std::io::stdout().is_terminal() {
        Table::new().width().unwrap_or(DEFAULT_WIDTH)
    } else {
        DEFAULT_WIDTH
    };
    render_with_width(report, width)
}

/// Like [`render`] with an explicit width; used by tests and by callers that know the width.
pub fn render_with_width(report: &Report<'_>, width: u16) -> anyhow::Result<String> {
    let mut out = String::new();
    if !report.findings.is_empty() {
        let table = findings_table(report.findings, report.color, width);
        writeln!(out, "{table}")?;
    }
    out.push_str(&footer(report));
    Ok(out)
}

fn findings_table(findings: &[Finding], color: bool, width: u16) -> Table {
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width.max(40));
    if color {
        table.enforce_styling();
    }
    table.set_header(
        ["location", "code", "severity", "message"]
            .into_iter()
            .map(|h| {
                let c = Cell::new(h);
                if color {
                    c.add_attribute(Attribute::Bold)
                } else {
                    c
                }
            }),
    );
    // The message carries the most text; the location wraps rather than squeezes it.
    if let Some(c) = table.column_mut(0) {
        c.set_constraint(ColumnConstraint::UpperBoundary(Width::Percentage(32)));
    }
    for f in findings {
        let mut message = f.message.clone();
        push_details(&mut message, f, "↳ ");
        let mut severity = Cell::new(f.severity.as_str());
        let mut code = Cell::new(&f.code);
        if color {
            let c = severity_color(f.severity);
            severity = severity.fg(c);
            code = code.fg(c);
            if f.severity == Severity::Error {
                severity = severity.add_attribute(Attribute::Bold);
            }
        }
        table.add_row(vec![
            Cell::new(location(&f.subject)),
            code,
            severity,
            Cell::new(message),
        ]);
    }
    table
}

/// `file:line:col` for source, the subject's label otherwise.
pub fn location(subject: &Subject) -> String {
    match subject {
        Subject::Source(s) => format!("{}:{}:{}", normalize_path(&s.file), s.line, s.column),
        other => other.label(),
    }
}

fn severity_color(s: Severity) -> Color {
    match s {
        Severity::Error => Color::Red,
        Severity::Warning => Color::Yellow,
        Severity::Info => Color::Cyan,
    }
}

/// The ANSI color escape for a severity, for callers printing their own colored lines.
pub fn severity_ansi(s: Severity) -> &'static str {
    match s {
        Severity::Error => RED,
        Severity::Warning => YELLOW,
        Severity::Info => CYAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Lens, Span};

    fn scan_report(findings: &[Finding]) -> Report<'_> {
        Report::new("scan", findings, &[], &[])
    }

    fn finding(sev: Severity) -> Finding {
        Finding {
            code: "CA203".into(),
            severity: sev,
            lens: Lens::Scan,
            message: "requeue after 5 s on the success path".into(),
            subject: Subject::Source(Span {
                file: "./src/reconcile.rs".into(),
                line: 40,
                column: 9,
                end_line: 40,
                end_column: 52,
            }),
            evidence: vec![],
            help: "return Action::await_change()".into(),
            objects: Vec::new(),
            when: None,
        }
    }

    #[test]
    fn no_findings_omits_table() {
        let stats = [("files scanned".into(), "3".into())];
        let r = Report {
            stats: &stats,
            ..scan_report(&[])
        };
        let out = render_with_width(&r, 120).expect("renders");
        assert_eq!(out, "no findings\nfiles scanned: 3\n");
    }

    #[test]
    fn color_only_when_asked() {
        let fs = [finding(Severity::Warning)];
        let mut r = scan_report(&fs);
        let plain = render_with_width(&r, 120).expect("renders");
        assert!(!plain.contains('\x1b'), "{plain}");
        assert!(plain.contains("src/reconcile.rs:40:9"), "{plain}");
        assert!(
            plain.contains("help: return Action::await_change()"),
            "{plain}"
        );
        r.color = true;
        let colored = render_with_width(&r, 120).expect("renders");
        assert!(colored.contains('\x1b'), "{colored}");
    }

    #[test]
    fn narrow_width_is_respected() {
        let fs = [finding(Severity::Error)];
        let r = scan_report(&fs);
        let out = render_with_width(&r, 60).expect("renders");
        for line in out.lines() {
            assert!(line.chars().count() <= 60, "too wide: {line:?}");
        }
    }
}
