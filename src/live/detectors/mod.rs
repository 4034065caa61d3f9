//! The live detectors: one file per rule, each a pure function from a [`Snapshot`] and the configuration to
//! findings. They never touch the cluster, so the same code runs on a recording (`--replay`) and in tests.

pub mod ca101_status_written_through_main_resource;
pub mod ca102_convergence_lag;
pub mod ca201_reconcile_without_generation_predicate;
pub mod ca202_volatile_value_written_every_reconcile;
pub mod ca203_polling_requeue;
pub mod ca206_field_ownership_fight;
pub mod ca301_replace_without_conflict_handling;
pub mod ca302_unbounded_reconcile_concurrency;
pub mod ca303_uncached_read_in_reconcile;
pub mod ca401_controller_per_tenant;
pub mod ca402_unbounded_metric_label;
pub mod ca403_write_rate_near_apiserver_ceiling;

use crate::config::Config;
use crate::finding::{Evidence, Finding, Lens, Subject, sort_findings};
use crate::live::actor::Actors;
use crate::live::snapshot::{Identity, MetricSource, ObjectRecord, Snapshot, SourceKind};
use crate::rules::Rule;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A detector: snapshot, its actors (classified once per window) and configuration in, findings out.
pub type Detector = fn(&Snapshot, &Actors, &Config) -> Vec<Finding>;

/// Every live detector, by rule code.
pub const DETECTORS: &[(&str, Detector)] = &[
    (
        crate::rules::CA101.code,
        ca101_status_written_through_main_resource::detect,
    ),
    (crate::rules::CA102.code, ca102_convergence_lag::detect),
    (
        crate::rules::CA201.code,
        ca201_reconcile_without_generation_predicate::detect,
    ),
    (
        crate::rules::CA202.code,
        ca202_volatile_value_written_every_reconcile::detect,
    ),
    (crate::rules::CA203.code, ca203_polling_requeue::detect),
    (
        crate::rules::CA206.code,
        ca206_field_ownership_fight::detect,
    ),
    (
        crate::rules::CA301.code,
        ca301_replace_without_conflict_handling::detect,
    ),
    (
        crate::rules::CA302.code,
        ca302_unbounded_reconcile_concurrency::detect,
    ),
    (
        crate::rules::CA303.code,
        ca303_uncached_read_in_reconcile::detect,
    ),
    (
        crate::rules::CA401.code,
        ca401_controller_per_tenant::detect,
    ),
    (
        crate::rules::CA402.code,
        ca402_unbounded_metric_label::detect,
    ),
    (
        crate::rules::CA403.code,
        ca403_write_rate_near_apiserver_ceiling::detect,
    ),
];

/// Runs every detector; findings at their rules' default levels (see [`crate::policy`]), in the one
/// deterministic order.
pub fn run_all(snapshot: &Snapshot, cfg: &Config) -> Vec<Finding> {
    run_all_with(snapshot, &Actors::of(snapshot), cfg)
}

/// [`run_all`] with the window's actors already classified (`live` also needs them for its note).
pub fn run_all_with(snapshot: &Snapshot, actors: &Actors, cfg: &Config) -> Vec<Finding> {
    let mut out: Vec<Finding> = DETECTORS
        .iter()
        .flat_map(|(_, detect)| detect(snapshot, actors, cfg))
        .collect();
    // Each controller subject says what live took it for, and why (see `live::actor`).
    for f in &mut out {
        let kind = actors.subject(&f.subject);
        if let Subject::Controller { actor, .. } = &mut f.subject {
            *actor = kind;
        }
    }
    sort_findings(&mut out);
    out
}

/// A finding of `rule` at its default severity (the policy step sets the configured one), with the
/// bench help line.
pub(crate) fn finding(
    rule: &'static Rule,
    subject: Subject,
    message: String,
    evidence: Vec<Evidence>,
) -> Finding {
    let severity = rule.default_severity;
    let help = if rule.bench_pair.is_some() {
        format!(
            "measure what it costs on this cluster: kubectl ctrlaudit bench --rule {}; details: kubectl ctrlaudit rules {}",
            rule.code, rule.code
        )
    } else {
        format!("details: kubectl ctrlaudit rules {}", rule.code)
    };
    Finding {
        code: rule.code.to_string(),
        severity,
        lens: Lens::Live,
        message,
        subject,
        evidence,
        help,
        objects: Vec::new(),
        when: None,
    }
}

/// Objects with a rate per minute: (name, rate, count).
pub(crate) type Hits = Vec<(String, f64, u32)>;

/// `hits` sorted by rate, the highest first (ties by name, so output is deterministic).
fn by_rate(hits: &[(String, f64, u32)]) -> Vec<&(String, f64, u32)> {
    let mut top: Vec<&(String, f64, u32)> = hits.iter().collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top
}

/// The evidence of a rate per object: how many objects, their mean `rate`, the total `count`, the window, and the
/// three highest rates. `count` names what is counted (`writes`), `per_object` the mean, `of` the top three's
/// prefix (`rate of w-4`), `unit` the rate's unit.
pub(crate) fn per_object_evidence(
    hits: &[(String, f64, u32)],
    rate: f64,
    secs: f64,
    (count, per_object, of, unit): (&str, &str, &str, &str),
) -> Vec<Evidence> {
    let mut ev = vec![
        value("objects", hits.len() as f64, "objects"),
        value(per_object, rate, unit),
        value(
            count,
            hits.iter().map(|h| f64::from(h.2)).sum::<f64>(),
            count,
        ),
        window(secs),
    ];
    ev.extend(
        by_rate(hits)
            .into_iter()
            .take(3)
            .map(|h| value(format!("{of} {}", h.0), h.1, unit)),
    );
    ev
}

/// Names `hits`' objects (name, rate, count) of one type and namespace on the finding, the highest rate first
/// (see [`Finding::objects`]).
pub(crate) fn on_objects(
    mut f: Finding,
    (group, kind, ns): (&str, &str, Option<&str>),
    hits: &[(String, f64, u32)],
) -> Finding {
    f.objects = by_rate(hits)
        .into_iter()
        .take(crate::finding::MAX_OBJECTS)
        .map(|h| crate::finding::ObjectRef {
            group: group.to_string(),
            kind: kind.to_string(),
            namespace: ns.map(str::to_string),
            name: h.0.clone(),
        })
        .collect();
    f
}

pub(crate) fn value(name: impl Into<String>, value: f64, unit: &str) -> Evidence {
    Evidence::Value {
        name: name.into(),
        value: round(value),
        unit: unit.to_string(),
    }
}

/// Four significant decimals: enough for rates, stable in fixtures.
pub(crate) fn round(v: f64) -> f64 {
    if v.is_finite() {
        // `+ 0.0` turns -0 (an empty float sum) into 0.
        (v * 10_000.0).round() / 10_000.0 + 0.0
    } else {
        0.0
    }
}

/// The evidence every finding carries: how long the window was.
pub(crate) fn window(secs: f64) -> Evidence {
    value("window", secs, "s")
}

/// A whole resource type, optionally within a namespace.
pub(crate) fn type_subject(group: &str, kind: &str, namespace: Option<&str>) -> Subject {
    Subject::Object {
        group: group.to_string(),
        kind: kind.to_string(),
        namespace: namespace.map(str::to_string),
        name: String::new(),
    }
}

pub(crate) fn manager_subject(manager: &str) -> Subject {
    Subject::Controller {
        manager: Some(manager.to_string()),
        user: None,
        user_agent: None,
        actor: None,
    }
}

pub(crate) fn identity_subject(id: &Identity) -> Subject {
    let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Subject::Controller {
        manager: id.manager.clone(),
        user: nonempty(&id.user),
        user_agent: nonempty(&id.user_agent),
        actor: None,
    }
}

/// A controller known only by its metrics endpoint (and the `controller` label, when it has one).
pub(crate) fn metrics_subject(source: &MetricSource, controller: Option<&str>) -> Subject {
    Subject::Controller {
        manager: controller.filter(|c| !c.is_empty()).map(str::to_string),
        user: None,
        user_agent: Some(format!("metrics: {}", source.name)),
        actor: None,
    }
}

/// Adds the audit log's user and user agent to a subject named by field manager.
pub(crate) fn with_identity(subject: Subject, id: Option<&Identity>) -> Subject {
    match (subject, id) {
        (
            Subject::Controller {
                manager,
                user,
                user_agent,
                actor,
            },
            Some(id),
        ) => Subject::Controller {
            manager: manager.or_else(|| id.manager.clone()),
            user: user.or_else(|| (!id.user.is_empty()).then(|| id.user.clone())),
            user_agent: user_agent
                .or_else(|| (!id.user_agent.is_empty()).then(|| id.user_agent.clone())),
            actor,
        },
        (s, _) => s,
    }
}

/// The kind of a resource plural, from the discovered types (the plural itself when unknown).
pub(crate) fn kind_of(s: &Snapshot, group: &str, plural: &str) -> String {
    s.resource(group, plural)
        .map_or_else(|| plural.to_string(), |r| r.kind.clone())
}

/// Live objects (not deleted) grouped by resource type and namespace: (group, kind, plural, namespace).
pub(crate) type TypeKey = (Arc<str>, Arc<str>, Arc<str>, Option<Arc<str>>);

pub(crate) fn objects_by_type(s: &Snapshot) -> BTreeMap<TypeKey, Vec<&ObjectRecord>> {
    let mut m: BTreeMap<TypeKey, Vec<&ObjectRecord>> = BTreeMap::new();
    for o in s.objects.iter().filter(|o| !o.deleted) {
        m.entry((
            o.group.clone(),
            o.kind.clone(),
            o.plural.clone(),
            o.namespace.clone(),
        ))
        .or_default()
        .push(o);
    }
    m
}

/// The live objects a controller reconciles, and how they were told apart: those of the kind it is named after
/// (controller-runtime names a controller after its `For` kind), else those of the kinds it writes under its name
/// as field manager, else those of the one type watched, else every object in scope (said so).
pub(crate) fn reconciled_by<'a>(
    s: &'a Snapshot,
    controller: Option<&str>,
) -> (Vec<&'a ObjectRecord>, String) {
    let live: Vec<&ObjectRecord> = s.objects.iter().filter(|o| !o.deleted).collect();
    if let Some(c) = controller.filter(|c| !c.is_empty()) {
        let of_kind: Vec<&ObjectRecord> = live
            .iter()
            .copied()
            .filter(|o| o.kind.eq_ignore_ascii_case(c) || o.plural.eq_ignore_ascii_case(c))
            .collect();
        if !of_kind.is_empty() {
            let why = format!("of kind {}", live_kind(&of_kind));
            return (of_kind, why);
        }
        // A controller reconciles every object of its kind, also the ones it has not written (yet), in the
        // namespaces it works in (a controller per namespace, as in the demo, is not charged for its neighbour's).
        let mut kinds: Vec<(&str, &str, Option<&str>)> = live
            .iter()
            .filter(|o| {
                o.managers.iter().any(|m| &*m.manager == c)
                    || o.writers.iter().any(|w| w.manager == c)
            })
            .map(|o| (&*o.group, &*o.kind, o.namespace.as_deref()))
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        if !kinds.is_empty() {
            let of_kinds: Vec<&ObjectRecord> = live
                .iter()
                .copied()
                .filter(|o| kinds.contains(&(&*o.group, &*o.kind, o.namespace.as_deref())))
                .collect();
            let mut names: Vec<&str> = kinds.iter().map(|k| k.1).collect();
            names.dedup();
            let namespaces = kinds.iter().filter(|k| k.2.is_some()).count();
            let where_ = match namespaces {
                0 => String::new(),
                1 => " in its namespace".to_string(),
                n => format!(" in its {n} namespaces"),
            };
            return (
                of_kinds,
                format!(
                    "its {}{where_}, the kind field manager `{c}` writes",
                    names.join(", ")
                ),
            );
        }
    }
    let mut types: Vec<(&str, &str)> = live.iter().map(|o| (&*o.group, &*o.kind)).collect();
    types.sort_unstable();
    types.dedup();
    if types.len() == 1 {
        let why = format!("every {} in scope, the one type watched", live_kind(&live));
        return (live, why);
    }
    (
        live,
        "every object in scope: none is told apart as its own".to_string(),
    )
}

fn live_kind(objs: &[&ObjectRecord]) -> String {
    objs.first()
        .map_or_else(String::new, |o| o.kind.to_string())
}

/// Minutes an object was under watch during the window (at least one second's worth).
pub(crate) fn watched_minutes(s: &Snapshot, o: &ObjectRecord) -> f64 {
    let from = o.first_seen_ms.max(s.window.start_ms);
    ((s.window.end_ms - from).max(1000) as f64) / 60_000.0
}

/// "widgets in ns" / "widgets".
pub(crate) fn where_label(plural: &str, ns: Option<&str>) -> String {
    match ns {
        Some(ns) => format!("{plural} in {ns}"),
        None => plural.to_string(),
    }
}

/// The API server source with at least two scrapes, if any.
pub(crate) fn apiserver(s: &Snapshot) -> Option<&MetricSource> {
    s.sources(SourceKind::Apiserver).next()
}

/// Write verbs as `apiserver_request_total` spells them.
pub(crate) const WRITE_VERBS: &[&str] = &[
    "POST",
    "PUT",
    "PATCH",
    "APPLY",
    "DELETE",
    "DELETECOLLECTION",
];

/// Percent with no needless decimals.
pub(crate) fn pct(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_live_rule_has_a_detector() {
        for r in crate::rules::RULES
            .iter()
            .filter(|r| r.has_lens(Lens::Live))
        {
            assert!(
                DETECTORS.iter().any(|(c, _)| *c == r.code),
                "no live detector for {}",
                r.code
            );
        }
        for (c, _) in DETECTORS {
            assert!(crate::rules::find(c).unwrap().has_lens(Lens::Live), "{c}");
        }
    }

    #[test]
    fn empty_snapshot_gives_nothing() {
        assert!(run_all(&Snapshot::default(), &Config::default()).is_empty());
    }
}
