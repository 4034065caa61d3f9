//! CA203 live: polling. A large `requeue_after` share of the controller's reconciles, or reconciles at a
//! steady rate per object while none of its objects changed at all (its objects: see `reconciled_by`).

use super::ca201_reconcile_without_generation_predicate::controllers;
use super::{finding, metrics_subject, pct, reconciled_by, value, window};
use crate::config::Config;
use crate::finding::Finding;
use crate::live::actor::Actors;
use crate::live::snapshot::{MetricSample, Snapshot, SourceKind};

/// Share of `requeue_after` results from which reconciles are polling.
const REQUEUE_SHARE: f64 = 0.5;
/// Fewer reconciles than this in the window say nothing.
const MIN_RECONCILES: f64 = 10.0;

pub fn detect(s: &Snapshot, _actors: &Actors, cfg: &Config) -> Vec<Finding> {
    let names = &cfg.metrics;
    let poll_limit = cfg.thresholds.polling_requeue_secs;
    let mut out = Vec::new();
    for src in s.sources(SourceKind::Controller) {
        let secs = src.span_secs();
        for controller in controllers(src, cfg) {
            let controller = controller.as_ref();
            // Its own objects: the period per object is that of the objects it reconciles.
            let (objs, _) = reconciled_by(s, controller.map(String::as_str));
            let objects = objs.len() as f64;
            let writes: u32 = objs.iter().map(|o| o.writes.total).sum();
            let created = objs
                .iter()
                .filter(|o| o.created_ms.is_some_and(|c| c >= s.window.start_ms))
                .count();
            let of = |x: &MetricSample| {
                controller.is_none_or(|c| x.label(&names.controller_label) == c.as_str())
            };
            let total = src.delta(&names.reconcile_total, of);
            if total < MIN_RECONCILES || secs <= 0.0 {
                continue;
            }
            let requeue = src.delta(&names.reconcile_total, |x| {
                of(x) && x.label(&names.result_label) == names.requeue_after_result
            });
            let share = requeue / total;
            let who = controller.map_or_else(|| src.name.clone(), |c| format!("controller `{c}`"));
            let rate = total / secs;
            // Seconds between two reconciles of the same object, if every object is reconciled alike.
            let period = (objects > 0.0).then(|| objects / rate);
            let steady_without_changes = objects > 0.0
                && writes == 0
                && created == 0
                // One pass over every object (a restart, a resync) is not polling; several are.
                && total >= 3.0 * objects
                && period.is_some_and(|p| p < poll_limit);
            if share < REQUEUE_SHARE && !steady_without_changes {
                continue;
            }
            let message = if share >= REQUEUE_SHARE {
                format!(
                    "{who}: {} of {total:.0} reconciles in {secs:.0} s ended in `{}` ({rate:.1}/s{}): it polls instead \
                     of waiting for changes",
                    pct(share),
                    names.requeue_after_result,
                    period.map_or_else(String::new, |p| format!(", every {p:.1} s per object")),
                )
            } else {
                format!(
                    "{who} reconciled {total:.0} times in {secs:.0} s ({rate:.1}/s, every {:.1} s per object, limit \
                     {poll_limit:.0} s) while none of its {objects:.0} objects changed: it polls",
                    period.unwrap_or_default(),
                )
            };
            let mut ev = vec![
                value("reconciles", total, "reconciles"),
                value("requeue_after share", share, ""),
                value("reconcile rate", rate, "reconciles/s"),
                window(secs),
            ];
            if let Some(p) = period {
                ev.push(value("period per object", p, "s"));
            }
            out.push(finding(
                &crate::rules::CA203,
                metrics_subject(src, controller.map(String::as_str)),
                message,
                ev,
            ));
        }
    }
    out
}
