//! What live does not report: the `[live]` exclusions of ctrlaudit.toml (namespaces, field managers, kinds) and
//! the `ctrlaudit.io/allow` annotations of objects and CRDs. Applied to the findings after the detectors, from
//! the snapshot alone (it keeps each object's and each CRD's annotation), so a replay excludes the same. Nothing
//! leaves in silence: a note counts what the configuration left out and names each finding an annotation
//! excused, with its reason; an annotation that cannot apply (no reason, an unknown rule) is a note too.

use super::snapshot::{ALLOW_ANNOTATION, ObjectRecord, ResourceType, Snapshot};
use crate::config::{LiveConfig, NameGlobs};
use crate::finding::{Finding, ObjectRef, Subject};
use crate::report::Note;
use std::collections::{BTreeMap, HashMap};

/// One object's (or kind's) allow annotation, read: the rules it excuses, each with its reason.
#[derive(Debug, Default, PartialEq)]
pub struct Allow {
    pub codes: BTreeMap<String, String>,
    /// Why a line of it was not applied.
    pub problems: Vec<String>,
}

/// Reads an annotation's text: one `CODES: reason` per line, rules by code or name, comma-separated.
pub fn parse_allow(text: &str) -> Allow {
    let mut out = Allow::default();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (codes, reason) = line.split_once(':').unwrap_or((line, ""));
        let reason = reason.trim();
        if reason.is_empty() {
            out.problems
                .push(format!("`{line}` has no reason (`CODE: why`): not applied"));
            continue;
        }
        for c in codes.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            match crate::rules::find(c) {
                Some(rule) => {
                    out.codes.insert(rule.code.to_string(), reason.to_string());
                }
                None => out.problems.push(format!(
                    "`{c}` names no rule{}: not applied",
                    crate::rules::did_you_mean(c)
                )),
            }
        }
    }
    out
}

/// Why a finding was not reported.
enum Why {
    Namespace,
    Manager,
    Kind,
    /// Every object it is about (or its kind) excuses the rule; the first reason.
    Annotation(String),
}

/// Removes the findings the configuration and the annotations exclude; returns the notes that say so.
pub fn apply(snapshot: &Snapshot, live: &LiveConfig, findings: &mut Vec<Finding>) -> Vec<Note> {
    let [namespaces, managers, kinds] = live.globs();
    let types: HashMap<(&str, &str), &ResourceType> = snapshot
        .resources
        .iter()
        .map(|r| ((r.group.as_str(), r.kind.as_str()), r))
        .collect();
    let objects: HashMap<(&str, &str, Option<&str>, &str), &ObjectRecord> = snapshot
        .objects
        .iter()
        .map(|o| {
            (
                (&*o.group, &*o.kind, o.namespace.as_deref(), o.name.as_str()),
                o,
            )
        })
        .collect();
    let allows: HashMap<&str, Allow> = snapshot
        .objects
        .iter()
        .filter_map(|o| o.allow.as_deref())
        .chain(snapshot.resources.iter().filter_map(|r| r.allow.as_deref()))
        .map(|t| (t, parse_allow(t)))
        .collect();
    let allowed = |group: &str, kind: &str, ns: Option<&str>, name: &str, code: &str| {
        let of_type = types.get(&(group, kind)).and_then(|r| r.allow.as_deref());
        let of_object = (!name.is_empty())
            .then(|| objects.get(&(group, kind, ns, name)))
            .flatten()
            .and_then(|o| o.allow.as_deref());
        [of_object, of_type]
            .into_iter()
            .flatten()
            .find_map(|t| allows.get(t)?.codes.get(code).cloned())
    };
    let kind_excluded = |group: &str, kind: &str| {
        !kinds.is_empty() && {
            let plural = types.get(&(group, kind)).map(|r| r.plural.as_str());
            let qualified = |name: &str| {
                if group.is_empty() {
                    name.to_string()
                } else {
                    format!("{name}.{group}")
                }
            };
            kinds.matches(kind)
                || kinds.matches(&qualified(kind))
                || plural.is_some_and(|p| kinds.matches(p) || kinds.matches(&qualified(p)))
        }
    };
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut notes = Vec::new();
    findings.retain(|f| {
        let about = about(f);
        let why = if !about.is_empty()
            && about.iter().all(|o| {
                o.namespace
                    .as_deref()
                    .is_some_and(|ns| matches(&namespaces, ns))
            }) {
            Some(Why::Namespace)
        } else if let Subject::Controller {
            manager,
            user,
            user_agent,
            ..
        } = &f.subject
            && [manager, user, user_agent]
                .into_iter()
                .flatten()
                .any(|m| matches(&managers, m))
        {
            Some(Why::Manager)
        } else if !about.is_empty() && about.iter().all(|o| kind_excluded(&o.group, &o.kind)) {
            Some(Why::Kind)
        } else if !about.is_empty() {
            let reasons: Option<Vec<String>> = about
                .iter()
                .map(|o| allowed(&o.group, &o.kind, o.namespace.as_deref(), &o.name, &f.code))
                .collect();
            reasons
                .and_then(|r| r.into_iter().next())
                .map(Why::Annotation)
        } else {
            None
        };
        match why {
            None => true,
            Some(Why::Annotation(reason)) => {
                notes.push(Note {
                    subject: f.subject.label(),
                    message: format!(
                        "{} not reported: excused by its {ALLOW_ANNOTATION} annotation ({reason})",
                        f.code
                    ),
                });
                false
            }
            Some(w) => {
                let table = match w {
                    Why::Namespace => "exclude_namespaces",
                    Why::Manager => "exclude_field_managers",
                    _ => "exclude_kinds",
                };
                *counts.entry(table).or_default() += 1;
                false
            }
        }
    });
    if !counts.is_empty() {
        let n: usize = counts.values().sum();
        let by: Vec<String> = counts.iter().map(|(t, c)| format!("{t}: {c}")).collect();
        notes.push(Note {
            subject: "ctrlaudit.toml".into(),
            message: format!(
                "{n} finding{} not reported by [live] ({})",
                if n == 1 { "" } else { "s" },
                by.join(", ")
            ),
        });
    }
    // An annotation that cannot apply is said once per text, with how many objects carry it.
    let mut bad: BTreeMap<&str, (usize, String)> = BTreeMap::new();
    for o in &snapshot.objects {
        if let Some(t) = o.allow.as_deref()
            && allows.get(t).is_some_and(|a| !a.problems.is_empty())
        {
            bad.entry(t).or_insert_with(|| (0, object_label(o))).0 += 1;
        }
    }
    for r in &snapshot.resources {
        if let Some(t) = r.allow.as_deref()
            && allows.get(t).is_some_and(|a| !a.problems.is_empty())
        {
            bad.entry(t)
                .or_insert_with(|| (0, format!("CRD {}", r.qualified())))
                .0 += 1;
        }
    }
    for (text, (n, first)) in bad {
        let problems = allows
            .get(text)
            .map(|a| a.problems.join("; "))
            .unwrap_or_default();
        let more = if n > 1 {
            format!(" and {} more", n - 1)
        } else {
            String::new()
        };
        notes.push(Note {
            subject: format!("{first}{more}"),
            message: format!("{ALLOW_ANNOTATION}: {problems}"),
        });
    }
    notes
}

fn matches(globs: &NameGlobs, name: &str) -> bool {
    !globs.is_empty() && globs.matches(name)
}

/// The objects (or, with an empty name, resource types) a finding is about: its subject and the objects it
/// names.
fn about(f: &Finding) -> Vec<ObjectRef> {
    let mut out = f.objects.clone();
    if let Subject::Object {
        group,
        kind,
        namespace,
        name,
    } = &f.subject
    {
        let me = ObjectRef {
            group: group.clone(),
            kind: kind.clone(),
            namespace: namespace.clone(),
            name: name.clone(),
        };
        if !out.contains(&me) {
            out.push(me);
        }
    }
    out
}

/// The object as findings name their subjects.
fn object_label(o: &ObjectRecord) -> String {
    Subject::Object {
        group: o.group.to_string(),
        kind: o.kind.to_string(),
        namespace: o.namespace.as_deref().map(str::to_string),
        name: o.name.clone(),
    }
    .label()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::finding::{Lens, Severity};
    use std::sync::Arc;

    fn widget(ns: &str, name: &str, allow: Option<&str>) -> ObjectRecord {
        ObjectRecord {
            group: Arc::from("bench.ctrlaudit.io"),
            kind: Arc::from("Widget"),
            plural: Arc::from("widgets"),
            namespace: Some(Arc::from(ns)),
            name: name.into(),
            allow: allow.map(str::to_string),
            ..ObjectRecord::default()
        }
    }

    fn snapshot(objects: Vec<ObjectRecord>, crd_allow: Option<&str>) -> Snapshot {
        Snapshot {
            resources: vec![ResourceType {
                group: "bench.ctrlaudit.io".into(),
                kind: "Widget".into(),
                plural: "widgets".into(),
                allow: crd_allow.map(str::to_string),
                ..ResourceType::default()
            }],
            objects,
            ..Snapshot::default()
        }
    }

    fn on(code: &str, subject: Subject, objects: &[(&str, &str)]) -> Finding {
        Finding {
            code: code.into(),
            severity: Severity::Warning,
            lens: Lens::Live,
            message: "m".into(),
            subject,
            evidence: Vec::new(),
            help: String::new(),
            objects: objects
                .iter()
                .map(|(ns, name)| ObjectRef {
                    group: "bench.ctrlaudit.io".into(),
                    kind: "Widget".into(),
                    namespace: Some(ns.to_string()),
                    name: name.to_string(),
                })
                .collect(),
            when: None,
        }
    }

    fn controller(manager: &str) -> Subject {
        Subject::Controller {
            manager: Some(manager.into()),
            user: None,
            user_agent: Some(format!("{manager}/1.0")),
            actor: None,
        }
    }

    #[test]
    fn the_annotation_names_rules_by_code_or_name_and_needs_a_reason() {
        let a = parse_allow("CA202, polling-requeue: vendor API\nCA999: x\nCA301\n");
        assert_eq!(
            a.codes.keys().map(String::as_str).collect::<Vec<_>>(),
            ["CA202", "CA203"]
        );
        assert_eq!(a.codes["CA202"], "vendor API");
        assert_eq!(a.problems.len(), 2, "{:?}", a.problems);
    }

    #[test]
    fn an_annotation_excuses_a_finding_only_when_every_object_it_is_about_does() {
        let snap = snapshot(
            vec![
                widget("shop", "a", Some("CA202: stamped by the vendor's webhook")),
                widget("shop", "b", None),
            ],
            None,
        );
        let mut findings = vec![
            on("CA202", controller("op"), &[("shop", "a")]),
            on("CA202", controller("op"), &[("shop", "a"), ("shop", "b")]),
            on("CA201", controller("op"), &[("shop", "a")]),
        ];
        let notes = apply(&snap, &LiveConfig::default(), &mut findings);
        assert_eq!(findings.len(), 2);
        assert!(
            findings
                .iter()
                .all(|f| f.code == "CA201" || f.objects.len() == 2)
        );
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].message.contains("stamped by the vendor's webhook"),
            "{notes:?}"
        );
        // On the CRD, it covers every object of the kind.
        let snap = snapshot(
            vec![widget("shop", "b", None)],
            Some("CA201: drift repair by design"),
        );
        let mut findings = vec![on("CA201", controller("op"), &[("shop", "b")])];
        apply(&snap, &LiveConfig::default(), &mut findings);
        assert!(findings.is_empty());
    }

    #[test]
    fn configuration_excludes_namespaces_managers_and_kinds_and_counts_them() {
        let snap = snapshot(vec![], None);
        let live = LiveConfig {
            exclude_namespaces: vec!["kube-*".into()],
            exclude_field_managers: vec!["helm".into()],
            exclude_kinds: vec!["widgets.bench.ctrlaudit.io".into()],
        };
        let other_kind = Finding {
            objects: vec![ObjectRef {
                group: "apps".into(),
                kind: "Deployment".into(),
                namespace: Some("shop".into()),
                name: "d".into(),
            }],
            ..on("CA202", controller("op"), &[])
        };
        let mut findings = vec![
            on("CA202", controller("op"), &[("kube-system", "a")]),
            on("CA202", controller("helm"), &[]),
            on("CA202", controller("op"), &[("shop", "a")]),
            other_kind.clone(),
        ];
        let notes = apply(&snap, &live, &mut findings);
        assert_eq!(findings, vec![other_kind]);
        assert_eq!(notes.len(), 1);
        assert_eq!(
            notes[0].message,
            "3 findings not reported by [live] (exclude_field_managers: 1, exclude_kinds: 1, exclude_namespaces: 1)"
        );
        // `Kind` and `Kind.group` name the kind too; nothing is excluded by an empty configuration.
        for kind in ["Widget", "Widget.bench.ctrlaudit.io"] {
            let live = LiveConfig {
                exclude_kinds: vec![kind.into()],
                ..LiveConfig::default()
            };
            let mut f = vec![on("CA202", controller("op"), &[("shop", "a")])];
            apply(&snap, &live, &mut f);
            assert!(f.is_empty(), "{kind}");
        }
        let mut f = vec![on("CA202", controller("op"), &[("shop", "a")])];
        assert!(apply(&snap, &LiveConfig::default(), &mut f).is_empty());
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn an_annotation_that_cannot_apply_is_a_note_once_per_text() {
        let snap = snapshot(
            vec![
                widget("shop", "a", Some("CA202")),
                widget("shop", "b", Some("CA202")),
            ],
            None,
        );
        let mut findings = vec![on("CA202", controller("op"), &[("shop", "a")])];
        let notes = apply(&snap, &LiveConfig::default(), &mut findings);
        assert_eq!(findings.len(), 1, "no reason: not applied");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(
            notes[0].subject,
            "Widget.bench.ctrlaudit.io shop/a and 1 more"
        );
        assert!(notes[0].message.contains("no reason"), "{notes:?}");
    }
}
