//! `-o html` and the bench's `report.html`: one self-contained page (inline style and SVG, no script, nothing
//! fetched) with the tables, the charts, each finding with its evidence, and the docs of the rules it cites —
//! a file that can be attached to an issue or a chat and still reads the same.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::document::{Block, Document, Tone};
use super::{NO_SOURCES, Note, Report, Sources};
use crate::finding::{Finding, Severity, Span, Subject};
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
pre.excerpt { padding: 6px 0; margin: 6px 0; }
pre.excerpt span { display: block; padding: 0 10px; white-space: pre; }
pre.excerpt span.hit { background: #fff8c5; }
pre.excerpt i { color: var(--muted); font-style: normal; display: inline-block; min-width: 4ch; text-align: right; margin-right: 12px; user-select: none; }
"#;

/// Lines of source quoted around a finding's span: the span's lines (at most this many) and one before.
const EXCERPT_LINES: usize = 4;

/// The page for a findings report (`scan` or `live` with `-o html`).
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let mut doc = Document::new(format!("kubectl ctrlaudit {}", report.command));
    doc.line(Tone::Plain, super::summary_line(report.findings));
    let stats = super::stats_line(report.stats);
    if !stats.is_empty() {
        doc.line(Tone::Note, stats);
    }
    let link = LineLinks::from_env();
    Ok(page_with_sources(
        &doc,
        report.findings,
        report.notes,
        &[],
        report.sources,
        &link,
    ))
}

/// Where a finding's line links to: the file on GitHub at the commit under test when the page is made in GitHub
/// Actions (`GITHUB_SERVER_URL`, `GITHUB_REPOSITORY`, `GITHUB_SHA`), else the file by its path (the page opened
/// beside the tree it scanned).
#[derive(Debug, Default)]
pub struct LineLinks {
    /// `https://github.com/owner/repo/blob/SHA/`, and the workspace paths are relative to.
    github: Option<(String, Option<String>)>,
}

impl LineLinks {
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let github = match (
            var("GITHUB_SERVER_URL"),
            var("GITHUB_REPOSITORY"),
            var("GITHUB_SHA"),
        ) {
            (Some(server), Some(repo), Some(sha)) => Some((
                format!("{}/{repo}/blob/{sha}/", server.trim_end_matches('/')),
                var("GITHUB_WORKSPACE"),
            )),
            _ => None,
        };
        Self { github }
    }

    /// The link to `span`'s first line.
    pub fn to(&self, span: &Span) -> String {
        let file = span.file.trim_start_matches("./");
        match &self.github {
            Some((base, workspace)) => {
                let rel = workspace
                    .as_deref()
                    .and_then(|w| std::path::Path::new(file).strip_prefix(w).ok())
                    .map_or_else(|| file.to_string(), |p| p.display().to_string());
                format!("{base}{rel}#L{}", span.line)
            }
            None => format!("{file}#L{}", span.line),
        }
    }
}

/// The whole page: `doc`'s blocks, then the findings, the notes, and the docs of every rule the findings cite
/// plus `also_rules` (the bench's measured rules; repeats are fine).
pub fn page(
    doc: &Document,
    findings: &[Finding],
    notes: &[Note],
    also_rules: &[&'static Rule],
) -> String {
    page_with_sources(
        doc,
        findings,
        notes,
        also_rules,
        &NO_SOURCES,
        &LineLinks::default(),
    )
}

/// [`page`], quoting each source finding's lines from `sources` and linking them with `links`.
pub fn page_with_sources(
    doc: &Document,
    findings: &[Finding],
    notes: &[Note],
    also_rules: &[&'static Rule],
    sources: &Sources,
    links: &LineLinks,
) -> String {
    let by_rule = per_rule(findings);
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
                    @if by_rule.len() > 1 {
                        section #by-rule {
                            h2 { "By rule" }
                            div.scroll { table {
                                thead { tr { th { "rule" } th { "name" } th { "error" } th { "warning" } th { "info" } } }
                                tbody {
                                    @for (code, name, counts) in &by_rule {
                                        tr {
                                            td { a href={"#doc-" (code)} { (code) } }
                                            td { (name) }
                                            @for n in counts { td { @if *n > 0 { (n) } } }
                                        }
                                    }
                                }
                            } }
                        }
                    }
                    @if !findings.is_empty() {
                        section #findings {
                            h2 { "Findings (" (findings.len()) ")" }
                            @for f in findings { (finding_html(f, sources, links)) }
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

/// Findings per rule, in code order: (code, name, [errors, warnings, infos]).
fn per_rule(findings: &[Finding]) -> Vec<(String, &'static str, [usize; 3])> {
    let mut by: std::collections::BTreeMap<&str, [usize; 3]> = std::collections::BTreeMap::new();
    for ((code, severity), n) in super::counts_by_rule(findings) {
        let i = match severity {
            Severity::Error => 0,
            Severity::Warning => 1,
            Severity::Info => 2,
        };
        by.entry(code).or_default()[i] = n;
    }
    by.into_iter()
        .map(|(code, counts)| {
            let name = rules::find(code).map_or("", |r| r.name);
            (code.to_string(), name, counts)
        })
        .collect()
}

/// The lines of `span` (at most [`EXCERPT_LINES`]) and the one before, numbered, the span's own marked.
fn excerpt(text: &str, span: &Span) -> Vec<(usize, String, bool)> {
    let first = span.line.saturating_sub(1).max(1);
    let last = span
        .end_line
        .max(span.line)
        .min(span.line + EXCERPT_LINES - 1);
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .skip(first - 1)
        .take_while(|(n, _)| *n <= last)
        .map(|(n, l)| (n, l.to_string(), n >= span.line))
        .collect()
}

fn finding_html(f: &Finding, sources: &Sources, links: &LineLinks) -> Markup {
    let rule = rules::find(&f.code);
    let evidence = super::evidence_lines(f);
    let span = match &f.subject {
        Subject::Source(s) => Some(s),
        _ => None,
    };
    let lines = span
        .and_then(|s| Some(excerpt(sources.get(&s.file)?, s)))
        .unwrap_or_default();
    html! {
        article class={"finding " (severity_class(f.severity))} {
            div.head {
                span.sev { (f.severity.as_str()) }
                a href={"#doc-" (f.code)} { strong { (f.code) } }
                @if let Some(r) = rule { span { (r.name) } }
                @if let Some(s) = span {
                    a.subject href=(links.to(s)) { (f.subject.label()) }
                } @else {
                    span.subject { (f.subject.label()) }
                }
            }
            p { (f.message) }
            @if !lines.is_empty() {
                pre.excerpt {
                    @for (n, text, hit) in &lines {
                        span class=[hit.then_some("hit")] { i { (n) } (text) }
                    }
                }
            }
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
    use crate::finding::{Evidence, Lens};

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
                actor: None,
            },
            evidence: vec![Evidence::Value {
                name: "writes".into(),
                value: 120.0,
                unit: "per minute".into(),
            }],
            help: "write it only when something changed".into(),
            objects: Vec::new(),
            when: None,
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
    fn a_source_finding_quotes_its_lines_links_them_and_the_page_counts_per_rule() {
        let span = |line, end_line| Span {
            file: "src/reconcile.rs".into(),
            line,
            column: 5,
            end_line,
            end_column: 9,
        };
        let at = |code: &str, severity, line| Finding {
            code: code.into(),
            severity,
            subject: Subject::Source(span(line, line)),
            ..finding("requeues after 5s")
        };
        let findings = [
            at("CA203", Severity::Warning, 3),
            at("CA203", Severity::Warning, 4),
            at("CA101", Severity::Error, 2),
        ];
        let mut sources = Sources::new();
        sources.insert(
            "src/reconcile.rs".into(),
            "fn a() {\n  let x = <b>;\n  requeue(5)\n  requeue(6)\n}\n".into(),
        );
        // Not `render`: in GitHub Actions its links would point at GitHub (`LineLinks::from_env`).
        let html = page_with_sources(
            &Document::new("kubectl ctrlaudit scan"),
            &findings,
            &[],
            &[],
            &sources,
            &LineLinks::default(),
        );
        assert!(
            html.contains(r#"<span class="hit"><i>3</i>  requeue(5)</span>"#),
            "{html}"
        );
        assert!(
            html.contains("<span><i>2</i>  let x = &lt;b&gt;;</span>"),
            "{html}"
        );
        assert!(html.contains(r#"href="src/reconcile.rs#L3""#), "{html}");
        assert!(html.contains("By rule"), "{html}");
        assert!(
            html.contains(r##"<td><a href="#doc-CA203">CA203</a></td><td>polling-requeue</td><td></td><td>2</td><td></td>"##),
            "{html}"
        );
        let gh = LineLinks {
            github: Some((
                "https://github.com/o/r/blob/abc/".into(),
                Some("/home/runner/work/r/r".into()),
            )),
        };
        let abs = Span {
            file: "/home/runner/work/r/r/src/a.rs".into(),
            ..span(7, 7)
        };
        assert_eq!(gh.to(&abs), "https://github.com/o/r/blob/abc/src/a.rs#L7");
        assert_eq!(
            gh.to(&span(7, 7)),
            "https://github.com/o/r/blob/abc/src/reconcile.rs#L7"
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
