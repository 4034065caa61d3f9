//! `-o junit`: JUnit XML with one test case per rule of the command's lens, so CI shows which rules passed.
//!
//! A rule with findings is a failing test case carrying one `<failure>` per finding; notes go to `<system-out>`,
//! stats to `<properties>`.

use super::{Report, evidence_lines, lens_of_command, note_line};
use crate::finding::Finding;
use crate::rules::{RULES, find};
use std::fmt::Write as _;

struct Case<'a> {
    name: String,
    findings: Vec<&'a Finding>,
}

/// Renders the report as a JUnit XML document followed by a newline.
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let lens = lens_of_command(report.command);
    let mut cases: Vec<Case<'_>> = RULES
        .iter()
        .filter(|r| lens.is_none_or(|l| r.has_lens(l)))
        .map(|r| Case {
            name: format!("{} {}", r.code, r.name),
            findings: report
                .findings
                .iter()
                .filter(|f| f.code == r.code)
                .collect(),
        })
        .collect();
    // Findings of a rule outside the lens (or unknown to the registry) still get a test case.
    for f in report.findings {
        let listed = RULES
            .iter()
            .any(|r| r.code == f.code && lens.is_none_or(|l| r.has_lens(l)));
        if listed {
            continue;
        }
        let name = match find(&f.code) {
            Some(r) => format!("{} {}", r.code, r.name),
            None => f.code.clone(),
        };
        match cases.iter_mut().find(|c| c.name == name) {
            Some(c) => c.findings.push(f),
            None => cases.push(Case {
                name,
                findings: vec![f],
            }),
        }
    }

    let tests = cases.len();
    let failures = cases.iter().filter(|c| !c.findings.is_empty()).count();
    let suite = format!("ctrlaudit {}", report.command);
    let classname = format!("ctrlaudit.{}", report.command);

    let mut out = String::new();
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="kubectl-ctrlaudit" tests="{tests}" failures="{failures}" errors="0" skipped="0">"#
    )?;
    writeln!(
        out,
        r#"  <testsuite name="{}" tests="{tests}" failures="{failures}" errors="0" skipped="0">"#,
        attr(&suite)
    )?;
    if !report.stats.is_empty() {
        writeln!(out, "    <properties>")?;
        for (k, v) in report.stats {
            writeln!(
                out,
                r#"      <property name="{}" value="{}"/>"#,
                attr(k),
                attr(v)
            )?;
        }
        writeln!(out, "    </properties>")?;
    }
    for case in &cases {
        let open = format!(
            r#"    <testcase name="{}" classname="{}""#,
            attr(&case.name),
            attr(&classname)
        );
        if case.findings.is_empty() {
            writeln!(out, "{open}/>")?;
            continue;
        }
        writeln!(out, "{open}>")?;
        for f in &case.findings {
            let mut body = f.subject.label();
            for line in evidence_lines(f) {
                body.push_str("\n  ");
                body.push_str(&line);
            }
            if !f.help.is_empty() {
                body.push_str("\nhelp: ");
                body.push_str(&f.help);
            }
            writeln!(
                out,
                r#"      <failure message="{}" type="{}">{}</failure>"#,
                attr(&f.message),
                f.severity.as_str(),
                text(&body)
            )?;
        }
        writeln!(out, "    </testcase>")?;
    }
    if !report.notes.is_empty() {
        let notes: Vec<String> = report.notes.iter().map(note_line).collect();
        writeln!(
            out,
            "    <system-out>{}</system-out>",
            text(&notes.join("\n"))
        )?;
    }
    writeln!(out, "  </testsuite>")?;
    writeln!(out, "</testsuites>")?;
    Ok(out)
}

/// Escapes text content. Characters XML 1.0 cannot carry at all become U+FFFD.
pub fn text(s: &str) -> String {
    escape(s, false)
}

/// Escapes an attribute value; newlines and tabs are kept as character references.
pub fn attr(s: &str) -> String {
    escape(s, true)
}

fn escape(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            '\'' if attribute => out.push_str("&apos;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\t' | '\n' => out.push(c),
            c if is_xml_char(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

/// The XML 1.0 `Char` production.
fn is_xml_char(c: char) -> bool {
    matches!(c,
        '\u{9}' | '\u{A}' | '\u{D}'
        | '\u{20}'..='\u{D7FF}'
        | '\u{E000}'..='\u{FFFD}'
        | '\u{10000}'..='\u{10FFFF}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            attr("a<b & \"c\" 'd'\n\te"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&#10;&#9;e"
        );
        assert_eq!(text("x > y\n\"q\""), "x &gt; y\n\"q\"");
        assert_eq!(text("nul\u{0}bell\u{7}"), "nul\u{FFFD}bell\u{FFFD}");
        assert_eq!(text("cr\r"), "cr&#13;");
    }
}
