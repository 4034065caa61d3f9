//! CA302 live: a controller running many (or unbounded) concurrent reconciles while that concurrency buys
//! nothing: its writes conflict, or the API server is near its write ceiling.

use super::ca403_write_rate_near_apiserver_ceiling::{near_ceiling, write_load};
use super::{finding, metrics_subject, pct, value, window};
use crate::config::Config;
use crate::finding::Finding;
use crate::live::actor::Actors;
use crate::live::snapshot::{MetricSample, Snapshot, SourceKind};

/// Workers from which concurrency is worth a look (the seed's 5).
const MANY_WORKERS: f64 = 5.0;

pub fn detect(s: &Snapshot, _actors: &Actors, cfg: &Config) -> Vec<Finding> {
    let names = &cfg.metrics;
    let load = write_load(s);
    let ceiling = load.as_ref().is_some_and(|l| near_ceiling(l, cfg));
    let mut out = Vec::new();
    for src in s.sources(SourceKind::Controller) {
        let secs = src.span_secs();
        for controller in super::ca201_reconcile_without_generation_predicate::controllers(src, cfg)
        {
            let controller = controller.as_ref();
            let of = |x: &MetricSample| {
                controller.is_none_or(|c| x.label(&names.controller_label) == c.as_str())
            };
            let max = src.gauge_max(&names.max_concurrent_reconciles, of);
            let active = src.gauge_max(&names.active_workers, of).unwrap_or(0.0);
            let unbounded = max == Some(0.0);
            let many = max.unwrap_or(0.0) >= MANY_WORKERS
                || active >= MANY_WORKERS
                || (unbounded && active >= 2.0);
            if !many {
                continue;
            }
            let is_write =
                |m: &str| matches!(m, "PUT" | "PATCH" | "POST" | "put" | "patch" | "post");
            let writes = src.delta(&names.rest_client_requests_total, |x| {
                is_write(x.label("method"))
            });
            let conflicts = src.delta(&names.rest_client_requests_total, |x| {
                is_write(x.label("method")) && x.label("code") == "409"
            });
            let conflicted = writes >= 10.0 && conflicts / writes >= cfg.thresholds.conflict_share;
            if !(conflicted || ceiling) {
                continue;
            }
            let limit = if unbounded {
                "no limit (0 = unbounded)".to_string()
            } else {
                max.map_or_else(
                    || "an unknown limit".to_string(),
                    |m| format!("a limit of {m:.0}"),
                )
            };
            let mut why = Vec::new();
            if conflicted {
                why.push(format!(
                    "{} of its {writes:.0} writes got 409 Conflict",
                    pct(conflicts / writes)
                ));
            }
            if ceiling {
                why.push("the API server is near its write ceiling (see CA403)".to_string());
            }
            let message = format!(
                "{} runs up to {active:.0} reconciles at once with {limit}, and {}: more workers add latency and \
                 conflicts here, not throughput",
                controller.map_or_else(|| src.name.clone(), |c| format!("controller `{c}`")),
                why.join(" and "),
            );
            let mut ev = vec![
                value("active workers (peak)", active, "workers"),
                window(secs),
            ];
            if let Some(m) = max {
                ev.push(value("max concurrent reconciles", m, "workers"));
            }
            if writes > 0.0 {
                ev.push(value("409 conflicts", conflicts, "requests"));
                ev.push(value("writes", writes, "requests"));
            }
            if let Some(l) = &load {
                ev.push(value("API server write rate", l.writes_per_sec, "writes/s"));
            }
            out.push(finding(
                &crate::rules::CA302,
                metrics_subject(src, controller.map(String::as_str)),
                message,
                ev,
            ));
        }
    }
    out
}
