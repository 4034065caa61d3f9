//! CA301 live: a large share of writes answered 409 Conflict: per resource and subresource from the API
//! server's counters, per controller from its client metrics, per user and user agent from an audit log.

use super::{
    apiserver, finding, identity_subject, kind_of, metrics_subject, pct, type_subject, value,
    window,
};
use crate::config::Config;
use crate::finding::Finding;
use crate::live::actor::Actors;
use crate::live::snapshot::{Identity, Snapshot, SourceKind};
use std::collections::BTreeMap;

/// Fewer writes than this in the window say nothing about a share.
const MIN_WRITES: f64 = 10.0;
/// At least this many conflicts.
const MIN_CONFLICTS: f64 = 3.0;

fn trips(cfg: &Config, conflicts: f64, writes: f64) -> bool {
    writes >= MIN_WRITES
        && conflicts >= MIN_CONFLICTS
        && conflicts / writes >= cfg.thresholds.conflict_share
}

fn evidence(conflicts: f64, writes: f64, secs: f64) -> Vec<crate::finding::Evidence> {
    vec![
        value("409 conflicts", conflicts, "requests"),
        value("writes", writes, "requests"),
        value("conflict share", conflicts / writes, ""),
        value("conflict rate", conflicts / secs.max(1.0), "requests/s"),
        window(secs),
    ]
}

/// `widgets` or `widgets/status`: the URL path segment a write went to.
fn resource_path(resource: &str, subresource: &str) -> String {
    if subresource.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{subresource}")
    }
}

pub fn detect(s: &Snapshot, _actors: &Actors, cfg: &Config) -> Vec<Finding> {
    let mut out = Vec::new();
    let limit = cfg.thresholds.conflict_share;

    // API server: per group, resource, subresource (no client label: the subject is the resource type).
    if let Some(src) = apiserver(s) {
        let secs = src.span_secs();
        let mut per: BTreeMap<(String, String, String), (f64, f64)> = BTreeMap::new();
        if let (Some(first), Some(last)) = (src.scrapes.first(), src.scrapes.last()) {
            for x in last.samples.iter().filter(|x| {
                x.name == "apiserver_request_total"
                    && matches!(x.label("verb"), "PUT" | "PATCH" | "APPLY")
            }) {
                let before = first
                    .samples
                    .iter()
                    .find(|b| b.name == x.name && b.labels == x.labels)
                    .map_or(0.0, |b| b.value);
                let d = if x.value >= before {
                    x.value - before
                } else {
                    x.value
                };
                let e = per
                    .entry((
                        x.label("group").to_string(),
                        x.label("resource").to_string(),
                        x.label("subresource").to_string(),
                    ))
                    .or_default();
                e.1 += d;
                if x.label("code") == "409" {
                    e.0 += d;
                }
            }
        }
        for ((group, resource, sub), (conflicts, writes)) in per {
            if !trips(cfg, conflicts, writes) {
                continue;
            }
            let target = resource_path(&resource, &sub);
            let message = format!(
                "{} of {writes:.0} PUT/PATCH of {target} in {secs:.0} s were answered 409 Conflict ({conflicts:.0}, \
                 {:.2}/s; limit {}): writers replace with a stale resourceVersion (API server counters, cluster-wide)",
                pct(conflicts / writes),
                conflicts / secs.max(1.0),
                pct(limit),
            );
            out.push(finding(
                &crate::rules::CA301,
                type_subject(&group, &kind_of(s, &group, &resource), None),
                message,
                evidence(conflicts, writes, secs),
            ));
        }
    }

    // Controller client metrics: rest_client_requests_total by method and code.
    let names = &cfg.metrics;
    for src in s.sources(SourceKind::Controller) {
        let secs = src.span_secs();
        let is_write = |m: &str| matches!(m, "PUT" | "PATCH" | "POST" | "put" | "patch" | "post");
        let writes = src.delta(&names.rest_client_requests_total, |x| {
            is_write(x.label("method"))
        });
        let conflicts = src.delta(&names.rest_client_requests_total, |x| {
            is_write(x.label("method")) && x.label("code") == "409"
        });
        if !trips(cfg, conflicts, writes) {
            continue;
        }
        let message = format!(
            "{} of this controller's {writes:.0} writes in {secs:.0} s got 409 Conflict ({:.2}/s; limit {})",
            pct(conflicts / writes),
            conflicts / secs.max(1.0),
            pct(limit),
        );
        out.push(finding(
            &crate::rules::CA301,
            metrics_subject(src, None),
            message,
            evidence(conflicts, writes, secs),
        ));
    }

    // Audit log: per identity, resource, subresource and namespace.
    if let Some(a) = &s.audit {
        let secs = a.secs();
        type Key = (Identity, String, String, String, Option<String>);
        let mut per: BTreeMap<Key, (f64, f64)> = BTreeMap::new();
        for g in a
            .groups
            .iter()
            .filter(|g| matches!(g.verb.as_str(), "update" | "patch"))
        {
            // A 409 carries no fieldManager difference, but keep the identity as the log gives it.
            let e = per
                .entry((
                    g.identity.client(),
                    g.group.clone(),
                    g.resource.clone(),
                    g.subresource.clone(),
                    g.namespace.clone(),
                ))
                .or_default();
            e.1 += g.count as f64;
            if g.code == 409 {
                e.0 += g.count as f64;
            }
        }
        for ((id, _group, resource, sub, ns), (conflicts, writes)) in per {
            if !trips(cfg, conflicts, writes) {
                continue;
            }
            let target = resource_path(&resource, &sub);
            let message = format!(
                "{} of {writes:.0} updates/patches of {target}{} by this client were answered 409 Conflict \
                 ({conflicts:.0} in {secs:.0} s; limit {}): it replaces with a stale resourceVersion and does not \
                 re-read before retrying (audit log)",
                pct(conflicts / writes),
                ns.as_deref()
                    .map_or_else(String::new, |n| format!(" in {n}")),
                pct(limit),
            );
            out.push(finding(
                &crate::rules::CA301,
                identity_subject(&id),
                message,
                evidence(conflicts, writes, secs),
            ));
        }
    }
    out
}
