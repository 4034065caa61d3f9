//! CA403 live: the write rate the API server sees is close to its write ceiling: the ceiling measured by
//! `kubectl ctrlaudit bench` (`--write-ceiling`), or estimated from etcd's write latency, with the API server's
//! write latency and throttling (429) as corroboration.

use super::{WRITE_VERBS, apiserver, finding, pct, type_subject, value, window};
use crate::config::Config;
use crate::finding::Finding;
use crate::live::snapshot::Snapshot;

/// Fewer etcd writes than this give no latency estimate.
const MIN_ETCD_WRITES: f64 = 20.0;
/// Mean API server write latency from which queueing is visible (the SLO for single objects is 1 s).
const QUEUEING_SECS: f64 = 0.1;
const SLO_SECS: f64 = 1.0;

/// The cluster's write load over the window, from the API server's metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WriteLoad {
    pub secs: f64,
    pub writes_per_sec: f64,
    /// Mean API server latency of write requests.
    pub write_latency_secs: Option<f64>,
    /// Writes per second the store can take: measured (given) or 1 / mean etcd write latency.
    pub ceiling: Option<f64>,
    pub ceiling_measured: bool,
    pub throttled: f64,
}

impl WriteLoad {
    pub fn share(&self) -> Option<f64> {
        self.ceiling
            .filter(|c| *c > 0.0)
            .map(|c| self.writes_per_sec / c)
    }
}

pub(crate) fn write_load(s: &Snapshot) -> Option<WriteLoad> {
    let src = apiserver(s)?;
    let secs = src.span_secs();
    if secs <= 0.0 {
        return None;
    }
    let is_write = |v: &str| WRITE_VERBS.contains(&v);
    let writes = src.delta("apiserver_request_total", |x| is_write(x.label("verb")));
    let throttled = src.delta("apiserver_request_total", |x| x.label("code") == "429")
        + src.delta("apiserver_flowcontrol_rejected_requests_total", |_| true);
    let lat_sum = src.delta("apiserver_request_duration_seconds_sum", |x| {
        is_write(x.label("verb"))
    });
    let lat_n = src.delta("apiserver_request_duration_seconds_count", |x| {
        is_write(x.label("verb"))
    });
    let etcd_write = |op: &str| {
        let op = op.to_ascii_lowercase();
        op.contains("create") || op.contains("update") || op.contains("delete")
    };
    let e_sum = src.delta("etcd_request_duration_seconds_sum", |x| {
        etcd_write(x.label("operation"))
    });
    let e_n = src.delta("etcd_request_duration_seconds_count", |x| {
        etcd_write(x.label("operation"))
    });
    let (ceiling, measured) = match s.write_ceiling {
        Some(c) => (Some(c), true),
        None => (
            (e_n >= MIN_ETCD_WRITES && e_sum > 0.0).then(|| e_n / e_sum),
            false,
        ),
    };
    Some(WriteLoad {
        secs,
        writes_per_sec: writes / secs,
        write_latency_secs: (lat_n > 0.0).then(|| lat_sum / lat_n),
        ceiling,
        ceiling_measured: measured,
        throttled,
    })
}

/// Near the ceiling: at `ceiling_share` of a measured ceiling, or of an estimated one when latency shows
/// queueing; or throttled; or over the latency SLO.
pub(crate) fn near_ceiling(load: &WriteLoad, cfg: &Config) -> bool {
    let share = load.share().unwrap_or(0.0);
    let latency = load.write_latency_secs.unwrap_or(0.0);
    (share >= cfg.thresholds.ceiling_share && (load.ceiling_measured || latency >= QUEUEING_SECS))
        || (load.throttled > 0.0 && load.writes_per_sec > 0.0)
        || latency >= SLO_SECS
}

pub fn detect(s: &Snapshot, cfg: &Config) -> Vec<Finding> {
    let Some(load) = write_load(s) else {
        return Vec::new();
    };
    if !near_ceiling(&load, cfg) {
        return Vec::new();
    }
    let mut parts = vec![format!(
        "{:.1} writes/s over {:.0} s",
        load.writes_per_sec, load.secs
    )];
    if let (Some(c), Some(share)) = (load.ceiling, load.share()) {
        parts.push(format!(
            "{} of the {} write ceiling of {c:.0}/s",
            pct(share),
            if load.ceiling_measured {
                "measured"
            } else {
                "estimated (1 / etcd write latency)"
            }
        ));
    }
    if let Some(l) = load.write_latency_secs {
        parts.push(format!("mean write latency {:.0} ms", l * 1000.0));
    }
    if load.throttled > 0.0 {
        parts.push(format!("{:.0} requests throttled (429)", load.throttled));
    }
    let message = format!(
        "the API server is near its write ceiling: {}; more writers or workers add latency, not throughput",
        parts.join(", ")
    );
    let mut ev = vec![
        value("write rate", load.writes_per_sec, "writes/s"),
        window(load.secs),
    ];
    if let Some(c) = load.ceiling {
        ev.push(value("write ceiling", c, "writes/s"));
    }
    if let Some(l) = load.write_latency_secs {
        ev.push(value("mean write latency", l, "s"));
    }
    if load.throttled > 0.0 {
        ev.push(value("throttled", load.throttled, "requests"));
    }
    vec![finding(
        &crate::rules::CA403,
        type_subject("", "apiserver", None),
        message,
        ev,
    )]
}
