//! Scraping a controller's `/metrics` over HTTP, as any external scraper would, and reading the
//! controller-runtime and client-go metrics out of it with prometheus-parse.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use prometheus_parse::{Scrape, Value};

/// The largest scrape accepted; a runaway cardinality variant should not eat the harness's memory.
const MAX_BODY: u64 = 64 * 1024 * 1024;

/// GETs `http://addr/metrics` and returns the body text.
pub async fn fetch(addr: SocketAddr, timeout: Duration) -> Result<String> {
    let limits = crate::fetch::Limits {
        max_bytes: MAX_BODY,
        timeout,
        user_agent: "kubectl-ctrlaudit/bench",
        accept: "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
    };
    crate::fetch::get(&format!("http://{addr}/metrics"), limits)
        .await
        .with_context(|| format!("scraping http://{addr}/metrics"))
}

/// The numbers the bench reads from one scrape. Sums over label sets that are not named (one controller per
/// endpoint).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// `controller_runtime_reconcile_total` by `result`.
    pub reconciles: BTreeMap<String, f64>,
    /// Cumulative `(le, count)` of `controller_runtime_reconcile_time_seconds`, `+Inf` last.
    pub reconcile_buckets: Vec<(f64, f64)>,
    pub reconcile_time_sum: f64,
    pub reconcile_time_count: f64,
    pub depth: f64,
    pub adds: f64,
    pub retries: f64,
    pub conflict_retries: f64,
    pub active_workers: f64,
    pub max_concurrent: f64,
    /// `ctrlaudit_rest_client_requests_total` by (verb, subresource, code); for other controllers, the
    /// client-go `rest_client_requests_total` by (method, "", code).
    pub requests: BTreeMap<(String, String, String), f64>,
    pub watches_open: f64,
    /// Sample lines in the exposition: the series the controller exports.
    pub series: usize,
    pub resident_bytes: Option<f64>,
    pub baseline_resident_bytes: Option<f64>,
    pub tasks: Option<f64>,
    pub baseline_tasks: Option<f64>,
    pub controllers: Option<f64>,
}

fn value(v: &Value) -> Option<f64> {
    match v {
        Value::Counter(x) | Value::Gauge(x) | Value::Untyped(x) => Some(*x),
        _ => None,
    }
}

/// Parses an exposition (Prometheus text or OpenMetrics) into a [`Snapshot`].
pub fn parse(text: &str) -> Result<Snapshot> {
    let series = text
        .lines()
        .filter(|l| {
            let l = l.trim();
            !l.is_empty() && !l.starts_with('#')
        })
        .count();
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .context("parsing the /metrics text")?;
    let mut s = Snapshot {
        series,
        ..Snapshot::default()
    };
    let mut client_go: BTreeMap<(String, String, String), f64> = BTreeMap::new();
    for sample in &scrape.samples {
        let label = |n: &str| sample.labels.get(n).unwrap_or_default().to_string();
        if let Value::Histogram(buckets) = &sample.value {
            if sample.metric == "controller_runtime_reconcile_time_seconds" {
                merge_buckets(&mut s.reconcile_buckets, buckets);
            }
            continue;
        }
        let Some(x) = value(&sample.value) else {
            continue;
        };
        match sample.metric.as_str() {
            "controller_runtime_reconcile_total" => {
                *s.reconciles.entry(label("result")).or_default() += x;
            }
            "controller_runtime_reconcile_time_seconds_sum" => s.reconcile_time_sum += x,
            "controller_runtime_reconcile_time_seconds_count" => s.reconcile_time_count += x,
            "workqueue_depth" => s.depth += x,
            "workqueue_adds_total" => s.adds += x,
            "workqueue_retries_total" => s.retries += x,
            "ctrlaudit_conflict_retries_total" => s.conflict_retries += x,
            "controller_runtime_active_workers" => s.active_workers += x,
            "controller_runtime_max_concurrent_reconciles" => s.max_concurrent += x,
            "ctrlaudit_rest_client_requests_total" => {
                *s.requests
                    .entry((label("verb"), label("subresource"), label("code")))
                    .or_default() += x;
            }
            "rest_client_requests_total" => {
                *client_go
                    .entry((
                        label("method").to_ascii_lowercase(),
                        String::new(),
                        label("code"),
                    ))
                    .or_default() += x;
            }
            "ctrlaudit_watch_connections_open" => s.watches_open += x,
            "process_resident_memory_bytes" => s.resident_bytes = Some(x),
            "ctrlaudit_baseline_resident_memory_bytes" => s.baseline_resident_bytes = Some(x),
            "ctrlaudit_tokio_alive_tasks" => s.tasks = Some(x),
            "ctrlaudit_baseline_tokio_alive_tasks" => s.baseline_tasks = Some(x),
            "ctrlaudit_controllers" => s.controllers = Some(x),
            _ => {}
        }
    }
    // A Go controller has only client-go's counter: use it, by HTTP method.
    if s.requests.is_empty() {
        s.requests = client_go;
    }
    Ok(s)
}

fn merge_buckets(into: &mut Vec<(f64, f64)>, add: &[prometheus_parse::HistogramCount]) {
    for b in add {
        match into.iter_mut().find(|(le, _)| *le == b.less_than) {
            Some(e) => e.1 += b.count,
            None => into.push((b.less_than, b.count)),
        }
    }
    into.sort_by(|a, b| a.0.total_cmp(&b.0));
}

impl Snapshot {
    /// All reconciles, whatever the result.
    pub fn reconciles_total(&self) -> f64 {
        self.reconciles.values().fold(0.0, |a, b| a + b)
    }

    /// Requests with this verb (any subresource and code).
    pub fn verb(&self, verb: &str) -> f64 {
        self.requests
            .iter()
            .filter(|((v, _, _), _)| v == verb)
            .map(|(_, n)| n)
            // fold from +0.0: an empty f64 sum is -0.0, which prints as "-0".
            .fold(0.0, |a, b| a + b)
    }

    /// Writes: create, update, patch, delete, deletecollection (any code).
    pub fn writes(&self) -> f64 {
        self.requests
            .iter()
            .filter(|((v, _, _), _)| is_write(v))
            .map(|(_, n)| n)
            // fold from +0.0: an empty f64 sum is -0.0, which prints as "-0".
            .fold(0.0, |a, b| a + b)
    }

    /// Writes to the status subresource.
    pub fn status_writes(&self) -> f64 {
        self.requests
            .iter()
            .filter(|((v, s, _), _)| is_write(v) && s == "status")
            .map(|(_, n)| n)
            // fold from +0.0: an empty f64 sum is -0.0, which prints as "-0".
            .fold(0.0, |a, b| a + b)
    }

    /// Responses with this HTTP code.
    pub fn code(&self, code: &str) -> f64 {
        self.requests
            .iter()
            .filter(|((_, _, c), _)| c == code)
            .map(|(_, n)| n)
            // fold from +0.0: an empty f64 sum is -0.0, which prints as "-0".
            .fold(0.0, |a, b| a + b)
    }
}

/// Kubernetes write verbs (and their HTTP methods, for client-go counters).
pub fn is_write(verb: &str) -> bool {
    matches!(
        verb,
        "create" | "update" | "patch" | "delete" | "deletecollection" | "post" | "put"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENMETRICS: &str = r#"# HELP controller_runtime_reconcile Total number of reconciliations per controller.
# TYPE controller_runtime_reconcile counter
controller_runtime_reconcile_total{controller="good",result="success"} 190
controller_runtime_reconcile_total{controller="good",result="error"} 3
# HELP controller_runtime_reconcile_time_seconds Length of time per reconciliation per controller.
# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_sum{controller="good"} 4.5
controller_runtime_reconcile_time_seconds_count{controller="good"} 193
controller_runtime_reconcile_time_seconds_bucket{le="0.01",controller="good"} 0
controller_runtime_reconcile_time_seconds_bucket{le="0.025",controller="good"} 150
controller_runtime_reconcile_time_seconds_bucket{le="+Inf",controller="good"} 193
# TYPE workqueue_depth gauge
workqueue_depth{name="good",controller="good"} 7
# TYPE ctrlaudit_rest_client_requests counter
ctrlaudit_rest_client_requests_total{verb="patch",resource="widgets",subresource="status",code="200"} 190
ctrlaudit_rest_client_requests_total{verb="update",resource="widgets",subresource="status",code="409"} 4
ctrlaudit_rest_client_requests_total{verb="watch",resource="widgets",subresource="",code="200"} 1
# EOF
"#;

    #[test]
    fn reads_our_own_exposition() {
        let s = parse(OPENMETRICS).expect("parses");
        assert_eq!(s.reconciles.get("success"), Some(&190.0));
        assert_eq!(s.reconciles_total(), 193.0);
        assert_eq!(s.reconcile_time_count, 193.0);
        assert_eq!(s.reconcile_buckets.len(), 3);
        assert!(
            s.reconcile_buckets
                .last()
                .is_some_and(|b| b.0.is_infinite())
        );
        assert_eq!(s.depth, 7.0);
        assert_eq!(s.writes(), 194.0);
        assert_eq!(s.status_writes(), 194.0);
        assert_eq!(s.code("409"), 4.0);
        assert_eq!(s.verb("watch"), 1.0);
        assert_eq!(s.series, 11);
    }

    #[test]
    fn reads_a_go_controller() {
        let text = "# TYPE rest_client_requests_total counter\n\
                    rest_client_requests_total{code=\"200\",host=\"10.0.0.1:443\",method=\"PUT\"} 40\n\
                    rest_client_requests_total{code=\"409\",host=\"10.0.0.1:443\",method=\"PUT\"} 2\n\
                    rest_client_requests_total{code=\"200\",host=\"10.0.0.1:443\",method=\"GET\"} 9\n\
                    # TYPE workqueue_retries_total counter\n\
                    workqueue_retries_total{controller=\"widget\",name=\"widget\"} 5\n";
        let s = parse(text).expect("parses");
        assert_eq!(s.writes(), 42.0);
        assert_eq!(s.code("409"), 2.0);
        assert_eq!(s.retries, 5.0);
    }

    #[test]
    fn live_variant_exposition_round_trips() {
        // The encoder the variants use, end to end through the parser.
        let mut r = prometheus_client::registry::Registry::default();
        let c: prometheus_client::metrics::counter::Counter = Default::default();
        c.inc_by(3);
        r.register("workqueue_adds", "adds", c);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &r).expect("encodes");
        assert_eq!(parse(&text).expect("parses").adds, 3.0);
    }
}
