//! Parses Prometheus text (prometheus-parse) into a [`Scrape`]: the samples the detectors read, and series per
//! family for the cardinality rules. No I/O: `collect` fetches the text.

use crate::config::MetricNames;
use crate::live::snapshot::{
    FamilyCardinality, LabelCardinality, Labels, MAX_LABEL_VALUES, MetricSample, Scrape, SourceKind,
};
use std::collections::{BTreeMap, BTreeSet};

/// Why a `/metrics` body was not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the body is empty")]
    Empty,
    #[error("no Prometheus samples in {lines} non-comment lines (not the metrics endpoint?)")]
    Garbage { lines: usize },
}

/// The API server families the detectors read; everything else is dropped at the door.
const APISERVER_FAMILIES: &[&str] = &[
    "apiserver_request_total",
    "apiserver_request_duration_seconds_sum",
    "apiserver_request_duration_seconds_count",
    "etcd_request_duration_seconds_sum",
    "etcd_request_duration_seconds_count",
    "apiserver_storage_objects",
    "apiserver_resource_objects",
    "apiserver_flowcontrol_rejected_requests_total",
];

/// Labels of the API server's request metrics that the detectors never split by; summed away to keep
/// snapshots small.
const APISERVER_DROPPED_LABELS: &[&str] = &["component", "dry_run", "version", "scope"];

fn stem(name: &str) -> &str {
    ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name)
}

/// The line (a sample or its `# HELP`/`# TYPE`) belongs to one of `families`, a histogram's
/// `_bucket`/`_sum`/`_count` series counting as its family.
fn in_families(line: &str, families: &[&str]) -> bool {
    let l = line.trim_start();
    let name = match l.strip_prefix('#') {
        Some(c) => c.split_whitespace().nth(1).unwrap_or(""),
        None => l.split(['{', ' ', '\t']).next().unwrap_or(""),
    };
    !name.is_empty() && families.iter().any(|f| stem(f) == stem(name))
}

/// A line of the API server's `/metrics` that [`parse`] reads: the collector keeps only these.
pub fn apiserver_line_wanted(line: &str) -> bool {
    in_families(line, APISERVER_FAMILIES)
}

/// The lines of `text` that belong to one of `families`.
fn only_families(text: &str, families: &[&str]) -> String {
    let mut out = String::new();
    for line in text.lines().filter(|l| in_families(l, families)) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `text` cut after its first `max` sample lines (comments kept up to there), and how many sample lines were
/// left out. A controller's `/metrics` of more series than that is a cardinality problem on its own; reading them
/// all would cost the tool more than the endpoint is worth.
pub fn cap_series(text: &str, max: usize) -> (&str, usize) {
    let mut samples = 0usize;
    let mut offset = 0usize;
    for line in text.split_inclusive('\n') {
        let l = line.trim();
        if !l.is_empty() && !l.starts_with('#') {
            if samples == max {
                let left = text[offset..]
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .count();
                return (&text[..offset], left);
            }
            samples += 1;
        }
        offset += line.len();
    }
    (text, 0)
}

/// Per label name, the distinct values a family's series give it (shared with the samples).
type ValuesByLabel = BTreeMap<String, BTreeSet<std::sync::Arc<str>>>;

/// Parses one scrape taken at `t_ms`.
pub fn parse(
    text: &str,
    t_ms: i64,
    kind: SourceKind,
    names: &MetricNames,
) -> Result<Scrape, ParseError> {
    let sample_lines = text
        .lines()
        .filter(|l| {
            let l = l.trim();
            !l.is_empty() && !l.starts_with('#')
        })
        .count();
    if text.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    // The API server exposes thousands of series, of which a few families are read: parse only their lines (a
    // real cluster's /metrics parsed whole costs megabytes). A text without any of them is parsed whole, so that
    // garbage is still told from a server that lacks the families.
    let kept;
    let text = match kind {
        SourceKind::Apiserver => {
            kept = only_families(text, APISERVER_FAMILIES);
            if kept.is_empty() { text } else { kept.as_str() }
        }
        SourceKind::Controller => text,
    };
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let parsed = prometheus_parse::Scrape::parse(lines).map_err(|_| ParseError::Garbage {
        lines: sample_lines,
    })?;
    if parsed.samples.is_empty() {
        return Err(ParseError::Garbage {
            lines: sample_lines,
        });
    }
    let histogram_bases: BTreeSet<String> = parsed
        .samples
        .iter()
        .filter(|s| {
            matches!(
                s.value,
                prometheus_parse::Value::Histogram(_) | prometheus_parse::Value::Summary(_)
            )
        })
        .map(|s| s.metric.clone())
        .collect();

    let wanted: BTreeSet<String> = match kind {
        SourceKind::Apiserver => APISERVER_FAMILIES.iter().map(|s| s.to_string()).collect(),
        SourceKind::Controller => [
            names.reconcile_total.clone(),
            names.reconcile_errors_total.clone(),
            format!("{}_sum", names.reconcile_time_seconds),
            format!("{}_count", names.reconcile_time_seconds),
            names.max_concurrent_reconciles.clone(),
            names.active_workers.clone(),
            names.workqueue_adds_total.clone(),
            names.workqueue_depth.clone(),
            names.rest_client_requests_total.clone(),
        ]
        .into_iter()
        .collect(),
    };

    // Label names and values are shared: a family with a label per object repeats every other label (and the
    // family's name) in each of its tens of thousands of samples.
    let mut interned: std::collections::HashSet<std::sync::Arc<str>> = Default::default();
    let mut samples: BTreeMap<(String, Labels), f64> = BTreeMap::new();
    let mut families: BTreeMap<String, (u64, ValuesByLabel)> = BTreeMap::new();
    let family_of = |name: &str| -> String {
        for suffix in ["_sum", "_count", "_bucket"] {
            if let Some(base) = name.strip_suffix(suffix)
                && histogram_bases.contains(base)
            {
                return base.to_string();
            }
        }
        name.to_string()
    };
    // Consumed one by one, so that what the parser built is freed while the samples kept are built.
    for s in parsed.samples {
        let value = match &s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => Some(*v),
            _ => None,
        };
        let labels = Labels::interned(
            s.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            &mut interned,
        );
        if kind == SourceKind::Controller {
            let family = family_of(&s.metric);
            // _sum and _count of a histogram are the same series as its buckets.
            let counted = !(s.metric.ends_with("_sum") || s.metric.ends_with("_count"))
                || !histogram_bases.contains(family.as_str());
            let fam = families.entry(family).or_default();
            if counted {
                fam.0 += 1;
            }
            for (k, v) in labels.shared() {
                let set = fam.1.entry(k.to_string()).or_default();
                if set.len() < 100_000 {
                    set.insert(v.clone());
                }
            }
        }
        let (Some(value), true) = (value, wanted.contains(&s.metric)) else {
            continue;
        };
        if !value.is_finite() {
            continue;
        }
        let mut labels = labels;
        if kind == SourceKind::Apiserver {
            labels.retain(|k| !APISERVER_DROPPED_LABELS.contains(&k));
        }
        *samples.entry((s.metric, labels)).or_insert(0.0) += value;
    }
    Ok(Scrape {
        t_ms,
        samples: samples
            .into_iter()
            .map(|((name, labels), value)| MetricSample {
                name,
                labels,
                value,
            })
            .collect(),
        families: families
            .into_iter()
            .map(|(family, (series, labels))| FamilyCardinality {
                family,
                series,
                labels: labels
                    .into_iter()
                    .map(|(name, values)| LabelCardinality {
                        name,
                        distinct: values.len() as u64,
                        values: values
                            .into_iter()
                            .take(MAX_LABEL_VALUES)
                            .map(|v| v.to_string())
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn apiserver_text_is_cut_to_the_read_families_before_parsing() {
        let text = "# HELP apiserver_request_total Counter of requests.\n\
            # TYPE apiserver_request_total counter\n\
            apiserver_request_total{verb=\"LIST\",resource=\"widgets\",code=\"200\"} 3\n\
            # TYPE apiserver_request_duration_seconds histogram\n\
            apiserver_request_duration_seconds_bucket{verb=\"LIST\",le=\"+Inf\"} 3\n\
            apiserver_request_duration_seconds_sum{verb=\"LIST\"} 0.3\n\
            apiserver_request_duration_seconds_count{verb=\"LIST\"} 3\n\
            # TYPE go_goroutines gauge\n\
            go_goroutines 120\n\
            apiserver_request_total_other 1\n";
        let kept = only_families(text, APISERVER_FAMILIES);
        assert!(kept.contains("# TYPE apiserver_request_total counter"));
        assert!(kept.contains("apiserver_request_duration_seconds_count{"));
        assert!(kept.contains("apiserver_request_duration_seconds_bucket{"));
        assert!(!kept.contains("go_goroutines"), "{kept}");
        assert!(!kept.contains("_other"), "{kept}");
        let s = parse(text, 5, SourceKind::Apiserver, &MetricNames::default()).unwrap();
        let names: BTreeSet<&str> = s.samples.iter().map(|x| x.name.as_str()).collect();
        assert!(names.contains("apiserver_request_total"), "{names:?}");
        assert!(
            names.contains("apiserver_request_duration_seconds_sum"),
            "{names:?}"
        );
        // A page of garbage is still garbage, not an empty scrape.
        assert!(
            parse(
                "<html>hi</html>\n",
                5,
                SourceKind::Apiserver,
                &MetricNames::default()
            )
            .is_err()
        );
    }

    #[test]
    fn controller_families_and_cardinality() {
        let text = "# TYPE controller_runtime_reconcile_total counter\n\
            controller_runtime_reconcile_total{controller=\"w\",result=\"success\"} 10\n\
            controller_runtime_reconcile_total{controller=\"w\",result=\"requeue_after\"} 90\n\
            # TYPE widget_reconcile_seconds histogram\n\
            widget_reconcile_seconds_bucket{widget=\"a\",le=\"1\"} 1\n\
            widget_reconcile_seconds_bucket{widget=\"a\",le=\"+Inf\"} 1\n\
            widget_reconcile_seconds_sum{widget=\"a\"} 0.5\n\
            widget_reconcile_seconds_count{widget=\"a\"} 1\n\
            widget_reconcile_seconds_bucket{widget=\"b\",le=\"1\"} 1\n\
            widget_reconcile_seconds_bucket{widget=\"b\",le=\"+Inf\"} 1\n\
            widget_reconcile_seconds_sum{widget=\"b\"} 0.5\n\
            widget_reconcile_seconds_count{widget=\"b\"} 1\n";
        let s = parse(text, 5, SourceKind::Controller, &MetricNames::default()).unwrap();
        assert_eq!(s.samples.len(), 2);
        let fam = s
            .families
            .iter()
            .find(|f| f.family == "widget_reconcile_seconds")
            .unwrap();
        assert_eq!(fam.series, 2, "{fam:?}");
        let l = fam.labels.iter().find(|l| l.name == "widget").unwrap();
        assert_eq!(l.values, vec!["a", "b"]);
    }

    #[test]
    fn apiserver_labels_are_summed_away() {
        let text = "apiserver_request_total{code=\"409\",component=\"apiserver\",dry_run=\"\",group=\"g\",resource=\"widgets\",scope=\"resource\",subresource=\"\",verb=\"PUT\",version=\"v1\"} 3\n\
            apiserver_request_total{code=\"409\",component=\"apiserver\",dry_run=\"All\",group=\"g\",resource=\"widgets\",scope=\"resource\",subresource=\"\",verb=\"PUT\",version=\"v1\"} 1\n\
            go_goroutines 100\n";
        let s = parse(text, 5, SourceKind::Apiserver, &MetricNames::default()).unwrap();
        assert_eq!(s.samples.len(), 1);
        assert_eq!(s.samples[0].value, 4.0);
        assert!(s.families.is_empty());
    }

    #[test]
    fn series_are_capped_at_a_line() {
        let text = "# TYPE a counter\na 1\na{x=\"1\"} 2\n\n# TYPE b gauge\nb 3\nb{y=\"2\"} 4";
        assert_eq!(cap_series(text, 10), (text, 0));
        let (cut, left) = cap_series(text, 2);
        assert_eq!(
            cut,
            "# TYPE a counter\na 1\na{x=\"1\"} 2\n\n# TYPE b gauge\n"
        );
        assert_eq!(left, 2);
        assert_eq!(cap_series(text, 0).1, 4);
    }

    #[test]
    fn garbage_and_empty_are_errors() {
        let names = MetricNames::default();
        assert_eq!(
            parse("  \n", 0, SourceKind::Controller, &names),
            Err(ParseError::Empty)
        );
        assert!(matches!(
            parse(
                "<html><body>404</body></html>\n",
                0,
                SourceKind::Controller,
                &names
            ),
            Err(ParseError::Garbage { .. })
        ));
    }
}
