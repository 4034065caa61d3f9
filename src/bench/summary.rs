//! From per-second rows to the per-variant figures of the comparison table (pure functions).

use std::collections::BTreeMap;

use serde::Serialize;

use super::csv::Row;
use super::scrape::Snapshot;
use super::stats::histogram_quantile;

/// How long without a reconcile counts as settled, at the end of the window.
pub const SETTLE_WINDOW_S: f64 = 5.0;

/// One variant's figures over the window.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct VariantSummary {
    pub name: String,
    pub rule: Option<String>,
    /// `5`, `1`, `unbounded`, `5 per controller`.
    pub workers: String,
    pub expected: u64,
    /// Ready at the end of the window.
    pub ready: u64,
    /// Seconds from start until every object was Ready for the first time.
    pub converged_s: Option<f64>,
    /// No reconcile during the last [`SETTLE_WINDOW_S`] seconds and nothing queued.
    pub settled: bool,
    pub reconciles: BTreeMap<String, f64>,
    pub reconciles_total: f64,
    /// Reconciles per second over the last [`SETTLE_WINDOW_S`] seconds (0 when settled).
    pub reconciles_per_s_at_end: f64,
    /// Requests by `verb` or `verb/subresource` (all codes).
    pub requests: BTreeMap<String, f64>,
    pub writes: f64,
    pub conflicts_409: f64,
    /// Delayed re-adds after errors (`workqueue_retries_total`).
    pub retries: f64,
    /// Writes repeated inside reconcile after a 409.
    pub conflict_retries: f64,
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub writes_per_s_avg: f64,
    pub writes_per_s_peak: f64,
    /// Peak writes/s as a share of the API server's measured ceiling.
    pub ceiling_share: Option<f64>,
    pub max_active_workers: f64,
    pub max_depth: f64,
    pub final_depth: f64,
    pub series: usize,
    pub scrape_errors: u64,
    pub tenants: Option<TenantFigures>,
}

/// Memory, tasks and watches of a tenant design (its own process).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct TenantFigures {
    pub tenants: u64,
    pub controllers: f64,
    pub resident_bytes: f64,
    pub baseline_bytes: f64,
    pub bytes_per_tenant: f64,
    pub tasks: f64,
    pub baseline_tasks: f64,
    pub tasks_per_tenant: f64,
    pub watches_open: f64,
}

/// Inputs that are not in the rows.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    pub name: String,
    pub rule: Option<String>,
    pub workers: String,
    pub expected: u64,
    pub tenants: Option<u64>,
    pub ceiling_per_s: Option<f64>,
    pub scrape_errors: u64,
}

fn requests_by_verb(s: &Snapshot) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for ((verb, sub, _code), n) in &s.requests {
        let key = if sub.is_empty() {
            verb.clone()
        } else {
            format!("{verb}/{sub}")
        };
        *out.entry(key).or_default() += n;
    }
    out
}

/// How a variant ends, judged from its rows so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AtEnd {
    /// Reconciles per second over the last [`SETTLE_WINDOW_S`] seconds.
    pub reconciles_per_s: f64,
    /// No reconcile finished in the last [`SETTLE_WINDOW_S`] seconds, nothing is queued and no worker is busy.
    pub settled: bool,
}

/// Compares the last scraped row with the first scraped row of the last [`SETTLE_WINDOW_S`] seconds (half a
/// second of slack for tick jitter); `None` while the rows do not span that long yet. A worker still busy
/// counts as not settled: a reconcile stuck in a request that never returns finishes nothing and queues
/// nothing, and is not at rest.
pub fn at_end(rows: &[Row]) -> Option<AtEnd> {
    let last = rows.iter().rev().find(|r| r.scraped)?;
    let earlier = rows
        .iter()
        .rev()
        .find(|r| r.scraped && last.t - r.t >= SETTLE_WINDOW_S - 0.5)?;
    let delta = last.snap.reconciles_total() - earlier.snap.reconciles_total();
    Some(AtEnd {
        reconciles_per_s: delta / (last.t - earlier.t).max(1e-9),
        settled: delta == 0.0 && last.snap.depth == 0.0 && last.snap.active_workers == 0.0,
    })
}

/// Summarises a variant's rows.
pub fn summarise(meta: &Meta, rows: &[Row]) -> VariantSummary {
    let mut out = VariantSummary {
        name: meta.name.clone(),
        rule: meta.rule.clone(),
        workers: meta.workers.clone(),
        expected: meta.expected,
        scrape_errors: meta.scrape_errors,
        ..VariantSummary::default()
    };
    let Some(last) = rows.iter().rev().find(|r| r.scraped).or(rows.last()) else {
        return out;
    };
    let end = rows.last().map_or(0.0, |r| r.t);
    let s = &last.snap;
    out.ready = rows.last().map_or(0, |r| r.ready);
    out.converged_s = rows
        .iter()
        .find(|r| meta.expected > 0 && r.ready >= meta.expected)
        .map(|r| r.t);
    out.reconciles = s.reconciles.clone();
    out.reconciles_total = s.reconciles_total();
    out.requests = requests_by_verb(s);
    out.writes = s.writes();
    out.conflicts_409 = s.code("409");
    out.retries = s.retries;
    out.conflict_retries = s.conflict_retries;
    out.latency_p50_ms = histogram_quantile(0.5, &s.reconcile_buckets).map(|x| x * 1000.0);
    out.latency_p99_ms = histogram_quantile(0.99, &s.reconcile_buckets).map(|x| x * 1000.0);
    out.series = s.series;
    out.final_depth = s.depth;
    out.max_depth = rows.iter().map(|r| r.snap.depth).fold(0.0, f64::max);
    out.max_active_workers = rows
        .iter()
        .map(|r| r.snap.active_workers)
        .fold(0.0, f64::max);
    out.writes_per_s_avg = if end > 0.0 { out.writes / end } else { 0.0 };
    out.writes_per_s_peak = rows
        .windows(2)
        .filter(|w| w[0].scraped && w[1].scraped && w[1].t > w[0].t)
        .map(|w| (w[1].snap.writes() - w[0].snap.writes()) / (w[1].t - w[0].t))
        .fold(0.0, f64::max);
    out.ceiling_share = meta
        .ceiling_per_s
        .filter(|c| *c > 0.0)
        .map(|c| out.writes_per_s_peak / c);
    if let Some(end) = at_end(rows) {
        out.reconciles_per_s_at_end = end.reconciles_per_s;
        out.settled = end.settled;
    }
    if let Some(tenants) = meta.tenants {
        let t = tenants.max(1) as f64;
        let rss = s.resident_bytes.unwrap_or(0.0);
        let base = s.baseline_resident_bytes.unwrap_or(rss);
        let tasks = s.tasks.unwrap_or(0.0);
        let base_tasks = s.baseline_tasks.unwrap_or(tasks);
        out.tenants = Some(TenantFigures {
            tenants,
            controllers: s.controllers.unwrap_or(0.0),
            resident_bytes: rss,
            baseline_bytes: base,
            bytes_per_tenant: (rss - base) / t,
            tasks,
            baseline_tasks: base_tasks,
            tasks_per_tenant: (tasks - base_tasks) / t,
            watches_open: s.watches_open,
        });
    }
    out
}

/// `patch 4.6k · patch/status 412 · list 200`: the requests by verb and subresource, largest first, watches
/// left out (one per controller, open for the whole window).
pub fn requests_text(requests: &BTreeMap<String, f64>) -> String {
    let mut w: Vec<(&String, &f64)> = requests
        .iter()
        .filter(|(k, _)| !k.starts_with("watch"))
        .collect();
    w.sort_by(|a, b| b.1.total_cmp(a.1).then_with(|| a.0.cmp(b.0)));
    if w.is_empty() {
        return "0".into();
    }
    w.iter()
        .map(|(k, n)| format!("{k} {}", compact(**n)))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// 950, 4.6k, 1.2M.
pub fn compact(n: f64) -> String {
    if n >= 999_500.0 {
        format!("{:.1}M", n / 1e6)
    } else if n >= 9_995.0 {
        format!("{:.0}k", n / 1e3)
    } else if n >= 1_000.0 {
        format!("{:.1}k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: f64, ready: u64, reconciles: f64, writes: f64, depth: f64) -> Row {
        let mut snap = Snapshot::default();
        snap.reconciles.insert("success".into(), reconciles);
        snap.requests
            .insert(("patch".into(), "status".into(), "200".into()), writes);
        snap.depth = depth;
        snap.reconcile_buckets = vec![
            (0.01, 0.0),
            (0.025, reconciles),
            (f64::INFINITY, reconciles),
        ];
        Row {
            t,
            ready,
            objects: 10,
            scraped: true,
            snap,
        }
    }

    fn meta() -> Meta {
        Meta {
            name: "good".into(),
            workers: "5".into(),
            expected: 10,
            ceiling_per_s: Some(100.0),
            ..Meta::default()
        }
    }

    #[test]
    fn a_converging_variant_settles() {
        let rows: Vec<Row> = (0..12)
            .map(|i| {
                let n = (f64::from(i) * 5.0).min(10.0);
                row(f64::from(i), n as u64, n, n, if i < 2 { 5.0 } else { 0.0 })
            })
            .collect();
        let s = summarise(&meta(), &rows);
        assert_eq!(s.ready, 10);
        assert_eq!(s.converged_s, Some(2.0));
        assert!(s.settled);
        assert_eq!(s.reconciles_total, 10.0);
        assert_eq!(s.writes_per_s_peak, 5.0);
        assert_eq!(s.ceiling_share, Some(0.05));
        assert_eq!(s.max_depth, 5.0);
        assert_eq!(s.requests.get("patch/status"), Some(&10.0));
        assert!(s.latency_p50_ms.is_some_and(|p| p > 10.0 && p <= 25.0));
    }

    #[test]
    fn a_looping_variant_does_not_settle() {
        let rows: Vec<Row> = (0..12)
            .map(|i| {
                row(
                    f64::from(i),
                    10,
                    f64::from(i) * 40.0,
                    f64::from(i) * 80.0,
                    10.0,
                )
            })
            .collect();
        let s = summarise(&meta(), &rows);
        assert!(!s.settled);
        assert!((s.reconciles_per_s_at_end - 40.0).abs() < 1e-9);
        assert_eq!(s.converged_s, Some(0.0));
    }

    /// The shape of the failure issue 8 chased: three reconciles stuck in a write that never returns, their
    /// objects' next triggers held behind them, no reconcile finishing for the rest of the window.
    #[test]
    fn workers_stuck_in_a_request_are_not_settled() {
        let rows: Vec<Row> = (0..12)
            .map(|i| {
                let mut r = row(f64::from(i), 37, 44.0, 44.0, 0.0);
                r.snap.active_workers = 3.0;
                r
            })
            .collect();
        assert_eq!(
            at_end(&rows),
            Some(AtEnd {
                reconciles_per_s: 0.0,
                settled: false
            })
        );
        let mut idle = rows.clone();
        for r in &mut idle {
            r.snap.active_workers = 0.0;
        }
        assert!(at_end(&idle).is_some_and(|e| e.settled));
        assert_eq!(
            at_end(&rows[..3]),
            None,
            "3 s of rows cannot show 5 s at rest"
        );
    }

    #[test]
    fn text_helpers() {
        assert_eq!(compact(950.0), "950");
        assert_eq!(compact(4_630.0), "4.6k");
        assert_eq!(compact(46_300.0), "46k");
        assert_eq!(compact(1_200_000.0), "1.2M");
        let mut r = BTreeMap::new();
        r.insert("patch".to_string(), 4630.0);
        r.insert("patch/status".to_string(), 200.0);
        r.insert("watch".to_string(), 1.0);
        r.insert("list".to_string(), 200.0);
        assert_eq!(
            requests_text(&r),
            "patch 4.6k · list 200 · patch/status 200"
        );
    }
}
