//! The bench's report: everything one run measured, as a comparison table or JSON (`-o json`), and as
//! `report.json` and the shareable `report.html` in the output directory.

use serde::Serialize;

use crate::report::document::{Block, Document, Tone};

use super::churn::ChurnCount;
use super::cluster::{CleanupReport, Creation};
use super::probe::Ceiling;
use super::summary::{VariantSummary, compact, requests_text};

/// One run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BenchReport {
    pub run_id: String,
    pub title: String,
    pub complete: bool,
    pub incomplete_reason: Option<String>,
    pub started_at: String,
    pub apiserver: ApiServer,
    pub objects_per_variant: u64,
    pub duration_s: f64,
    /// `--settle`: how long past the window it could wait for every variant to settle (0: not at all).
    pub settle_s: f64,
    /// When the measurement ended, in seconds after the variants started: the window, or later with --settle.
    pub ended_s: f64,
    pub work_ms: f64,
    pub churn_per_s: f64,
    /// What the other writer did (`--churn`).
    pub churn: Option<ChurnCount>,
    pub tenants: Option<u32>,
    pub ceiling: Option<Ceiling>,
    pub creation: Option<Creation>,
    pub variants: Vec<VariantSummary>,
    pub bookkeeping: Option<Bookkeeping>,
    pub speed: Option<Speed>,
    pub output_dir: String,
    pub files: Vec<String>,
    pub cleanup: Option<CleanupReport>,
    /// Set when something may be left behind: the exact command that removes it.
    pub cleanup_command: Option<String>,
    pub notes: Vec<String>,
}

/// The cluster the run measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ApiServer {
    pub url: String,
    pub version: String,
    /// The gates relevant to experiment 4, when the API server's /metrics was readable.
    pub feature_gates: std::collections::BTreeMap<String, bool>,
}

/// What the harness's own scraping and bookkeeping cost.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Bookkeeping {
    pub cpu_s: f64,
    pub wall_s: f64,
    /// CPU as a share of one core, in percent.
    pub cpu_percent_of_one_core: f64,
    /// CPU of the whole process (harness and in-process variants) during the window.
    pub process_cpu_s: Option<f64>,
    pub scrapes: u64,
}

/// The creation-speed comparison (`--experiment speed`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Speed {
    pub objects: u64,
    pub harness: Method,
    pub sequential_in_process: Method,
    pub process_per_object: Method,
    /// The seed's loop itself, when a kubectl binary was available.
    pub kubectl_apply: Option<Method>,
    /// harness objects/s ÷ the slowest sequential loop measured (kubectl apply when available).
    pub ratio: f64,
    /// Which loop the ratio divides by.
    pub ratio_against: String,
}

/// One way of creating the objects.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Method {
    pub description: String,
    pub objects: u64,
    pub seconds: f64,
    pub per_second: f64,
}

fn ms(x: Option<f64>) -> String {
    match x {
        Some(v) if v >= 1000.0 => format!("{:.2}s", v / 1000.0),
        Some(v) => format!("{v:.0}ms"),
        None => "—".into(),
    }
}

fn table() -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(160);
    t
}

impl BenchReport {
    /// The human-readable report.
    pub fn render_table(&self) -> String {
        self.document(None).text()
    }

    /// The self-contained HTML page (`report.html`): the same blocks as the terminal report, the chart inline
    /// and the docs of the rules the variants isolate.
    pub fn render_html(&self, chart_svg: Option<&str>) -> String {
        let rules: Vec<&'static crate::rules::Rule> = self
            .variants
            .iter()
            .filter_map(|v| v.rule.as_deref().and_then(crate::rules::find))
            .collect();
        crate::report::html::page(&self.document(chart_svg), &[], &[], &rules)
    }

    /// The report's layout, shared by the text and the HTML renderings (and demo.html).
    pub fn document(&self, chart_svg: Option<&str>) -> Document {
        let mut d = Document::new(format!(
            "kubectl ctrlaudit bench — {} (run {})",
            self.title, self.run_id
        ));
        d.line(
            Tone::Plain,
            format!(
                "API server {} {}; {} objects per variant, window {:.0}s{}, work {:.0}ms{}",
                self.apiserver.url,
                self.apiserver.version,
                self.objects_per_variant,
                self.duration_s,
                if self.settle_s > 0.0 {
                    format!(
                        " (+{:.1}s to settle)",
                        (self.ended_s - self.duration_s).max(0.0)
                    )
                } else {
                    String::new()
                },
                self.work_ms,
                if self.churn_per_s > 0.0 {
                    format!(", churn {}/s per namespace", self.churn_per_s)
                } else {
                    String::new()
                }
            ),
        );
        if !self.apiserver.feature_gates.is_empty() {
            let gates: Vec<String> = self
                .apiserver
                .feature_gates
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            d.line(Tone::Plain, format!("feature gates: {}", gates.join(", ")));
        }
        if let Some(c) = &self.ceiling {
            d.line(
                Tone::Plain,
                format!(
                    "write ceiling: {:.0} writes/s ({} concurrent status patches for {:.1}s; p50 {:.0}ms, p99 {:.0}ms)",
                    c.per_second, c.concurrency, c.seconds, c.p50_ms, c.p99_ms
                ),
            );
        }
        if let Some(c) = &self.creation {
            d.line(
                Tone::Plain,
                format!(
                    "created {} Widgets in {:.2}s: {:.0} objects/s ({} in flight)",
                    c.objects, c.seconds, c.per_second, c.parallelism
                ),
            );
        }
        if !self.variants.is_empty() {
            d.table(self.variants_table());
        }
        if self.variants.iter().any(|v| v.tenants.is_some()) {
            d.table(self.tenants_table());
        }
        if let Some(s) = &self.speed {
            d.table(speed_table(s));
        }
        if let Some(svg) = chart_svg {
            d.blocks.push(Block::Chart {
                caption: "Ready objects and work-queue depth over the window, one line per variant"
                    .into(),
                svg: svg.to_string(),
            });
        }
        if let Some(b) = &self.bookkeeping {
            d.line(
                Tone::Note,
                format!(
                    "harness bookkeeping (scrapes, Ready watch, CSV, progress): {:.2}s CPU in {:.0}s = {:.1}% of one core",
                    b.cpu_s, b.wall_s, b.cpu_percent_of_one_core
                ),
            );
        }
        if !self.files.is_empty() {
            d.line(
                Tone::Note,
                format!("files: {} ({})", self.output_dir, self.files.join(", ")),
            );
        }
        for n in &self.notes {
            d.line(Tone::Note, format!("note: {n}"));
        }
        if let Some(c) = &self.cleanup {
            if !c.terminating.is_empty() {
                d.line(
                    Tone::Note,
                    format!(
                        "note: {} namespaces are still Terminating (no namespace controller? testenv has none): {}",
                        c.terminating.len(),
                        c.terminating.join(", ")
                    ),
                );
            }
            for e in &c.errors {
                d.line(Tone::Alert, format!("cleanup: {e}"));
            }
        }
        self.push_outcome(&mut d);
        d
    }

    /// The report's last lines: whether the run is incomplete, and the command that removes what is left.
    pub fn push_outcome(&self, d: &mut Document) {
        if !self.complete {
            d.line(
                Tone::Alert,
                format!(
                    "INCOMPLETE: {}",
                    self.incomplete_reason.as_deref().unwrap_or("stopped early")
                ),
            );
        }
        if let Some(cmd) = &self.cleanup_command {
            d.line(Tone::Command, format!("to remove what is left: {cmd}"));
        }
    }

    fn variants_table(&self) -> comfy_table::Table {
        let mut t = table();
        t.set_header([
            "variant",
            "rule",
            "workers",
            "Ready",
            "all Ready at",
            "settled",
            "reconciles ok/err/requeue",
            "API requests (verb/subresource)",
            "409",
            "retries",
            "p50 / p99",
            "writes/s avg / peak",
            "% ceiling",
            "series",
        ]);
        for v in &self.variants {
            let r = |k: &str| v.reconciles.get(k).copied().unwrap_or(0.0);
            let settled = if v.settled {
                "yes".to_string()
            } else {
                format!("no ({}/s)", rate(v.reconciles_per_s_at_end))
            };
            t.add_row([
                v.name.clone(),
                v.rule.clone().unwrap_or_default(),
                v.workers.clone(),
                format!("{}/{}", v.ready, v.expected),
                v.converged_s.map_or("never".into(), |s| format!("{s:.1}s")),
                settled,
                format!(
                    "{}/{}/{}",
                    compact(r("success")),
                    compact(r("error")),
                    compact(r("requeue_after") + r("requeue"))
                ),
                requests_text(&v.requests),
                compact(v.conflicts_409),
                compact(v.retries + v.conflict_retries),
                format!("{} / {}", ms(v.latency_p50_ms), ms(v.latency_p99_ms)),
                format!("{:.1} / {:.0}", v.writes_per_s_avg, v.writes_per_s_peak),
                v.ceiling_share
                    .map_or("—".into(), |s| format!("{:.0}%", s * 100.0)),
                v.series.to_string(),
            ]);
        }
        t
    }

    fn tenants_table(&self) -> comfy_table::Table {
        let mut t = table();
        t.set_header([
            "design",
            "tenants",
            "controllers",
            "RSS before → after",
            "memory per tenant",
            "tokio tasks before → after",
            "tasks per tenant",
            "watch connections",
        ]);
        for v in &self.variants {
            let Some(f) = &v.tenants else { continue };
            t.add_row([
                v.name.clone(),
                f.tenants.to_string(),
                format!("{:.0}", f.controllers),
                format!("{} → {}", mib(f.baseline_bytes), mib(f.resident_bytes)),
                kib(f.bytes_per_tenant),
                format!("{:.0} → {:.0}", f.baseline_tasks, f.tasks),
                format!("{:.1}", f.tasks_per_tenant),
                format!("{:.0}", f.watches_open),
            ]);
        }
        t
    }
}

fn rate(r: f64) -> String {
    if r < 10.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.0}")
    }
}

fn mib(b: f64) -> String {
    format!("{:.1} MiB", b / (1024.0 * 1024.0))
}

fn kib(b: f64) -> String {
    if b.abs() >= 1024.0 * 1024.0 {
        mib(b)
    } else {
        format!("{:.0} KiB", b / 1024.0)
    }
}

fn speed_table(s: &Speed) -> comfy_table::Table {
    let mut t = table();
    t.set_header(["creating Widgets", "objects", "seconds", "objects/s"]);
    let rows = [
        Some(&s.harness),
        Some(&s.sequential_in_process),
        Some(&s.process_per_object),
        s.kubectl_apply.as_ref(),
    ];
    for m in rows.into_iter().flatten() {
        if m.objects == 0 {
            continue;
        }
        t.add_row([
            m.description.clone(),
            m.objects.to_string(),
            format!("{:.2}", m.seconds),
            format!("{:.1}", m.per_second),
        ]);
    }
    t.add_row([
        format!("harness ÷ {}: {:.1}×", s.ratio_against, s.ratio),
        String::new(),
        String::new(),
        String::new(),
    ]);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_an_incomplete_run_with_its_cleanup_command() {
        let r = BenchReport {
            run_id: "abc123".into(),
            title: "experiment 1".into(),
            complete: false,
            incomplete_reason: Some("interrupted at 12s".into()),
            cleanup_command: Some("kubectl ctrlaudit bench --cleanup abc123".into()),
            variants: vec![VariantSummary {
                name: "good".into(),
                expected: 10,
                ready: 10,
                converged_s: Some(2.0),
                settled: true,
                ..VariantSummary::default()
            }],
            ..BenchReport::default()
        };
        let text = r.render_table();
        assert!(text.contains("INCOMPLETE: interrupted at 12s"));
        assert!(text.contains("--cleanup abc123"));
        assert!(text.contains("10/10"));
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(json["complete"], false);
        assert_eq!(json["variants"][0]["ready"], 10);
    }
}
