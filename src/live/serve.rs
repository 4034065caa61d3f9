//! `live --serve ADDR`: one window after another until SIGTERM or Ctrl-C, the latest window's findings exposed
//! as Prometheus metrics at `http://ADDR/metrics` (and `/healthz`), for an in-cluster Deployment that alerts.
//!
//! Each window is a whole `live` run (collect, detect, policy): nothing carries over, so a controller that was
//! fixed stops being reported one window later. The exposition is rendered from plain data ([`WindowReport`]),
//! so what a scraper sees is unit-tested without a cluster.

use crate::finding::{Finding, Subject};
use crate::live::snapshot::Snapshot;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

/// Distinct (rule, severity, controller, kind) series at most; the rest are summed into `controller="(other)"`.
/// A tool that reports unbounded metric labels (CA402) must not have them itself.
pub const MAX_SERIES: usize = 200;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FindingLabels {
    rule: String,
    severity: String,
    /// The field manager, user or user agent the finding names; empty when it names a resource type.
    controller: String,
    /// `Kind.group` of the resource type the finding is about; empty when it names a controller.
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    rule: String,
}

/// What one window produced, reduced to what the metrics show.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowReport {
    pub end_ms: i64,
    pub secs: f64,
    /// Anything at all could be observed (a watch, a scrape, an audit log).
    pub observed: bool,
    pub objects: u64,
    pub notes: u64,
    /// (rule, severity, controller, kind) → findings.
    pub findings: Vec<(String, String, String, String)>,
}

impl WindowReport {
    pub fn new(snapshot: &Snapshot, findings: &[Finding]) -> Self {
        Self {
            end_ms: snapshot.window.end_ms,
            secs: snapshot.window.secs(),
            observed: snapshot.has_evidence(),
            objects: snapshot.objects.len() as u64,
            notes: snapshot.notes.len() as u64,
            findings: findings
                .iter()
                .map(|f| {
                    let (controller, kind) = match &f.subject {
                        Subject::Controller {
                            manager,
                            user,
                            user_agent,
                            ..
                        } => (
                            manager
                                .clone()
                                .or_else(|| user.clone())
                                .or_else(|| user_agent.clone())
                                .unwrap_or_default(),
                            // The kind a controller's finding is about: that of the objects it is seen on.
                            f.objects
                                .first()
                                .map(|o| crate::finding::group_kind(&o.group, &o.kind))
                                .unwrap_or_default(),
                        ),
                        s => (String::new(), s.type_label().unwrap_or_default()),
                    };
                    (
                        f.code.clone(),
                        f.severity.as_str().to_string(),
                        controller,
                        kind,
                    )
                })
                .collect(),
        }
    }
}

/// The metrics of a serving process: updated after each window, rendered on each scrape.
#[derive(Debug, Default)]
pub struct ServeMetrics {
    registry: Registry,
    findings: Family<FindingLabels, Gauge>,
    rules: Family<RuleLabels, Gauge>,
    windows: Counter,
    unobserved: Counter,
    last_end: Gauge<f64, AtomicU64>,
    last_secs: Gauge<f64, AtomicU64>,
    objects: Gauge,
    notes: Gauge,
    dropped: Gauge,
}

impl ServeMetrics {
    pub fn new() -> Self {
        let mut m = Self::default();
        let r = &mut m.registry;
        r.register(
            "ctrlaudit_findings",
            "Findings of the last window, by rule, severity, the controller named and the resource type",
            m.findings.clone(),
        );
        r.register(
            "ctrlaudit_rule_findings",
            "Findings of the last window by rule (every rule has a series, 0 when quiet)",
            m.rules.clone(),
        );
        r.register(
            "ctrlaudit_windows",
            "Observation windows completed",
            m.windows.clone(),
        );
        r.register(
            "ctrlaudit_windows_unobserved",
            "Windows in which nothing could be observed (cluster unreachable, everything forbidden)",
            m.unobserved.clone(),
        );
        r.register(
            "ctrlaudit_last_window_end_timestamp_seconds",
            "When the last window ended (alert when it is stale)",
            m.last_end.clone(),
        );
        r.register(
            "ctrlaudit_last_window_duration_seconds",
            "How long the last window watched",
            m.last_secs.clone(),
        );
        r.register(
            "ctrlaudit_last_window_objects",
            "Objects watched in the last window",
            m.objects.clone(),
        );
        r.register(
            "ctrlaudit_last_window_notes",
            "Notes of the last window: sources that could not be observed",
            m.notes.clone(),
        );
        r.register(
            "ctrlaudit_findings_folded",
            "Findings of the last window folded into controller=\"(other)\" to keep series bounded",
            m.dropped.clone(),
        );
        for rule in crate::rules::RULES
            .iter()
            .filter(|r| r.has_lens(crate::finding::Lens::Live))
        {
            m.rules
                .get_or_create(&RuleLabels {
                    rule: rule.code.to_string(),
                })
                .set(0);
        }
        m
    }

    /// Replaces the last window's figures with `w`'s.
    pub fn record(&self, w: &WindowReport) {
        self.windows.inc();
        if !w.observed {
            self.unobserved.inc();
        }
        self.last_end.set(w.end_ms as f64 / 1000.0);
        self.last_secs.set(w.secs);
        self.objects.set(w.objects as i64);
        self.notes.set(w.notes as i64);
        self.findings.clear();
        let mut series = 0usize;
        let mut folded = 0i64;
        for (rule, severity, controller, kind) in &w.findings {
            let mut labels = FindingLabels {
                rule: rule.clone(),
                severity: severity.clone(),
                controller: controller.clone(),
                kind: kind.clone(),
            };
            let exists = self.findings.get(&labels).is_some();
            if !exists && series >= MAX_SERIES {
                labels.controller = "(other)".into();
                labels.kind = String::new();
                folded += 1;
            } else if !exists {
                series += 1;
            }
            self.findings.get_or_create(&labels).inc();
        }
        self.dropped.set(folded);
        for rule in crate::rules::RULES
            .iter()
            .filter(|r| r.has_lens(crate::finding::Lens::Live))
        {
            let n = w.findings.iter().filter(|f| f.0 == rule.code).count();
            self.rules
                .get_or_create(&RuleLabels {
                    rule: rule.code.to_string(),
                })
                .set(n as i64);
        }
    }

    /// The OpenMetrics text of everything.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; an error would only drop this scrape's text.
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn report(findings: &[(&str, &str, &str, &str)]) -> WindowReport {
        WindowReport {
            end_ms: 1_700_000_000_000,
            secs: 60.0,
            observed: true,
            objects: 12,
            notes: 1,
            findings: findings
                .iter()
                .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string()))
                .collect(),
        }
    }

    fn parse(text: &str) -> prometheus_parse::Scrape {
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap()
    }

    fn value(s: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        s.samples
            .iter()
            .find(|x| x.metric == name && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
            .map(|x| match x.value {
                prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            })
    }

    /// `deploy/monitoring.yaml`'s alerts name only series `--serve` exports (one that names another would never
    /// fire, or fire for ever under `absent`), wait with `for`, and say each label in words.
    #[test]
    fn the_shipped_alerts_name_what_serve_exports() {
        let m = ServeMetrics::new();
        m.record(&report(&[(
            "CA202",
            "error",
            "looper",
            "Widget.example.com",
        )]));
        let exported: Vec<String> =
            prometheus_parse::Scrape::parse(m.render().lines().map(|l| Ok(l.to_string())))
                .unwrap()
                .samples
                .into_iter()
                .map(|s| s.metric)
                .collect();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/monitoring.yaml");
        let text = std::fs::read_to_string(path).unwrap();
        let mut alerts = 0;
        for doc in yaml_serde::Deserializer::from_str(&text) {
            let v: yaml_serde::Value = serde::Deserialize::deserialize(doc).unwrap();
            let groups = v["spec"]["groups"]
                .as_sequence()
                .cloned()
                .unwrap_or_default();
            for rule in groups
                .iter()
                .flat_map(|g| g["rules"].as_sequence().cloned().unwrap_or_default())
            {
                let name = rule["alert"].as_str().unwrap().to_string();
                alerts += 1;
                assert!(rule["for"].as_str().is_some(), "{name} has no `for`");
                let expr = rule["expr"].as_str().unwrap();
                let named: Vec<&str> = expr
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| w.starts_with("ctrlaudit_"))
                    .collect();
                assert!(!named.is_empty(), "{name}: {expr}");
                for metric in named {
                    assert!(
                        exported.iter().any(|e| e == metric),
                        "{name} names {metric}, which --serve does not export ({exported:?})"
                    );
                }
                for (key, value) in rule["annotations"].as_mapping().unwrap() {
                    let text = value.as_str().unwrap();
                    assert!(
                        !text.contains("}}{{"),
                        "{name} {key:?} glues two labels: {text}"
                    );
                }
            }
        }
        assert_eq!(alerts, 2, "ControllerAntiPattern and CtrlauditNotObserving");
    }

    /// A controller's finding is labelled with the kind of the objects it is seen on: `ctrlaudit_findings` on
    /// the annotation loop and the write ceiling (recorded on testenv) names `Widget.bench.ctrlaudit.io`.
    #[test]
    fn a_controllers_finding_carries_the_kind_of_its_objects() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/live");
        for name in ["seed-annotation-loop", "write-ceiling-names-the-writer"] {
            let snap = crate::live::record::read(&root.join(name)).unwrap();
            let findings =
                crate::live::detectors::run_all(&snap, &crate::config::Config::default());
            let w = WindowReport::new(&snap, &findings);
            let controllers: Vec<_> = w.findings.iter().filter(|f| !f.2.is_empty()).collect();
            assert!(!controllers.is_empty(), "{name}");
            for (rule, _, controller, kind) in controllers {
                let seen_on_objects = findings
                    .iter()
                    .any(|f| f.code == *rule && !f.objects.is_empty());
                if seen_on_objects {
                    assert_eq!(
                        kind, "Widget.bench.ctrlaudit.io",
                        "{name}: {rule} {controller}"
                    );
                }
            }
            assert!(
                w.findings
                    .iter()
                    .any(|f| f.0 == "CA403" && f.3 == "Widget.bench.ctrlaudit.io")
                    || name != "write-ceiling-names-the-writer",
                "{name}: {:?}",
                w.findings
            );
        }
    }

    #[test]
    fn a_window_replaces_the_last_and_every_live_rule_has_a_series() {
        let m = ServeMetrics::new();
        m.record(&report(&[
            ("CA202", "error", "looper", ""),
            ("CA202", "error", "looper", ""),
            ("CA206", "error", "", "Deployment.apps"),
        ]));
        let s = parse(&m.render());
        assert_eq!(
            value(
                &s,
                "ctrlaudit_findings",
                &[("rule", "CA202"), ("controller", "looper")]
            ),
            Some(2.0)
        );
        assert_eq!(
            value(
                &s,
                "ctrlaudit_findings",
                &[("rule", "CA206"), ("kind", "Deployment.apps")]
            ),
            Some(1.0)
        );
        assert_eq!(
            value(&s, "ctrlaudit_rule_findings", &[("rule", "CA101")]),
            Some(0.0)
        );
        assert_eq!(value(&s, "ctrlaudit_windows_total", &[]), Some(1.0));
        // The controller was fixed: the next window has nothing, and its series go.
        m.record(&report(&[]));
        let s = parse(&m.render());
        assert_eq!(value(&s, "ctrlaudit_findings", &[("rule", "CA202")]), None);
        assert_eq!(
            value(&s, "ctrlaudit_rule_findings", &[("rule", "CA202")]),
            Some(0.0)
        );
        assert_eq!(value(&s, "ctrlaudit_windows_total", &[]), Some(2.0));
    }

    #[test]
    fn series_stay_bounded_however_many_controllers() {
        let m = ServeMetrics::new();
        let names: Vec<String> = (0..MAX_SERIES + 50)
            .map(|i| format!("tenant-{i}"))
            .collect();
        let many: Vec<(&str, &str, &str, &str)> = names
            .iter()
            .map(|n| ("CA401", "warning", n.as_str(), ""))
            .collect();
        m.record(&report(&many));
        let s = parse(&m.render());
        let series = s
            .samples
            .iter()
            .filter(|x| x.metric == "ctrlaudit_findings")
            .count();
        assert_eq!(series, MAX_SERIES + 1);
        assert_eq!(
            value(&s, "ctrlaudit_findings", &[("controller", "(other)")]),
            Some(50.0)
        );
        assert_eq!(value(&s, "ctrlaudit_findings_folded", &[]), Some(50.0));
    }
}
