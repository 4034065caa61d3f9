//! CA402 live: a controller metric family with too many series, or a label whose values are object names,
//! uids or namespaces (series that grow with the objects), with the growth over the window.

use super::{finding, metrics_subject, value, window};
use crate::config::Config;
use crate::finding::Finding;
use crate::live::actor::Actors;
use crate::live::snapshot::{Snapshot, SourceKind};
use std::collections::BTreeSet;

/// Distinct label values that are object names before a label counts as per-object.
const MIN_MATCHES: usize = 3;

pub fn detect(s: &Snapshot, _actors: &Actors, cfg: &Config) -> Vec<Finding> {
    let limit = cfg.thresholds.series_per_family;
    let object_names: BTreeSet<&str> = s.objects.iter().map(|o| o.name.as_str()).collect();
    let namespaces: BTreeSet<&str> = s
        .objects
        .iter()
        .filter_map(|o| o.namespace.as_deref())
        .collect();
    let mut out = Vec::new();
    for src in s
        .metrics
        .iter()
        .filter(|m| m.kind == SourceKind::Controller)
    {
        let Some(last) = src.scrapes.last() else {
            continue;
        };
        let first = src.scrapes.first();
        for fam in &last.families {
            let before = first
                .and_then(|f| f.families.iter().find(|x| x.family == fam.family))
                .map_or(0, |x| x.series);
            let growth = fam.series.saturating_sub(before);
            // The label with the most object-name values, if any.
            let per_object = fam
                .labels
                .iter()
                .map(|l| {
                    let names = l
                        .values
                        .iter()
                        .filter(|v| object_names.contains(v.as_str()))
                        .count();
                    let nss = l
                        .values
                        .iter()
                        .filter(|v| namespaces.contains(v.as_str()))
                        .count();
                    (
                        l,
                        names.max(nss),
                        if names >= nss {
                            "object names"
                        } else {
                            "namespaces"
                        },
                    )
                })
                .filter(|(_, n, _)| *n >= MIN_MATCHES)
                .max_by_key(|(l, n, _)| (*n, std::cmp::Reverse(l.name.clone())));
            let too_many = fam.series as f64 > limit;
            if !too_many && per_object.is_none() {
                continue;
            }
            let mut why = Vec::new();
            if too_many {
                why.push(format!("{} series (limit {limit:.0})", fam.series));
            }
            if let Some((l, n, what)) = &per_object {
                why.push(format!(
                    "label `{}` takes {} values, {n} of them {what} of watched objects (e.g. `{}`)",
                    l.name,
                    l.distinct,
                    l.values
                        .iter()
                        .find(|v| object_names.contains(v.as_str())
                            || namespaces.contains(v.as_str()))
                        .map_or("", String::as_str),
                ));
            }
            let message = format!(
                "metric family `{}` grows with the objects: {}; {} series now, +{growth} over the window \
                 (kcp: ~140,000 series from per-workspace labels)",
                fam.family,
                why.join("; "),
                fam.series,
            );
            let mut ev = vec![
                value("series", fam.series as f64, "series"),
                value("series growth", growth as f64, "series"),
                window(src.span_secs()),
            ];
            if let Some((l, n, _)) = &per_object {
                ev.push(value(
                    format!("distinct values of {}", l.name),
                    l.distinct as f64,
                    "values",
                ));
                ev.push(value(
                    format!("object-valued {}", l.name),
                    *n as f64,
                    "values",
                ));
            }
            out.push(finding(
                &crate::rules::CA402,
                metrics_subject(src, None),
                message,
                ev,
            ));
        }
    }
    out
}
