//! CA202 live: the same annotation key or status field rewritten again and again with a new timestamp or
//! nonce while generation stays put; named by the field manager that owns the field (and, from an audit log,
//! by user and user agent). Controllers only (`live::actor`): a person stamping an annotation by hand has no
//! reconcile to trigger.

use super::{
    Hits, finding, identity_subject, kind_of, manager_subject, objects_by_type, on_objects,
    per_object_evidence, type_subject, watched_minutes, where_label, with_identity,
};
use crate::config::Config;
use crate::finding::Finding;
use crate::live::actor::Actors;
use crate::live::snapshot::{Identity, Snapshot};
use std::collections::BTreeMap;

/// A change counts as volatile churn when at least half of a field's changes were to timestamp-like values.
fn volatile(changes: u32, volatile_changes: u32) -> bool {
    changes >= 2 && volatile_changes * 2 >= changes
}

pub fn detect(s: &Snapshot, actors: &Actors, cfg: &Config) -> Vec<Finding> {
    let limit = cfg.thresholds.churn_writes_per_object_per_min;
    let mut out = Vec::new();

    // From an audit log: (manager or identity, group, resource, namespace, field) → per-object rates.
    type AuditKey = (String, String, Option<String>, String, Option<String>);
    let mut audit: BTreeMap<AuditKey, (Identity, Hits)> = BTreeMap::new();
    if let Some(a) = &s.audit {
        let minutes = a.secs() / 60.0;
        for o in a
            .objects
            .iter()
            .filter(|o| actors.is_controller(&o.identity))
        {
            for c in o
                .churn
                .iter()
                .filter(|c| volatile(c.changes, c.volatile_changes))
            {
                let key = (
                    o.group.clone(),
                    o.resource.clone(),
                    o.namespace.clone(),
                    c.field.clone(),
                    o.identity.manager.clone(),
                );
                audit
                    .entry(key)
                    .or_insert_with(|| (o.identity.clone(), Vec::new()))
                    .1
                    .push((o.name.clone(), f64::from(c.changes) / minutes, c.changes));
            }
        }
    }

    // From the watch: per type and namespace, per (manager, field).
    for ((group, kind, plural, ns), objs) in objects_by_type(s) {
        let mut by_field: BTreeMap<(Option<String>, String), Hits> = BTreeMap::new();
        for o in &objs {
            for c in o.churn.iter().filter(|c| {
                volatile(c.changes, c.volatile_changes)
                    && c.manager
                        .as_deref()
                        .is_none_or(|m| actors.is_controller_manager(m))
            }) {
                by_field
                    .entry((c.manager.clone(), c.field.clone()))
                    .or_default()
                    .push((
                        o.name.clone(),
                        f64::from(c.changes) / watched_minutes(s, o),
                        c.changes,
                    ));
            }
        }
        for ((manager, field), hits) in by_field {
            let rate = hits.iter().map(|h| h.1).sum::<f64>() / hits.len() as f64;
            if rate < limit {
                continue;
            }
            let audit_match = audit.remove(&(
                group.to_string(),
                plural.to_string(),
                ns.as_deref().map(str::to_string),
                field.clone(),
                manager.clone(),
            ));
            let subject = match &manager {
                Some(m) => with_identity(manager_subject(m), audit_match.as_ref().map(|a| &a.0)),
                None => type_subject(&group, &kind, ns.as_deref()),
            };
            let who = manager.as_deref().map_or_else(
                || "an unknown writer".to_string(),
                |m| format!("field manager `{m}`"),
            );
            let message = format!(
                "`{field}` of {} {} is rewritten with a new timestamp-like value {rate:.1} times per object per \
                 minute (limit {limit}) while generation stays the same, by {who}: each write is a watch event, and \
                 without a generation predicate on its controller's watch (CA201) that event starts the next \
                 reconcile, which writes again: a loop",
                hits.len(),
                where_label(&plural, ns.as_deref()),
            );
            let f = finding(
                &crate::rules::CA202,
                subject,
                message,
                evidence(&hits, rate, s.window.secs()),
            );
            // Named by manager, the finding still has a type and namespace: Events go on these objects.
            out.push(on_objects(f, (&group, &kind, ns.as_deref()), &hits));
        }
    }

    // Audit-only churn (offline, or not seen by the watch).
    if let Some(a) = &s.audit {
        for ((group, resource, ns, field, _), (identity, hits)) in audit {
            let rate = hits.iter().map(|h| h.1).sum::<f64>() / hits.len() as f64;
            if rate < limit {
                continue;
            }
            let message = format!(
                "`{field}` of {} {} ({}) is set to a new timestamp-like value {rate:.1} times per object per minute \
                 (limit {limit}) with generation unchanged, by {}: without a generation predicate on its \
                 controller's watch (CA201) each such write starts the next reconcile, which writes again: a loop",
                hits.len(),
                where_label(&resource, ns.as_deref()),
                kind_of(s, &group, &resource),
                identity_subject(&identity).label(),
            );
            out.push(finding(
                &crate::rules::CA202,
                identity_subject(&identity),
                message,
                evidence(&hits, rate, a.secs()),
            ));
        }
    }
    out
}

fn evidence(hits: &[(String, f64, u32)], rate: f64, secs: f64) -> Vec<crate::finding::Evidence> {
    per_object_evidence(
        hits,
        rate,
        secs,
        ("writes", "rate per object", "rate of", "writes/min"),
    )
}
