//! CA401 live: one controller per tenant. Work queues named after namespaces (controller metrics), or one
//! client holding a separate watch of the same resource in many namespaces (audit log).

use super::{finding, identity_subject, metrics_subject, value, window};
use crate::config::Config;
use crate::finding::Finding;
use crate::live::actor::Actors;
use crate::live::snapshot::{Identity, Snapshot, SourceKind};
use std::collections::{BTreeMap, BTreeSet};

/// Per-namespace queues or watches from this many tenants on.
const MIN_TENANTS: usize = 3;

/// The tenant part of a queue name: what is left after the longest prefix the names share.
fn tenant_suffixes(names: &[String]) -> Vec<(String, String)> {
    // Group by prefix up to the last '-', '/', ':' or '_'.
    let mut by_prefix: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for n in names {
        if let Some(i) = n.rfind(['-', '/', ':', '_'])
            && i > 0
            && i + 1 < n.len()
        {
            by_prefix.entry(&n[..i]).or_default().push(&n[i + 1..]);
        }
    }
    by_prefix
        .into_iter()
        .filter(|(_, v)| v.len() >= MIN_TENANTS)
        .flat_map(|(p, v)| v.into_iter().map(move |t| (p.to_string(), t.to_string())))
        .collect()
}

pub fn detect(s: &Snapshot, _actors: &Actors, cfg: &Config) -> Vec<Finding> {
    let mut out = Vec::new();
    let namespaces: BTreeSet<&str> = s
        .objects
        .iter()
        .filter_map(|o| o.namespace.as_deref())
        .collect();
    let names = &cfg.metrics;

    for src in s.sources(SourceKind::Controller) {
        let queues = src.label_values(&names.workqueue_adds_total, &names.queue_label);
        let queues = if queues.is_empty() {
            src.label_values(&names.workqueue_depth, &names.queue_label)
        } else {
            queues
        };
        let per_ns: Vec<&String> = queues
            .iter()
            .filter(|q| namespaces.iter().any(|ns| q.contains(ns)))
            .collect();
        let suffixed = tenant_suffixes(&queues);
        let (count, how, example) = if per_ns.len() >= MIN_TENANTS {
            (per_ns.len(), "named after namespaces", per_ns[0].clone())
        } else if !suffixed.is_empty() {
            let (p, t) = &suffixed[0];
            (
                suffixed.len(),
                "that differ only by a tenant suffix",
                format!("{p}-{t}"),
            )
        } else {
            continue;
        };
        let message = format!(
            "this controller runs {count} work queues {how} (e.g. `{example}`): one controller per tenant; \
             memory, goroutines/tasks and watches grow with the tenants (kcp: 9.8 → 3.1 MiB per workspace once shared)"
        );
        out.push(finding(
            &crate::rules::CA401,
            metrics_subject(src, None),
            message,
            vec![
                value("per-tenant queues", count as f64, "queues"),
                window(src.span_secs()),
            ],
        ));
    }

    if let Some(a) = &s.audit {
        let mut watches: BTreeMap<(Identity, String, String), BTreeSet<&str>> = BTreeMap::new();
        for g in a.groups.iter().filter(|g| g.verb == "watch") {
            if let Some(ns) = g.namespace.as_deref() {
                watches
                    .entry((g.identity.client(), g.group.clone(), g.resource.clone()))
                    .or_default()
                    .insert(ns);
            }
        }
        for ((id, _group, resource), nss) in watches {
            if nss.len() < MIN_TENANTS || id.user_agent.starts_with(crate::live::actor::OWN_NAME) {
                continue;
            }
            let message = format!(
                "{} holds a separate watch of {resource} in each of {} namespaces ({}…): one controller or watcher \
                 per tenant instead of one watch across namespaces (audit log)",
                identity_subject(&id).label(),
                nss.len(),
                nss.iter().take(3).copied().collect::<Vec<_>>().join(", "),
            );
            out.push(finding(
                &crate::rules::CA401,
                identity_subject(&id),
                message,
                vec![
                    value(
                        "namespaces watched separately",
                        nss.len() as f64,
                        "namespaces",
                    ),
                    window(a.secs()),
                ],
            ));
        }
    }
    out
}
