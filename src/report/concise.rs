//! `-o concise`: one line per finding, `path:line:col: CODE message`, as ruff and clippy print them for editors and
//! terminals to jump to; findings about objects and controllers lead with the subject instead of a path.

use super::table::severity_ansi;
use super::{BOLD, RESET, Report, footer, normalize_path};
use crate::finding::{Finding, Subject};

/// Renders one line per finding, then the notes, the summary line and the stats.
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let mut out = String::new();
    for f in report.findings {
        out.push_str(&line(f, report.color));
        out.push('\n');
    }
    out.push_str(&footer(report));
    Ok(out)
}

/// `src/a.rs:12:5: CA202 message`, the code coloured by severity when `color`.
pub fn line(f: &Finding, color: bool) -> String {
    let place = match &f.subject {
        Subject::Source(s) => format!("{}:{}:{}", normalize_path(&s.file), s.line, s.column),
        other => other.label(),
    };
    let code = if color {
        format!("{BOLD}{}{}{RESET}", severity_ansi(f.severity), f.code)
    } else {
        f.code.clone()
    };
    // A message is one line here, whatever it carries.
    let message = f.message.replace(['\n', '\r'], " ");
    format!("{place}: {code} {message}")
}
