//! CA101 live: status sent through the main resource of a type with the status subresource, which the API
//! server accepts with 200 and drops. Seen as: no object of the type has a status and nobody ever wrote
//! `/status`, while the main resource is being written (managedFields, API server metrics); or, exactly, as
//! audit events whose request carried a `status` that the response does not have.

use super::{
    apiserver, finding, identity_subject, kind_of, manager_subject, objects_by_type, type_subject,
    value, where_label, window, with_identity,
};
use crate::config::Config;
use crate::finding::Finding;
use crate::live::snapshot::{AuditGroup, Snapshot};
use std::collections::BTreeMap;

/// Slack between creation and a managedFields time for the entry to count as a later write (1 s granularity).
const AFTER_CREATION_MS: i64 = 1_000;

pub fn detect(s: &Snapshot, _cfg: &Config) -> Vec<Finding> {
    let mut out = Vec::new();

    // Exact evidence from the audit log, per identity, resource and namespace.
    type Key = (String, String, Option<String>);
    let mut dropped: BTreeMap<Key, Vec<&AuditGroup>> = BTreeMap::new();
    if let Some(a) = &s.audit {
        for g in a.groups.iter().filter(|g| g.status_dropped > 0) {
            dropped
                .entry((g.group.clone(), g.resource.clone(), g.namespace.clone()))
                .or_default()
                .push(g);
        }
    }

    for ((group, kind, plural, ns), objs) in objects_by_type(s) {
        let Some(rt) = s.resource(&group, &plural) else {
            continue;
        };
        if !rt.status_subresource || objs.is_empty() {
            continue;
        }
        let with_status = objs.iter().filter(|o| o.has_status).count();
        let status_writers = objs
            .iter()
            .flat_map(|o| &o.managers)
            .filter(|m| &*m.subresource == "status")
            .count();
        if with_status > 0 || status_writers > 0 {
            continue;
        }
        // Managers that wrote the main resource after creating it, and how many objects each touched.
        let mut writers: BTreeMap<&str, usize> = BTreeMap::new();
        for o in &objs {
            for m in o.managers.iter().filter(|m| m.subresource.is_empty()) {
                let later = match (m.time_ms, o.created_ms) {
                    (Some(t), Some(c)) => t > c + AFTER_CREATION_MS,
                    _ => false,
                };
                let observed = o
                    .writers
                    .iter()
                    .any(|w| *w.manager == *m.manager && w.subresource.is_empty() && w.writes > 0);
                if later || observed {
                    *writers.entry(&*m.manager).or_default() += 1;
                }
            }
        }
        // The API server's counters (cluster-wide): main-resource writes and no /status writes at all.
        let (main_writes, status_writes) = apiserver(s).map_or((0.0, 0.0), |src| {
            let writes = |sub: &'static str| {
                src.delta("apiserver_request_total", |x| {
                    x.label("group") == &*group
                        && x.label("resource") == &*plural
                        && x.label("subresource") == sub
                        && matches!(x.label("verb"), "PUT" | "PATCH" | "APPLY")
                        && x.label("code").starts_with('2')
                })
            };
            (writes(""), writes("status"))
        });
        // A write that carries only a status changes nothing the watch can see (the server drops it, the
        // object stays the same), so main-resource writes the API server counted but the watch never saw are
        // the ones that sent only status. Counters are cluster-wide: the watched changes are subtracted.
        let seen: f64 = s
            .objects
            .iter()
            .filter(|o| *o.group == *group && *o.plural == *plural)
            .map(|o| f64::from(o.writes.main))
            .sum();
        let unseen = (main_writes - seen).max(0.0);
        let metrics_say_so = unseen > 0.0 && unseen * 2.0 >= main_writes && status_writes == 0.0;
        let audit = dropped.remove(&(
            group.to_string(),
            plural.to_string(),
            ns.as_deref().map(str::to_string),
        ));
        // Managers that wrote the main resource only name the subject: writing metadata while nobody writes
        // status is not by itself a sign that status was sent.
        if !metrics_say_so && audit.is_none() {
            continue;
        }
        let audit_id = audit.as_ref().and_then(|v| v.first()).map(|g| &g.identity);
        let named: Vec<&str> = writers.keys().copied().collect();
        let subject = match (named.as_slice(), audit_id) {
            ([one], id) => with_identity(manager_subject(one), id),
            (_, Some(id)) => identity_subject(id),
            _ => type_subject(&group, &kind, ns.as_deref()),
        };
        let mut why = Vec::new();
        if !named.is_empty() {
            why.push(format!(
                "field manager{} {} wrote the main resource",
                if named.len() > 1 { "s" } else { "" },
                named
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ));
        }
        if metrics_say_so {
            why.push(format!(
                "the API server counted {main_writes:.0} successful PUT/PATCH of {plural} ({unseen:.0} of them changed \
                 nothing the watch could see) and none of {plural}/status"
            ));
        }
        let dropped_n: u64 = audit.iter().flatten().map(|g| g.status_dropped).sum();
        if dropped_n > 0 {
            why.push(format!(
                "the audit log shows {dropped_n} writes whose `status` the server dropped"
            ));
        }
        let message = format!(
            "status of {} is written through the main resource and dropped: the type has the status subresource, \
             0 of {} objects have a status, nobody wrote /status; {}",
            where_label(&plural, ns.as_deref()),
            objs.len(),
            why.join("; "),
        );
        let mut ev = vec![
            value("objects", objs.len() as f64, "objects"),
            value("objects with status", 0.0, "objects"),
            window(s.window.secs()),
        ];
        if metrics_say_so {
            ev.push(value("main-resource writes", main_writes, "requests"));
            ev.push(value(
                "main-resource writes that changed nothing",
                unseen,
                "requests",
            ));
            ev.push(value("status writes", status_writes, "requests"));
        }
        if dropped_n > 0 {
            ev.push(value("status dropped", dropped_n as f64, "requests"));
        }
        out.extend(finding("CA101", subject, message, ev));
    }

    // Audit-only: types the watch did not cover (offline analysis).
    for ((group, resource, ns), groups) in dropped {
        let mut by_id: BTreeMap<_, (u64, u64)> = BTreeMap::new();
        for g in groups {
            let e = by_id.entry(&g.identity).or_default();
            e.0 += g.status_dropped;
            e.1 += g.status_in_body;
        }
        for (id, (n, sent)) in by_id {
            let message = format!(
                "{} sent `status` in {sent} writes of the main resource of {} ({}); the API server dropped it in {n} \
                 of them (the type has the status subresource: use /status)",
                identity_subject(id).label(),
                where_label(&resource, ns.as_deref()),
                kind_of(s, &group, &resource),
            );
            let secs = s.audit.as_ref().map_or(0.0, |a| a.secs());
            out.extend(finding(
                "CA101",
                identity_subject(id),
                message,
                vec![
                    value("status in request body", sent as f64, "requests"),
                    value("status dropped", n as f64, "requests"),
                    window(secs),
                ],
            ));
        }
    }
    out
}
