//! CA403 live: the write rate the API server sees is close to its write ceiling: the ceiling measured by
//! `kubectl ctrlaudit bench` (`--write-ceiling`), or estimated from etcd's write latency, with the API server's
//! write latency and throttling (429) as corroboration. Named after the controllers whose writes make up the
//! load (the audit log's writes per client, else the watch's writes per field manager): the API server is
//! where it shows, not what to fix. People and one-off clients are left out (`live::actor`).

use super::{
    WRITE_VERBS, apiserver, finding, identity_subject, manager_subject, on_objects, pct,
    type_subject, value, window,
};
use crate::config::Config;
use crate::finding::{Finding, Subject};
use crate::live::actor::Actors;
use crate::live::snapshot::{Identity, Snapshot};
use std::collections::BTreeMap;

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

pub fn detect(s: &Snapshot, actors: &Actors, cfg: &Config) -> Vec<Finding> {
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
    let writers = writers(s, actors);
    let seen: u64 = writers.iter().map(|w| w.1).sum();
    if writers.is_empty() {
        parts.push(if s.audit.is_some() {
            "no controller's writes were seen to name (in the audit log or by the watch)".to_string()
        } else {
            "no controller's writes were seen to name (no audit log was read, and the watch saw none)"
                .to_string()
        });
    } else {
        parts.push(format!(
            "the writes seen come from {}",
            writers
                .iter()
                .take(3)
                .map(|(subject, n)| format!(
                    "{} ({n} writes, {})",
                    subject.label(),
                    pct(*n as f64 / seen as f64)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let message = format!(
        "the API server is near its write ceiling: {}; more writers or workers add latency, not throughput",
        parts.join(", ")
    );
    let mut ev = vec![
        value("write rate", load.writes_per_sec, "writes/s"),
        window(load.secs),
    ];
    ev.extend(writers.iter().take(3).map(|(subject, n)| {
        value(
            format!("writes by {}", subject.label()),
            *n as f64,
            "writes",
        )
    }));
    if let Some(c) = load.ceiling {
        ev.push(value("write ceiling", c, "writes/s"));
    }
    if let Some(l) = load.write_latency_secs {
        ev.push(value("mean write latency", l, "s"));
    }
    if load.throttled > 0.0 {
        ev.push(value("throttled", load.throttled, "requests"));
    }
    let subject = writers.into_iter().next().map_or_else(
        || type_subject("", "apiserver", None),
        |(subject, _)| subject,
    );
    // The objects its writes went to (by the watch), where Events go and what `--serve` labels the kind with.
    let written: Vec<&crate::live::snapshot::ObjectRecord> = match &subject {
        Subject::Controller {
            manager: Some(m), ..
        } => s
            .objects
            .iter()
            .filter(|o| o.writers.iter().any(|w| w.manager == *m))
            .collect(),
        _ => Vec::new(),
    };
    let f = finding(&crate::rules::CA403, subject, message, ev);
    let Some(first) = written.first() else {
        return vec![f];
    };
    let of_type = |o: &&&crate::live::snapshot::ObjectRecord| {
        o.group == first.group && o.kind == first.kind && o.namespace == first.namespace
    };
    let hits: Vec<(String, f64, u32)> = written
        .iter()
        .filter(of_type)
        .map(|o| {
            let n: u32 = o.writers.iter().map(|w| w.writes).sum();
            (o.name.clone(), f64::from(n), n)
        })
        .collect();
    vec![on_objects(
        f,
        (&first.group, &first.kind, first.namespace.as_deref()),
        &hits,
    )]
}

/// The controllers that wrote during the window, the most writes first: per audit-log client when there is a log
/// (every write, seen by the watch or not), else per field manager from the watched objects.
fn writers(s: &Snapshot, actors: &Actors) -> Vec<(Subject, u64)> {
    let mut by: BTreeMap<Subject, u64> = BTreeMap::new();
    if let Some(a) = &s.audit {
        // Per client, named with the field manager most of its writes carry (a controller may write status
        // under another one).
        let mut per_client: BTreeMap<Identity, BTreeMap<Option<String>, u64>> = BTreeMap::new();
        for g in a.groups.iter().filter(|g| {
            matches!(
                g.verb.as_str(),
                "create" | "update" | "patch" | "delete" | "deletecollection"
            ) && (200..300).contains(&g.code)
                && actors.is_controller(&g.identity)
        }) {
            *per_client
                .entry(g.identity.client())
                .or_default()
                .entry(g.identity.manager.clone())
                .or_default() += g.count;
        }
        for (client, managers) in per_client {
            let total: u64 = managers.values().sum();
            let manager = managers
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
                .and_then(|(m, _)| m);
            let id = Identity { manager, ..client };
            *by.entry(identity_subject(&id)).or_default() += total;
        }
    }
    if by.is_empty() {
        for w in s.objects.iter().flat_map(|o| &o.writers) {
            if actors.is_controller_manager(&w.manager) {
                *by.entry(manager_subject(&w.manager)).or_default() += u64::from(w.writes);
            }
        }
    }
    let mut v: Vec<(Subject, u64)> = by.into_iter().filter(|(_, n)| *n > 0).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}
