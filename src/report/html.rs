//! `-o html` and the bench's `report.html`: one self-contained page (inline style and SVG, no script, nothing
//! fetched) with the tables, the charts, each finding with its evidence, and the docs of the rules it cites —
//! a file that can be attached to an issue or a chat and still reads the same.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::document::{Block, Document, Tone};
use super::{Note, Report};
use crate::finding::{Finding, Severity};
use crate::rules::{self, Rule};

/// Kept short and free of external fonts: the page must render the same offline.
const STYLE: &str = r#"
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg-alt: #f6f8fa;
  --error: #cf222e; --warning: #9a6700; --info: #0969da; }
* { box-sizing: border-box; }
body { font: 14px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); margin: 0; }
header, main { max-width: 1200px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 24px; border-bottom: 1px solid var(--line); }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 10px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.meta { color: var(--muted); margin: 0 0 16px; }
p { margin: 4px 0; }
p.note { color: var(--muted); }
p.alert { color: var(--error); font-weight: 600; }
code, pre, p.command { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
p.command { background: var(--bg-alt); padding: 6px 10px; border-radius: 6px; }
pre { background: var(--bg-alt); padding: 10px; border-radius: 6px; overflow-x: auto; }
.scroll { overflow-x: auto; margin: 10px 0; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg-alt); }
tbody tr:nth-child(even) td { background: #fbfcfd; }
figure { margin: 16px 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); }
.finding { border: 1px solid var(--line); border-left: 4px solid var(--muted); border-radius: 6px; padding: 8px 12px; margin: 10px 0; }
.finding.error { border-left-color: var(--error); }
.finding.warning { border-left-color: var(--warning); }
.finding.info { border-left-color: var(--info); }
.finding .head { display: flex; gap: 10px; align-items: baseline; flex-wrap: wrap; }
.sev { font-weight: 700; text-transform: uppercase; font-size: 12px; }
.error .sev { color: var(--error); } .warning .sev { color: var(--warning); } .info .sev { color: var(--info); }
.subject { color: var(--muted); font-family: ui-monospace, monospace; font-size: 12px; }
.finding ul { margin: 4px 0; padding-left: 20px; }
.help { color: var(--muted); }
details { border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px; margin: 8px 0; }
summary { cursor: pointer; font-weight: 600; }
.doc h1 { font-size: 18px; } .doc h2 { font-size: 16px; }
footer { max-width: 1200px; margin: 32px auto; padding: 0 24px; color: var(--muted); font-size: 12px; }
"#;

/// The page for a findings report (`scan` or `live` with `-o html`).
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let mut doc = Document::new(format!("kubectl ctrlaudit {}", report.command));
    doc.line(Tone::Plain, super::summary_line(report.findings));
    let stats = super::stats_line(report.stats);
    if !stats.is_empty() {
        doc.line(Tone::Note, stats);
    }
    Ok(page(&doc, report.findings, report.notes, &[]))
}

/// The whole page: `doc`'s blocks, then the findings, the notes, and the docs of every rule the findings cite
/// plus `also_rules` (the bench's measured rules; repeats are fine).
pub fn page(
    doc: &Document,
    findings: &[Finding],
    notes: &[Note],
    also_rules: &[&'static Rule],
) -> String {
    let mut cited: Vec<&'static Rule> = also_rules
        .iter()
        .copied()
        .chain(findings.iter().filter_map(|f| rules::find(&f.code)))
        .collect();
    cited.sort_by_key(|r| r.code);
    cited.dedup_by_key(|r| r.code);
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (doc.title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    h1 { (doc.title) }
                    p.meta { "kubectl-ctrlaudit " (env!("CARGO_PKG_VERSION")) }
                }
                main {
                    @for block in &doc.blocks { (block_html(block)) }
                    @if !findings.is_empty() {
                        section #findings {
                            h2 { "Findings (" (findings.len()) ")" }
                            @for f in findings { (finding_html(f)) }
                        }
                    }
                    @if !notes.is_empty() {
                        section #notes {
                            h2 { "Not observed" }
                            ul { @for n in notes { li { code { (n.subject) } " — " (n.message) } } }
                        }
                    }
                    @if !cited.is_empty() {
                        section #rules {
                            h2 { "Rules" }
                            @for r in &cited { (rule_html(r)) }
                        }
                    }
                }
                footer {
                    "Self-contained: no script, nothing loaded from the network. Rule docs: "
                    a href=(rules::REPOSITORY_URL) { (rules::REPOSITORY_URL) }
                }
            }
        }
    };
    markup.into_string()
}

fn block_html(block: &Block) -> Markup {
    match block {
        Block::Line(tone, text) => {
            let class = match tone {
                Tone::Plain => "plain",
                Tone::Note => "note",
                Tone::Alert => "alert",
                Tone::Command => "command",
            };
            html! { p class=(class) { (text) } }
        }
        Block::Table(t) => table_html(t),
        Block::Chart { caption, svg } => html! {
            // Our own plotters output, not user text: inlined as it is.
            figure { (PreEscaped(svg)) figcaption { (caption) } }
        },
    }
}

/// A comfy-table as an HTML table: the same header and cells the terminal shows.
pub fn table_html(t: &comfy_table::Table) -> Markup {
    html! {
        div.scroll {
            table {
                @if let Some(h) = t.header() {
                    thead { tr { @for c in h.cell_iter() { th { (c.content()) } } } }
                }
                tbody {
                    @for row in t.row_iter() {
                        tr { @for c in row.cell_iter() { td { (c.content()) } } }
                    }
                }
            }
        }
    }
}

fn severity_class(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

fn finding_html(f: &Finding) -> Markup {
    let rule = rules::find(&f.code);
    let evidence = super::evidence_lines(f);
    html! {
        article class={"finding " (severity_class(f.severity))} {
            div.head {
                span.sev { (f.severity.as_str()) }
                a href={"#doc-" (f.code)} { strong { (f.code) } }
                @if let Some(r) = rule { span { (r.name) } }
                span.subject { (f.subject.label()) }
            }
            p { (f.message) }
            @if !evidence.is_empty() {
                ul { @for line in &evidence { li { (line) } } }
            }
            @if !f.help.is_empty() { p.help { "help: " (f.help) } }
            @if let Some(r) = rule {
                p.help { "rule doc: " a href=(r.help_uri()) { (r.doc_file()) } }
            }
        }
    }
}

fn rule_html(r: &Rule) -> Markup {
    let mut doc = String::new();
    let parser = pulldown_cmark::Parser::new_ext(r.doc(), pulldown_cmark::Options::ENABLE_TABLES);
    pulldown_cmark::html::push_html(&mut doc, parser);
    html! {
        details id={"doc-" (r.code)} {
            summary { (r.code) " " (r.name) " — " (r.summary) }
            // Our own docs, compiled into the binary.
            div.doc { (PreEscaped(doc)) }
            p { a href=(r.help_uri()) { "on the web" } }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::finding::{Evidence, Lens, Subject};

    fn finding(message: &str) -> Finding {
        Finding {
            code: "CA202".into(),
            severity: Severity::Error,
            lens: Lens::Live,
            message: message.into(),
            subject: Subject::Controller {
                manager: Some("widget-operator".into()),
                user: None,
                user_agent: None,
            },
            evidence: vec![Evidence::Value {
                name: "writes".into(),
                value: 120.0,
                unit: "per minute".into(),
            }],
            help: "write it only when something changed".into(),
            objects: Vec::new(),
        }
    }

    #[test]
    fn findings_page_escapes_text_and_carries_evidence_and_the_rule_doc() {
        let findings = [finding("<script>alert(1)</script> wrote `a&b`")];
        let notes = [Note {
            subject: "metrics".into(),
            message: "no --metrics-url".into(),
        }];
        let stats = [("window".into(), "30s".into())];
        let report = Report::new("live", &findings, &notes, &stats);
        let html = render(&report).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(!html.contains("<script>"), "user text is escaped");
        assert!(html.contains("&lt;script&gt;"));
        assert!(html.contains("writes = 120 per minute"));
        assert!(html.contains(r##"href="#doc-CA202""##));
        assert!(html.contains(r#"id="doc-CA202""#));
        assert!(html.contains("no --metrics-url"));
        assert!(html.contains("window: 30s"));
        assert!(
            !html.contains(" src=") && !html.contains("<link"),
            "nothing loaded"
        );
    }

    #[test]
    fn a_table_keeps_its_header_and_cells() {
        let mut t = comfy_table::Table::new();
        t.set_header(["variant", "Ready"])
            .add_row(["good", "50/50"]);
        let html = table_html(&t).into_string();
        assert!(html.contains("<th>variant</th>"), "{html}");
        assert!(html.contains("<td>50/50</td>"), "{html}");
    }
}
