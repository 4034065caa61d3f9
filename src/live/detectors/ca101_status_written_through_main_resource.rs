//! CA101 live: status sent through the main resource of a type with the status subresource, which the API
//! server accepts with 200 and drops. Exactly: audit events whose request carried a `status` that the response
//! does not have (confirmed), or a main-resource managedFields entry that owns status fields of an object without
//! a status (shown). Without either it is inferred, and says so, as a warning: objects old enough to have been
//! reconciled, none with a status, nobody writing `/status`, while a controller's metrics count successful
//! reconciles or a controller keeps writing the main resource. The API server's counters of writes that changed
//! nothing corroborate but never decide: a write that sends only status and a write that changes nothing at all
//! (a GitOps tool re-applying an identical manifest) look the same to them. An audit log whose bodies show writes
//! of the type and none carrying `status` rules it out. A type whose controller shows no sign of running is
//! CA102's business, not this rule's.

use super::ca201_reconcile_without_generation_predicate::controllers;
use super::{
    apiserver, finding, identity_subject, kind_of, manager_subject, metrics_subject,
    objects_by_type, on_objects, type_subject, value, where_label, window, with_identity,
};
use crate::config::Config;
use crate::finding::{Finding, Severity, Subject};
use crate::live::actor::Actors;
use crate::live::snapshot::{AuditGroup, ObjectRecord, Snapshot, SourceKind};
use std::collections::BTreeMap;

/// Slack between creation and a managedFields time for the entry to count as a later write (1 s granularity).
const AFTER_CREATION_MS: i64 = 1_000;
/// An object younger than this at the end of the window may simply not have been reconciled yet.
const GRACE_MS: i64 = 5_000;
/// Fewer successful reconciles than this say nothing about a controller.
const MIN_RECONCILES: f64 = 3.0;

/// A type's successful main-resource writes by controllers in an audit log.
#[derive(Debug, Clone, Copy, Default)]
struct Bodies {
    writes: u64,
    /// ... whose request body the log holds,
    with_body: u64,
    /// ... and of those, the ones that carried a `status`.
    with_status: u64,
}

/// Evidence that a controller reconciles these objects while none of them gets a status.
struct Inference {
    why: String,
    subject: Option<Subject>,
    evidence: Vec<crate::finding::Evidence>,
}

/// The inferred case: every object older than [`GRACE_MS`], and the controller's metrics count at least one
/// successful reconcile per object, or one field manager wrote the main resource of at least half of them twice
/// during the window. `sole` says this is the only type that could be the metrics' controller's.
fn infer(
    s: &Snapshot,
    cfg: &Config,
    actors: &Actors,
    objs: &[&ObjectRecord],
    sole: bool,
) -> Option<Inference> {
    let old_enough = objs.iter().all(|o| {
        o.created_ms
            .is_some_and(|c| s.window.end_ms - c >= GRACE_MS)
    });
    if !old_enough {
        return None;
    }
    let names = &cfg.metrics;
    // The controller with the most successful reconciles; only when this type is the only one it can be for.
    // In the window, or else since it started: a controller that reconciled every object once before the window
    // and then had nothing to do (no loop) has still reported success for objects that have no status.
    let enough = |ok: f64| ok >= MIN_RECONCILES && ok >= objs.len() as f64;
    let best = s
        .sources(SourceKind::Controller)
        .flat_map(|src| controllers(src, cfg).into_iter().map(move |c| (src, c)))
        .filter_map(|(src, c)| {
            let ok = |x: &crate::live::snapshot::MetricSample| {
                c.as_ref()
                    .is_none_or(|c| x.label(&names.controller_label) == c.as_str())
                    && x.name == names.reconcile_total
                    && x.label(&names.result_label) != "error"
            };
            let in_window = src.delta(&names.reconcile_total, ok);
            let since_start: f64 = src.scrapes.last().map_or(0.0, |l| {
                l.samples.iter().filter(|x| ok(x)).map(|x| x.value).sum()
            });
            if enough(in_window) {
                Some((in_window, "in the window", src, c))
            } else if enough(since_start) {
                Some((since_start, "since it started", src, c))
            } else {
                None
            }
        })
        .filter(|_| sole)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((ok, when, src, c)) = best {
        let who = c
            .as_ref()
            .map_or_else(|| src.name.clone(), |c| format!("controller `{c}`"));
        return Some(Inference {
            why: format!(
                "{who} counted {ok:.0} successful reconciles {when}; inferred from the objects and the \
                 controller's metrics",
            ),
            subject: Some(metrics_subject(src, c.as_deref())),
            evidence: vec![value("successful reconciles", ok, "reconciles")],
        });
    }
    let mut rewriters: BTreeMap<&str, usize> = BTreeMap::new();
    for o in objs {
        for w in o.writers.iter().filter(|w| {
            w.subresource.is_empty() && w.writes >= 2 && actors.is_controller_manager(&w.manager)
        }) {
            *rewriters.entry(&*w.manager).or_default() += 1;
        }
    }
    let (manager, n) = rewriters.into_iter().max_by_key(|(_, n)| *n)?;
    (n * 2 >= objs.len()).then(|| Inference {
        why: format!(
            "field manager `{manager}` wrote the main resource of {n} of them at least twice in the window; \
             inferred from the objects and their managedFields"
        ),
        subject: Some(manager_subject(manager)),
        evidence: vec![value("objects rewritten", n as f64, "objects")],
    })
}

pub fn detect(s: &Snapshot, actors: &Actors, cfg: &Config) -> Vec<Finding> {
    let mut out = Vec::new();

    // Exact evidence from the audit log, per identity, resource and namespace.
    type Key = (String, String, Option<String>);
    let mut dropped: BTreeMap<Key, Vec<&AuditGroup>> = BTreeMap::new();
    if let Some(a) = &s.audit {
        for g in a
            .groups
            .iter()
            .filter(|g| g.status_dropped > 0 && actors.is_controller(&g.identity))
        {
            dropped
                .entry((g.group.clone(), g.resource.clone(), g.namespace.clone()))
                .or_default()
                .push(g);
        }
    }

    // Per type and namespace, the audit log's successful main-resource writes of controllers.
    let mut audit_bodies: BTreeMap<Key, Bodies> = BTreeMap::new();
    for g in s.audit.iter().flat_map(|a| &a.groups).filter(|g| {
        matches!(g.verb.as_str(), "update" | "patch")
            && g.subresource.is_empty()
            && (200..300).contains(&g.code)
            && actors.is_controller(&g.identity)
    }) {
        let e = audit_bodies
            .entry((g.group.clone(), g.resource.clone(), g.namespace.clone()))
            .or_default();
        e.writes += g.count;
        e.with_body += g.with_body;
        e.with_status += g.status_in_body;
    }

    // Types with the status subresource where no object has a status and nobody wrote /status.
    let candidates: Vec<_> = objects_by_type(s)
        .into_iter()
        .filter(|((group, _, plural, _), objs)| {
            s.resource(group, plural)
                .is_some_and(|rt| rt.status_subresource)
                && !objs.is_empty()
                && !objs.iter().any(|o| o.has_status)
                && !objs
                    .iter()
                    .flat_map(|o| &o.managers)
                    .any(|m| &*m.subresource == "status")
        })
        .collect();
    let sole = candidates.len() == 1;
    for ((group, kind, plural, ns), objs) in candidates {
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
                if (later || observed) && actors.is_controller_manager(&m.manager) {
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
        // object stays the same), and neither does a write that changes nothing at all: the main-resource writes
        // the API server counted but the watch never saw are one or the other. Counters are cluster-wide: the
        // watched changes are subtracted.
        let seen: f64 = s
            .objects
            .iter()
            .filter(|o| *o.group == *group && *o.plural == *plural)
            .map(|o| f64::from(o.writes.main))
            .sum();
        let unseen = (main_writes - seen).max(0.0);
        let counters_agree = unseen > 0.0 && unseen * 2.0 >= main_writes && status_writes == 0.0;
        let key = (
            group.to_string(),
            plural.to_string(),
            ns.as_deref().map(str::to_string),
        );
        let audit = dropped.remove(&key);
        // The audit log's bodies of main-resource writes of this type: if there are some and none carried a
        // status, nothing was dropped.
        let bodies = audit_bodies.get(&key).copied().unwrap_or_default();
        if audit.is_none() && bodies.with_body > 0 && bodies.with_status == 0 {
            continue;
        }
        // The main resource's managedFields entries that own status fields, while the object has none.
        let shown: Vec<(&str, &str)> = objs
            .iter()
            .flat_map(|o| {
                o.managers
                    .iter()
                    .filter(|m| m.subresource.is_empty() && m.owns_status)
                    .map(|m| (&*m.manager, o.name.as_str()))
            })
            .filter(|(m, _)| actors.is_controller_manager(m))
            .collect();
        // With the API server's counters at hand, a window in which nothing wrote the main resource at all
        // shows a controller that never writes status, not one whose status is dropped.
        let nothing_written = apiserver(s).is_some() && main_writes == 0.0;
        let inferred = if audit.is_some() || !shown.is_empty() {
            None
        } else if nothing_written {
            continue;
        } else {
            match infer(s, cfg, actors, &objs, sole) {
                Some(i) => Some(i),
                None => continue,
            }
        };
        let audit_id = audit.as_ref().and_then(|v| v.first()).map(|g| &g.identity);
        let named: Vec<&str> = writers.keys().copied().collect();
        let subject = match (named.as_slice(), audit_id, &inferred) {
            ([one], id, _) => with_identity(manager_subject(one), id),
            (_, Some(id), _) => identity_subject(id),
            (
                _,
                None,
                Some(Inference {
                    subject: Some(subject),
                    ..
                }),
            ) => subject.clone(),
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
        let dropped_n: u64 = audit.iter().flatten().map(|g| g.status_dropped).sum();
        if dropped_n > 0 {
            why.push(format!(
                "the audit log shows {dropped_n} writes whose `status` the server dropped: confirmed by the audit log"
            ));
        } else if let Some((manager, name)) = shown.first() {
            why.push(format!(
                "the main resource's managedFields entry of `{manager}` owns status fields of {} object{} (e.g. \
                 {name}) that have no status: shown by managedFields",
                shown.len(),
                if shown.len() == 1 { "" } else { "s" },
            ));
        }
        if let Some(i) = &inferred {
            why.push(i.why.clone());
        }
        if counters_agree {
            why.push(format!(
                "the API server counted {main_writes:.0} successful PUT/PATCH of {plural}, {unseen:.0} of which changed \
                 nothing the watch could see, and none of {plural}/status (status dropped, or writes that change \
                 nothing: the counters cannot tell them apart)"
            ));
        }
        if dropped_n == 0 {
            why.push(match &s.audit {
                None => "no audit log was read".to_string(),
                Some(_) if bodies.writes == 0 => {
                    format!("the audit log shows no controller writing {plural} to confirm it")
                }
                Some(_) => format!(
                    "the audit log has no request bodies of {plural} writes to confirm it ({} writes logged without \
                     them: its policy logs this type at the Metadata level)",
                    bodies.writes
                ),
            });
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
        if counters_agree {
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
        let is_inferred = inferred.is_some();
        ev.extend(inferred.into_iter().flat_map(|i| i.evidence));
        let mut f = finding(&crate::rules::CA101, subject, message, ev);
        // What rests on inference alone is a warning: a linter that cries wolf at error level gets switched off.
        if is_inferred {
            f.severity = f.severity.min(Severity::Warning);
        }
        // Every one of them is without its status, the most written first.
        let hits: Vec<(String, f64, u32)> = objs
            .iter()
            .map(|o| (o.name.clone(), f64::from(o.writes.main), o.writes.main))
            .collect();
        out.push(on_objects(f, (&group, &kind, ns.as_deref()), &hits));
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
                 of them (the type has the status subresource: use /status); confirmed by the audit log",
                identity_subject(id).label(),
                where_label(&resource, ns.as_deref()),
                kind_of(s, &group, &resource),
            );
            let secs = s.audit.as_ref().map_or(0.0, |a| a.secs());
            out.push(finding(
                &crate::rules::CA101,
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
