//! The demo's verdict: each live finding given to the controller it names, and one column per controller with
//! what live found beside what bench measured — for the terminal and for demo.html.

use crate::bench::summary::{VariantSummary, compact, requests_text};
use crate::finding::{Finding, Subject};
use crate::report::document::{Document, Tone};

use super::Tour;

/// The bench variant a live finding is about: by field manager (live names the controller by it, and by the
/// `controller` label of its metrics), by a user agent that names it, or by the namespace of an object.
pub fn variant_of<'a>(f: &Finding, variants: &'a [VariantSummary]) -> Option<&'a str> {
    let names = variants.iter().map(|v| v.name.as_str());
    match &f.subject {
        Subject::Controller {
            manager,
            user_agent,
            ..
        } => names.into_iter().find(|n| {
            manager.as_deref() == Some(*n)
                || user_agent
                    .as_deref()
                    .is_some_and(|ua| ua.split(['/', ' ']).any(|t| t == *n))
        }),
        Subject::Object {
            namespace: Some(ns),
            ..
        } => names
            .into_iter()
            .find(|n| ns.strip_suffix(*n).is_some_and(|p| p.ends_with('-'))),
        _ => None,
    }
}

/// "CA202 error, CA201 warning" for one variant, or "nothing".
fn found(tour: &Tour, variant: &str) -> String {
    let mut codes: Vec<String> = tour
        .findings
        .iter()
        .filter(|f| variant_of(f, &tour.bench.variants) == Some(variant))
        .map(|f| format!("{} {}", f.code, f.severity.as_str()))
        .collect();
    codes.sort();
    codes.dedup();
    if codes.is_empty() {
        "nothing".into()
    } else {
        codes.join(", ")
    }
}

/// One column per variant, one row per measure.
fn table(tour: &Tour) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(120);
    let vs = &tour.bench.variants;
    t.set_header(std::iter::once(String::new()).chain(vs.iter().map(|v| v.name.clone())));
    let row = |label: &str, f: &dyn Fn(&VariantSummary) -> String| {
        std::iter::once(label.to_string())
            .chain(vs.iter().map(f))
            .collect::<Vec<_>>()
    };
    t.add_row(row("live found", &|v| found(tour, &v.name)));
    t.add_row(row("Ready at the end", &|v| {
        format!("{}/{}", v.ready, v.expected)
    }));
    t.add_row(row("settled", &|v| {
        if v.settled {
            "yes".into()
        } else {
            format!("no, still {:.0} reconciles/s", v.reconciles_per_s_at_end)
        }
    }));
    t.add_row(row("reconciles", &|v| compact(v.reconciles_total)));
    t.add_row(row("API requests", &|v| requests_text(&v.requests)));
    t.add_row(row("writes/s avg / peak", &|v| {
        format!("{:.1} / {:.0}", v.writes_per_s_avg, v.writes_per_s_peak)
    }));
    t.add_row(row("peak share of the write ceiling", &|v| {
        v.ceiling_share
            .map_or("—".into(), |s| format!("{:.0}%", s * 100.0))
    }));
    t
}

/// "bad-annotation-loop made 2,713 writes for 30 Widgets where good made 30: 90× the load on the API server".
fn cost_line(tour: &Tour) -> Option<String> {
    let vs = &tour.bench.variants;
    let bad = vs.iter().find(|v| v.name.starts_with("bad"))?;
    let good = vs.iter().find(|v| v.name == "good")?;
    let ratio = bad.writes / good.writes.max(1.0);
    Some(format!(
        "cost: {} made {} writes for {} Widgets where {} made {}: {:.0}× the writes, for nothing",
        bad.name,
        compact(bad.writes),
        bad.expected,
        good.name,
        compact(good.writes),
        ratio
    ))
}

/// The demo's layout: the setting, live's findings, the side-by-side table, the cost, and with `outcome` the
/// bench's last lines (demo.html has them from the bench report it appends).
fn document(tour: &Tour, outcome: bool) -> Document {
    let b = &tour.bench;
    let mut d = Document::new(format!(
        "kubectl ctrlaudit demo — rule {} on {}",
        super::RULE,
        tour.cluster
    ));
    d.line(
        Tone::Plain,
        format!(
            "bad-annotation-loop writes a timestamp annotation on every reconcile; good writes only what changed. \
             {} Widgets each, {:.0}s.",
            b.objects_per_variant, b.duration_s
        ),
    );
    d.line(
        Tone::Plain,
        format!(
            "live watched them for {:.0}s, read-only: {}",
            tour.live_window_s,
            crate::report::summary_line(&tour.findings)
        ),
    );
    d.table(table(tour));
    if let Some(line) = cost_line(tour) {
        d.line(Tone::Plain, line);
    }
    for n in &tour.notes {
        d.line(Tone::Note, format!("note: {}: {}", n.subject, n.message));
    }
    if outcome {
        b.push_outcome(&mut d);
    }
    d
}

/// The terminal output: the document, each finding on its own lines, and where the page is.
pub fn render(tour: &Tour) -> String {
    let mut out = document(tour, true).text();
    if !tour.findings.is_empty() {
        out.push_str("\nwhat live found:\n");
        for f in &tour.findings {
            out.push_str(&format!(
                "  {} {} {}\n    {}\n",
                f.severity.as_str(),
                f.code,
                f.subject.label(),
                f.message
            ));
        }
    }
    if let Some(p) = &tour.report_html {
        out.push_str(&format!(
            "\nreport: {p} (findings with evidence, costs, chart; one file to share)\n"
        ));
    }
    out
}

/// demo.html: the demo's document, then the bench's own report with its chart, then every finding and the rule.
pub fn html(tour: &Tour, chart_svg: Option<&str>) -> String {
    let mut d = document(tour, false);
    d.blocks.extend(tour.bench.document(chart_svg).blocks);
    let rules: Vec<&'static crate::rules::Rule> =
        crate::rules::find(super::RULE).into_iter().collect();
    crate::report::html::page(&d, &tour.findings, &tour.notes, &rules)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::bench::report::BenchReport;
    use crate::finding::{Lens, Severity};

    fn variant(name: &str, writes: f64, ready: u64) -> VariantSummary {
        VariantSummary {
            name: name.into(),
            expected: 30,
            ready,
            writes,
            reconciles_total: writes,
            ..VariantSummary::default()
        }
    }

    fn finding(code: &str, subject: Subject) -> Finding {
        Finding {
            code: code.into(),
            severity: Severity::Error,
            lens: Lens::Live,
            message: "m".into(),
            subject,
            evidence: vec![],
            help: String::new(),
            objects: Vec::new(),
            when: None,
        }
    }

    fn controller(manager: Option<&str>, ua: Option<&str>) -> Subject {
        Subject::Controller {
            manager: manager.map(str::to_string),
            user: None,
            user_agent: ua.map(str::to_string),
            actor: None,
        }
    }

    fn tour(findings: Vec<Finding>) -> Tour {
        Tour {
            cluster: "testenv".into(),
            bench: BenchReport {
                complete: true,
                objects_per_variant: 30,
                duration_s: 30.0,
                variants: vec![
                    variant("bad-annotation-loop", 2713.0, 11),
                    variant("good", 30.0, 30),
                ],
                ..BenchReport::default()
            },
            findings,
            notes: vec![],
            live_window_s: 27.0,
            report_html: None,
        }
    }

    #[test]
    fn findings_go_to_the_controller_they_name_and_no_other() {
        let vs = tour(vec![]).bench.variants;
        let by_manager = finding("CA202", controller(Some("bad-annotation-loop"), None));
        assert_eq!(variant_of(&by_manager, &vs), Some("bad-annotation-loop"));
        let by_agent = finding(
            "CA201",
            controller(None, Some("kubectl-ctrlaudit/bench good")),
        );
        assert_eq!(variant_of(&by_agent, &vs), Some("good"));
        let object = finding(
            "CA102",
            Subject::Object {
                group: "bench.ctrlaudit.io".into(),
                kind: "Widget".into(),
                namespace: Some("ctrlaudit-bench-abc123-good".into()),
                name: "w-0".into(),
            },
        );
        assert_eq!(variant_of(&object, &vs), Some("good"));
        // `good` is a suffix of `not-good`, but not the variant's name.
        let other = finding("CA202", controller(Some("not-good"), None));
        assert_eq!(variant_of(&other, &vs), None);
    }

    #[test]
    fn the_table_puts_findings_and_costs_in_one_column_per_controller() {
        let t = tour(vec![finding(
            "CA202",
            controller(Some("bad-annotation-loop"), None),
        )]);
        let text = render(&t);
        assert!(text.contains("CA202 error"), "{text}");
        assert!(text.contains("nothing"), "the good controller: {text}");
        assert!(text.contains("11/30") && text.contains("30/30"), "{text}");
        assert!(text.contains("90× the writes"), "{text}");
        let html = html(&t, Some("<svg></svg>"));
        assert!(html.contains("<svg></svg>") && html.contains("doc-CA202"));
    }

    #[test]
    fn an_incomplete_run_says_so_once_with_its_cleanup_command() {
        let mut t = tour(vec![]);
        t.bench.complete = false;
        t.bench.incomplete_reason = Some("interrupted".into());
        t.bench.cleanup_command = Some("kubectl ctrlaudit bench --cleanup abc123".into());
        for page in [render(&t), html(&t, None)] {
            assert_eq!(page.matches("INCOMPLETE: interrupted").count(), 1, "{page}");
            assert_eq!(page.matches("--cleanup abc123").count(), 1, "{page}");
        }
    }
}
