//! `live --serve --events`: a Kubernetes Event on each object a finding is newly seen on, so that `kubectl describe`
//! shows it beside the object. The only write `live` ever makes: opt-in, behind its own flag and its own RBAC
//! (`deploy/events-rbac.yaml`); without the flag nothing here runs.
//!
//! [`plan`] decides (pure); [`post`] writes.

use crate::finding::{Finding, ObjectRef, Severity};
use crate::live::snapshot::ResourceType;
use crate::report::Note;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use std::collections::BTreeSet;

/// The Events' `source.component` and `reportingComponent`.
pub const COMPONENT: &str = "kubectl-ctrlaudit";
/// An Event's message is cut to this many bytes (the API server refuses more than 1 KiB).
const MAX_MESSAGE: usize = 1000;

/// A rule seen on an object: what an Event is posted for once, until it goes away.
pub type Seen = BTreeSet<(String, ObjectRef)>;

/// One Event to post.
#[derive(Debug, Clone, PartialEq)]
pub struct EventPlan {
    pub object: ObjectRef,
    /// The rule code, e.g. `CA202`.
    pub reason: String,
    pub message: String,
    /// `Warning` for error and warning findings, `Normal` for info.
    pub warning: bool,
}

/// The Events for `findings` whose (rule, object) was not seen in the last window (`last`), and what this window
/// saw, to pass as `last` next time: a finding that persists is posted once, one that comes back is posted again.
pub fn plan(findings: &[Finding], last: &Seen) -> (Vec<EventPlan>, Seen) {
    let mut seen = Seen::new();
    let mut out = Vec::new();
    for f in findings {
        for o in &f.objects {
            let key = (f.code.clone(), o.clone());
            if !last.contains(&key) && !seen.contains(&key) {
                out.push(EventPlan {
                    object: o.clone(),
                    reason: f.code.clone(),
                    message: cut(&f.message),
                    warning: f.severity >= Severity::Warning,
                });
            }
            seen.insert(key);
        }
    }
    (out, seen)
}

fn cut(s: &str) -> String {
    if s.len() <= MAX_MESSAGE {
        return s.to_string();
    }
    let mut end = MAX_MESSAGE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Posts `plans` through `client`; an object that is gone or a refused write becomes a note, never an error.
/// Returns how many were posted.
pub async fn post(
    client: &kube::Client,
    resources: &[ResourceType],
    plans: &[EventPlan],
    notes: &mut Vec<Note>,
) -> usize {
    let mut posted = 0;
    let now = jiff::Timestamp::now();
    for p in plans {
        let Some(rt) = resources
            .iter()
            .find(|r| r.group == p.object.group && r.kind == p.object.kind)
        else {
            continue;
        };
        let Some(ns) = p.object.namespace.as_deref() else {
            // Events live in a namespace; a cluster-scoped object's would go to `default`, where nobody looks.
            continue;
        };
        let gvk = GroupVersionKind::gvk(&rt.group, &rt.version, &rt.kind);
        let ar = ApiResource::from_gvk_with_plural(&gvk, &rt.plural);
        // `kubectl describe` matches Events by uid too: read it (metadata only) rather than keep one per object.
        let objects: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
        let uid = match objects.get_metadata_opt(&p.object.name).await {
            Ok(Some(o)) => o.metadata.uid,
            Ok(None) => continue,
            Err(e) => {
                notes.push(Note {
                    subject: format!("event on {}/{}", ns, p.object.name),
                    message: super::collect::discover::explain(&e, "get on the object"),
                });
                continue;
            }
        };
        let event = Event {
            metadata: ObjectMeta {
                generate_name: Some(format!("{}.ctrlaudit-", p.object.name)),
                namespace: Some(ns.to_string()),
                ..ObjectMeta::default()
            },
            involved_object: ObjectReference {
                api_version: Some(ar.api_version.clone()),
                kind: Some(rt.kind.clone()),
                name: Some(p.object.name.clone()),
                namespace: Some(ns.to_string()),
                uid,
                ..ObjectReference::default()
            },
            reason: Some(p.reason.clone()),
            message: Some(p.message.clone()),
            type_: Some(if p.warning { "Warning" } else { "Normal" }.to_string()),
            source: Some(EventSource {
                component: Some(COMPONENT.to_string()),
                host: None,
            }),
            reporting_component: Some(COMPONENT.to_string()),
            reporting_instance: Some(COMPONENT.to_string()),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            event_time: Some(MicroTime(now)),
            action: Some("Observed".to_string()),
            count: Some(1),
            ..Event::default()
        };
        let events: Api<Event> = Api::namespaced(client.clone(), ns);
        match events.create(&PostParams::default(), &event).await {
            Ok(_) => posted += 1,
            Err(e) => notes.push(Note {
                subject: format!("event on {}/{}", ns, p.object.name),
                message: super::collect::discover::explain(&e, "create on events"),
            }),
        }
    }
    posted
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::finding::{Lens, Subject};

    fn finding(code: &str, severity: Severity, names: &[&str]) -> Finding {
        Finding {
            code: code.into(),
            severity,
            lens: Lens::Live,
            message: "x".repeat(1500),
            subject: Subject::Controller {
                manager: Some("looper".into()),
                user: None,
                user_agent: None,
                actor: None,
            },
            evidence: Vec::new(),
            help: String::new(),
            objects: names
                .iter()
                .map(|n| ObjectRef {
                    group: "g".into(),
                    kind: "Widget".into(),
                    namespace: Some("ns".into()),
                    name: n.to_string(),
                })
                .collect(),
            when: None,
        }
    }

    #[test]
    fn each_rule_and_object_is_posted_once_while_it_lasts_and_again_when_it_returns() {
        let w1 = [finding("CA202", Severity::Error, &["a", "b"])];
        let (plans, seen) = plan(&w1, &Seen::new());
        assert_eq!(plans.len(), 2);
        assert!(plans[0].warning && plans[0].message.len() < 1010);
        // Still there: nothing new. A new object and a new rule: one each.
        let w2 = [
            finding("CA202", Severity::Error, &["a", "b", "c"]),
            finding("CA102", Severity::Info, &["a"]),
        ];
        let (plans, seen) = plan(&w2, &seen);
        let got: Vec<(&str, &str, bool)> = plans
            .iter()
            .map(|p| (p.reason.as_str(), p.object.name.as_str(), p.warning))
            .collect();
        assert_eq!(got, vec![("CA202", "c", true), ("CA102", "a", false)]);
        // Gone for a window, then back: posted again.
        let (plans, seen) = plan(&[], &seen);
        assert!(plans.is_empty());
        assert_eq!(plan(&w1, &seen).0.len(), 2);
    }
}
