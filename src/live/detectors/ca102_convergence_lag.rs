//! CA102 live: objects whose status.observedGeneration trails metadata.generation, or whose Ready condition
//! is not True, for longer than `convergence_lag_secs`; one finding per type and namespace, listing the objects.

use super::{finding, objects_by_type, on_objects, type_subject, value, where_label, window};
use crate::config::Config;
use crate::finding::{Finding, Subject};
use crate::live::actor::Actors;
use crate::live::snapshot::{ObjectRecord, Snapshot};

/// Objects listed by name in one finding's evidence.
const LISTED: usize = 10;

/// Why one object is behind, and since when.
fn lag(o: &ObjectRecord, end_ms: i64, peers_have_status: bool) -> Option<(&'static str, f64)> {
    let since = |t: Option<i64>| t.or(o.created_ms).or(Some(o.first_seen_ms));
    let secs = |t: Option<i64>| since(t).map(|t| ((end_ms - t).max(0)) as f64 / 1000.0);
    if let Some(og) = o.observed_generation
        && og < o.generation
    {
        return Some((
            "observedGeneration behind generation",
            secs(o.generation_changed_ms)?,
        ));
    }
    if let Some(r) = &o.ready
        && r.status != "True"
    {
        return Some(("not Ready", secs(r.since_ms)?));
    }
    if !o.has_status && peers_have_status {
        return Some(("no status yet", secs(o.created_ms)?));
    }
    None
}

pub fn detect(s: &Snapshot, _actors: &Actors, cfg: &Config) -> Vec<Finding> {
    let limit = cfg.thresholds.convergence_lag_secs;
    let end = s.window.end_ms;
    let mut out = Vec::new();
    for ((group, kind, plural, ns), objs) in objects_by_type(s) {
        let peers_have_status = objs.iter().any(|o| o.has_status);
        let mut behind: Vec<(&ObjectRecord, &'static str, f64)> = objs
            .iter()
            .filter_map(|o| lag(o, end, peers_have_status).map(|(why, secs)| (*o, why, secs)))
            .filter(|(_, _, secs)| *secs >= limit)
            .collect();
        if behind.is_empty() {
            continue;
        }
        behind.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.name.cmp(&b.0.name)));
        let max = behind[0].2;
        let subject = if behind.len() == 1 {
            Subject::Object {
                group: group.to_string(),
                kind: kind.to_string(),
                namespace: ns.as_deref().map(str::to_string),
                name: behind[0].0.name.clone(),
            }
        } else {
            type_subject(&group, &kind, ns.as_deref())
        };
        let mut reasons: Vec<&str> = behind.iter().map(|b| b.1).collect();
        reasons.sort();
        reasons.dedup();
        let message = format!(
            "{} of {} {} have not converged for longer than {limit:.0} s (longest {max:.0} s): {}",
            behind.len(),
            objs.len(),
            where_label(&plural, ns.as_deref()),
            reasons.join(", "),
        );
        let mut ev = vec![
            value("objects behind", behind.len() as f64, "objects"),
            value("objects", objs.len() as f64, "objects"),
            value("longest lag", max, "s"),
            window(s.window.secs()),
        ];
        ev.extend(
            behind
                .iter()
                .take(LISTED)
                .map(|(o, why, secs)| value(format!("lag of {} ({why})", o.name), *secs, "s")),
        );
        let hits: Vec<(String, f64, u32)> = behind
            .iter()
            .map(|(o, _, secs)| (o.name.clone(), *secs, 0))
            .collect();
        out.push(on_objects(
            finding(&crate::rules::CA102, subject, message, ev),
            (&group, &kind, ns.as_deref()),
            &hits,
        ));
    }
    out
}
