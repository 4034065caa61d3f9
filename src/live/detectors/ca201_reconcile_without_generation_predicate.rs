//! CA201 live: a reconcile storm. Either the controller's own metrics show reconciles far above what spec
//! changes explain, or a manager that writes an object's status also keeps rewriting the object with no spec
//! change, so each of its writes comes back as the event that triggers its next reconcile. Controllers only
//! (`live::actor`), and each judged per object it reconciles: the objects of its kind or that it writes, not every
//! object in scope (under `-A` a real storm would hide below the threshold).

use super::{
    Hits, finding, manager_subject, metrics_subject, objects_by_type, on_objects, reconciled_by,
    value, watched_minutes, where_label, window, with_identity,
};
use crate::config::Config;
use crate::finding::Finding;
use crate::live::actor::Actors;
use crate::live::snapshot::{Identity, Snapshot, SourceKind};
use std::collections::BTreeMap;

/// Reconciles per object beyond this multiple of (objects + spec changes) is a storm, not catch-up.
const STORM_FACTOR: f64 = 3.0;
/// Above this share of `requeue_after` results it is polling (CA203), not a storm.
const POLLING_SHARE: f64 = 0.5;

/// `hits`: (object, writes per minute, writes) of each object; `rate` their mean.
fn evidence(hits: &Hits, rate: f64, secs: f64) -> Vec<crate::finding::Evidence> {
    vec![
        value("objects", hits.len() as f64, "objects"),
        value("writes without spec change per object", rate, "writes/min"),
        value(
            "writes",
            hits.iter().map(|h| f64::from(h.2)).sum(),
            "writes",
        ),
        window(secs),
    ]
}

pub fn detect(s: &Snapshot, actors: &Actors, cfg: &Config) -> Vec<Finding> {
    let limit = cfg.thresholds.churn_writes_per_object_per_min;
    let mut out = Vec::new();

    // Audit identities by field manager, to add user and user agent to a manager's finding.
    let audit_ids: BTreeMap<String, Identity> = s
        .audit
        .iter()
        .flat_map(|a| &a.objects)
        .filter_map(|o| Some((o.identity.manager.clone()?, o.identity.clone())))
        .collect();

    // Objects: a manager with no-spec-change writes of the main resource that also writes status.
    for ((group, kind, plural, ns), objs) in objects_by_type(s) {
        let mut per_manager: BTreeMap<&str, Hits> = BTreeMap::new();
        for o in &objs {
            let status_writers: Vec<&str> = o
                .managers
                .iter()
                .filter(|m| &*m.subresource == "status")
                .map(|m| &*m.manager)
                .chain(
                    o.writers
                        .iter()
                        .filter(|w| w.subresource == "status")
                        .map(|w| w.manager.as_str()),
                )
                .collect();
            for w in o.writers.iter().filter(|w| w.subresource.is_empty()) {
                if !status_writers.contains(&w.manager.as_str())
                    || !actors.is_controller_manager(&w.manager)
                {
                    continue;
                }
                // Writes of the main resource by this manager are at most the object's no-spec-change writes.
                let n = w.writes.min(o.writes.no_spec_change);
                if n >= 2 {
                    per_manager.entry(w.manager.as_str()).or_default().push((
                        o.name.clone(),
                        f64::from(n) / watched_minutes(s, o),
                        n,
                    ));
                }
            }
        }
        for (manager, hits) in per_manager {
            let rate = hits.iter().map(|h| h.1).sum::<f64>() / hits.len() as f64;
            if rate < limit {
                continue;
            }
            let message = format!(
                "field manager `{manager}` rewrote {} {} {rate:.1} times per object per minute with no spec change \
                 (limit {limit}), and it also writes their status: without a generation predicate each of its own \
                 writes triggers its next reconcile",
                hits.len(),
                where_label(&plural, ns.as_deref()),
            );
            let subject = with_identity(manager_subject(manager), audit_ids.get(manager));
            let f = finding(
                &crate::rules::CA201,
                subject,
                message,
                evidence(&hits, rate, s.window.secs()),
            );
            out.push(on_objects(f, (&group, &kind, ns.as_deref()), &hits));
        }
    }

    // Audit log: an identity that rewrites objects with no spec change and also writes their status.
    let reported: Vec<String> = out
        .iter()
        .filter_map(|f| match &f.subject {
            crate::finding::Subject::Controller { manager, .. } => manager.clone(),
            _ => None,
        })
        .collect();
    if let Some(a) = &s.audit {
        let minutes = a.secs() / 60.0;
        type Key = (Identity, String, String, Option<String>);
        let mut per_id: BTreeMap<Key, Hits> = BTreeMap::new();
        // A client that writes status, under this fieldManager or another one (or none): joined by user and
        // user agent, since kube-rs's status writes and its metadata writes may carry different managers.
        let status_by_ua: Vec<(String, String)> = a
            .objects
            .iter()
            .filter(|o| o.status_writes > 0)
            .map(|o| (o.identity.user.clone(), o.identity.user_agent.clone()))
            .collect();
        for o in &a.objects {
            if o.no_spec_change < 2 || !actors.is_controller(&o.identity) {
                continue;
            }
            if o.identity
                .manager
                .as_ref()
                .is_some_and(|m| reported.contains(m))
            {
                continue;
            }
            let writes_status = o.status_writes > 0
                || status_by_ua.contains(&(o.identity.user.clone(), o.identity.user_agent.clone()));
            if !writes_status {
                continue;
            }
            per_id
                .entry((
                    o.identity.clone(),
                    o.group.clone(),
                    o.resource.clone(),
                    o.namespace.clone(),
                ))
                .or_default()
                .push((
                    o.name.clone(),
                    f64::from(o.no_spec_change) / minutes,
                    o.no_spec_change,
                ));
        }
        for ((id, group, resource, ns), hits) in per_id {
            let rate = hits.iter().map(|h| h.1).sum::<f64>() / hits.len() as f64;
            if rate < limit {
                continue;
            }
            let message = format!(
                "{} rewrote {} {} {rate:.1} times per object per minute with generation unchanged (limit {limit}) \
                 and also writes their status: its own writes keep triggering its reconciles (audit log)",
                super::identity_subject(&id).label(),
                hits.len(),
                where_label(&resource, ns.as_deref()),
            );
            let f = finding(
                &crate::rules::CA201,
                super::identity_subject(&id),
                message,
                evidence(&hits, rate, a.secs()),
            );
            let kind = super::kind_of(s, &group, &resource);
            out.push(on_objects(f, (&group, &kind, ns.as_deref()), &hits));
        }
    }

    // Controller metrics: reconciles far above its objects + their spec changes, and not polling.
    let names = &cfg.metrics;
    for src in s.sources(SourceKind::Controller) {
        for controller in controllers(src, cfg) {
            let controller = controller.as_ref();
            let (objs, whose) = reconciled_by(s, controller.map(String::as_str));
            let objects = objs.len() as f64;
            // A storm is made of writes: reconciles while no object changed at all are polling (CA203).
            let no_spec_writes: u32 = objs.iter().map(|o| o.writes.no_spec_change).sum();
            if objects == 0.0 || no_spec_writes == 0 {
                continue;
            }
            let spec_changes: f64 = objs
                .iter()
                .map(|o| {
                    let created_in_window = o.created_ms.is_some_and(|c| c >= s.window.start_ms);
                    f64::from(o.writes.spec) + f64::from(u8::from(created_in_window))
                })
                .sum();
            let of = |x: &crate::live::snapshot::MetricSample| {
                controller.is_none_or(|c| x.label(&names.controller_label) == c.as_str())
            };
            let total = src.delta(&names.reconcile_total, of);
            let requeue = src.delta(&names.reconcile_total, |x| {
                of(x) && x.label(&names.result_label) == names.requeue_after_result
            });
            let secs = src.span_secs();
            if total < 10.0 || secs <= 0.0 || requeue / total >= POLLING_SHARE {
                continue;
            }
            let per_object_per_min = total / objects / (secs / 60.0);
            if total < STORM_FACTOR * (objects + spec_changes) || per_object_per_min < limit {
                continue;
            }
            let message = format!(
                "{} reconciled {total:.0} times in {secs:.0} s for {objects:.0} objects ({whose}) and \
                 {spec_changes:.0} spec changes ({per_object_per_min:.1} reconciles per object per minute): \
                 reconciles are triggered by writes that change no spec, i.e. there is no generation predicate",
                controller.map_or_else(|| src.name.clone(), |c| format!("controller `{c}`")),
            );
            let f = finding(
                &crate::rules::CA201,
                metrics_subject(src, controller.map(String::as_str)),
                message,
                vec![
                    value("reconciles", total, "reconciles"),
                    value("objects", objects, "objects"),
                    value("spec changes", spec_changes, "changes"),
                    value(
                        "reconciles per object",
                        per_object_per_min,
                        "reconciles/min",
                    ),
                    window(secs),
                ],
            );
            // Named on its most rewritten objects of the first kind (where Events go, and `--serve`'s kind).
            let first = objs
                .first()
                .map(|o| (o.group.clone(), o.kind.clone(), o.namespace.clone()));
            let hits: Hits = objs
                .iter()
                .filter(|o| {
                    first
                        .as_ref()
                        .is_some_and(|k| (&k.0, &k.1, &k.2) == (&o.group, &o.kind, &o.namespace))
                })
                .filter(|o| o.writes.no_spec_change > 0)
                .map(|o| {
                    (
                        o.name.clone(),
                        f64::from(o.writes.no_spec_change),
                        o.writes.no_spec_change,
                    )
                })
                .collect();
            out.push(match &first {
                Some((g, k, ns)) => on_objects(f, (g, k, ns.as_deref()), &hits),
                None => f,
            });
        }
    }
    out
}

/// The values of the controller label on the reconcile counter, or one `None` when it has no such label.
pub(crate) fn controllers(
    src: &crate::live::snapshot::MetricSource,
    cfg: &Config,
) -> Vec<Option<String>> {
    let names = &cfg.metrics;
    let v = src.label_values(&names.reconcile_total, &names.controller_label);
    if v.is_empty() {
        vec![None]
    } else {
        v.into_iter().map(Some).collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::live::snapshot::{ObjectRecord, WriterCount};

    fn obj(kind: &str, ns: &str, name: &str, writer: Option<&str>) -> ObjectRecord {
        ObjectRecord {
            group: "example.com".into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()).into(),
            namespace: Some(ns.into()),
            name: name.into(),
            writers: writer
                .map(|w| WriterCount {
                    manager: w.into(),
                    subresource: "status".into(),
                    writes: 2,
                })
                .into_iter()
                .collect(),
            ..ObjectRecord::default()
        }
    }

    /// The demo's shape: one controller per namespace, each with its Widgets, beside ConfigMaps watched in scope.
    #[test]
    fn a_controller_is_judged_on_its_kind_in_its_namespaces() {
        let mut objects = vec![
            obj("Widget", "bad", "w-0", Some("looper")),
            obj("Widget", "bad", "w-1", None),
            obj("Widget", "good", "w-0", Some("good")),
            obj("Widget", "good", "w-1", Some("good")),
        ];
        objects.extend((0..50).map(|i| obj("ConfigMap", "bad", &format!("cm-{i}"), None)));
        let s = Snapshot {
            objects,
            ..Snapshot::default()
        };
        let (objs, why) = reconciled_by(&s, Some("looper"));
        assert_eq!(objs.len(), 2, "{why}");
        assert!(why.contains("its Widget in its namespace"), "{why}");
        // Named after its kind, as controller-runtime names it: every Widget.
        let (objs, why) = reconciled_by(&s, Some("widget"));
        assert_eq!((objs.len(), why.as_str()), (4, "of kind Widget"));
        // Nothing to tell its objects apart by: every object in scope, and said so.
        let (objs, why) = reconciled_by(&s, None);
        assert_eq!(objs.len(), 54);
        assert!(why.contains("every object in scope"), "{why}");
    }
}
