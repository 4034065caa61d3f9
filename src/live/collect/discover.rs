//! Finds the custom resource types (and which have the status subresource), resolves built-in kinds named by
//! `--resource` or added by `--owned`, and picks the ones to watch.

use super::Limits;
use crate::live::snapshot::ResourceType;
use crate::report::Note;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams};
use kube::{Client, discovery::Discovery};
use std::collections::BTreeMap;

/// Groups that ship with Kubernetes: their types are not a controller's custom resources.
fn builtin_group(g: &str) -> bool {
    g.is_empty()
        || g.ends_with(".k8s.io")
        || matches!(
            g,
            "apps" | "batch" | "autoscaling" | "policy" | "extensions" | "events.k8s.io"
        )
}

/// Explains a kube error for a note: forbidden with the verb that is missing, or the error itself.
pub(crate) fn explain(e: &kube::Error, verb_and_resource: &str) -> String {
    match e {
        kube::Error::Api(s) if s.code == 403 => format!("forbidden (needs {verb_and_resource})"),
        kube::Error::Api(s) if s.code == 401 => {
            "unauthorized: the API server refused the credentials (an expired \
             or unknown client certificate, or an expired token)"
                .to_string()
        }
        kube::Error::Api(s) if s.code == 404 => "not found".to_string(),
        kube::Error::Api(s) => format!("{} {}: {}", s.code, s.reason, s.message),
        other => {
            let why = causes(other);
            // kube's connect timeout (TCP and the TLS handshake) says only this.
            if why.ends_with("deadline has elapsed") {
                "no answer: connecting (TCP and the TLS handshake) took longer than --request-timeout".to_string()
            } else {
                format!("unreachable: {why}")
            }
        }
    }
}

/// An error and its causes on one line (`client error (Connect): tcp connect error: Connection refused`): the
/// last one is usually the one that says what to fix.
pub(crate) fn causes(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        // Wrappers often repeat their cause's text.
        if !parts.last().is_some_and(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// Every custom resource type, from the CRDs, or from API discovery when listing CRDs is forbidden.
pub async fn custom_resources(
    client: &Client,
    requests: &mut BTreeMap<String, u64>,
    limits: &Limits,
) -> (Vec<ResourceType>, Vec<Note>) {
    let mut notes = Vec::new();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    *requests
        .entry("list customresourcedefinitions".into())
        .or_default() += 1;
    let params = ListParams::default();
    let listed = match limits
        .setup("list customresourcedefinitions", crds.list(&params))
        .await
    {
        Ok(l) => l,
        Err(e) => {
            notes.push(Note {
                subject: "cluster".into(),
                message: e.to_string(),
            });
            return (Vec::new(), notes);
        }
    };
    match listed {
        Ok(list) => {
            let mut out: Vec<ResourceType> = list
                .items
                .iter()
                .filter_map(|crd| {
                    let spec = &crd.spec;
                    // The version the API server serves as storage is the one every client can read.
                    let v = spec
                        .versions
                        .iter()
                        .find(|v| v.storage && v.served)
                        .or_else(|| spec.versions.iter().find(|v| v.served))?;
                    Some(ResourceType {
                        group: spec.group.clone(),
                        version: v.name.clone(),
                        kind: spec.names.kind.clone(),
                        plural: spec.names.plural.clone(),
                        namespaced: spec.scope == "Namespaced",
                        status_subresource: v
                            .subresources
                            .as_ref()
                            .and_then(|s| s.status.as_ref())
                            .is_some(),
                        allow: crd
                            .metadata
                            .annotations
                            .as_ref()
                            .and_then(|a| a.get(crate::live::snapshot::ALLOW_ANNOTATION))
                            .cloned(),
                        ..ResourceType::default()
                    })
                })
                .collect();
            out.sort_by(|a, b| (&a.group, &a.plural).cmp(&(&b.group, &b.plural)));
            (out, notes)
        }
        Err(e) => {
            let why = explain(&e, "list on customresourcedefinitions.apiextensions.k8s.io");
            if !matches!(&e, kube::Error::Api(_)) {
                notes.push(Note {
                    subject: "cluster".into(),
                    message: why,
                });
                return (Vec::new(), notes);
            }
            notes.push(Note {
                subject: "customresourcedefinitions".into(),
                message: format!("{why}; using API discovery instead"),
            });
            // The aggregated discovery is two requests: /api and /apis.
            *requests.entry("discovery".into()).or_default() += 2;
            let found = limits
                .setup(
                    "discovery (/api, /apis)",
                    Discovery::new(client.clone()).run_aggregated(),
                )
                .await;
            let found = match found {
                Ok(f) => f,
                Err(e) => {
                    notes.push(Note {
                        subject: "API discovery".into(),
                        message: e.to_string(),
                    });
                    return (Vec::new(), notes);
                }
            };
            match found {
                Ok(d) => {
                    let mut out = Vec::new();
                    for g in d.groups().filter(|g| !builtin_group(g.name())) {
                        for (ar, caps) in g.recommended_resources() {
                            out.push(discovered(&ar, &caps));
                        }
                    }
                    (out, notes)
                }
                Err(e) => {
                    notes.push(Note {
                        subject: "API discovery".into(),
                        message: explain(&e, "get on /apis"),
                    });
                    (Vec::new(), notes)
                }
            }
        }
    }
}

/// A type as API discovery describes it.
fn discovered(
    ar: &kube::api::ApiResource,
    caps: &kube::discovery::ApiCapabilities,
) -> ResourceType {
    ResourceType {
        group: ar.group.clone(),
        version: ar.version.clone(),
        kind: ar.kind.clone(),
        plural: ar.plural.clone(),
        namespaced: caps.scope == kube::discovery::Scope::Namespaced,
        status_subresource: caps.subresources.iter().any(|(s, _)| s.plural == "status"),
        ..ResourceType::default()
    }
}

/// Short names kubectl accepts for built-in kinds (kube-rs discovery does not carry them).
const SHORT_NAMES: &[(&str, &str)] = &[
    ("cm", "configmaps"),
    ("cj", "cronjobs"),
    ("deploy", "deployments"),
    ("ds", "daemonsets"),
    ("ep", "endpoints"),
    ("hpa", "horizontalpodautoscalers"),
    ("ing", "ingresses"),
    ("netpol", "networkpolicies"),
    ("pdb", "poddisruptionbudgets"),
    ("po", "pods"),
    ("pvc", "persistentvolumeclaims"),
    ("rs", "replicasets"),
    ("sa", "serviceaccounts"),
    ("sts", "statefulsets"),
    ("svc", "services"),
];

/// The built-in kinds that operators commonly create and own, which `--owned` adds (plural, group).
const OWNED_KINDS: &[(&str, &str)] = &[
    ("configmaps", ""),
    ("persistentvolumeclaims", ""),
    ("pods", ""),
    ("secrets", ""),
    ("serviceaccounts", ""),
    ("services", ""),
    ("daemonsets", "apps"),
    ("deployments", "apps"),
    ("replicasets", "apps"),
    ("statefulsets", "apps"),
    ("horizontalpodautoscalers", "autoscaling"),
    ("cronjobs", "batch"),
    ("jobs", "batch"),
    ("networkpolicies", "networking.k8s.io"),
    ("ingresses", "networking.k8s.io"),
    ("poddisruptionbudgets", "policy"),
    ("rolebindings", "rbac.authorization.k8s.io"),
    ("roles", "rbac.authorization.k8s.io"),
];

/// The built-in resource types that can be watched, from API discovery, to be watched for metadata only.
pub async fn builtin_resources(
    client: &Client,
    requests: &mut BTreeMap<String, u64>,
    notes: &mut Vec<Note>,
    limits: &Limits,
) -> Vec<ResourceType> {
    // The aggregated discovery is two requests: /api and /apis.
    *requests.entry("discovery".into()).or_default() += 2;
    let found = limits
        .setup(
            "discovery (/api, /apis)",
            Discovery::new(client.clone()).run_aggregated(),
        )
        .await;
    let discovery = match found {
        Ok(Ok(d)) => d,
        Err(e) => {
            notes.push(Note {
                subject: "API discovery".into(),
                message: format!("{e}: built-in kinds cannot be resolved"),
            });
            return Vec::new();
        }
        Ok(Err(e)) => {
            notes.push(Note {
                subject: "API discovery".into(),
                message: format!(
                    "{}: built-in kinds cannot be resolved",
                    explain(&e, "get on /api and /apis")
                ),
            });
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for g in discovery.groups().filter(|g| builtin_group(g.name())) {
        for (ar, caps) in g.recommended_resources() {
            if !caps.supports_operation(kube::discovery::verbs::WATCH) {
                continue;
            }
            out.push(ResourceType {
                // Its status is not read (metadata only), so nothing can be said about a dropped one.
                status_subresource: false,
                metadata_only: true,
                ..discovered(&ar, &caps)
            });
        }
    }
    out.sort_by(|a, b| (&a.group, &a.plural).cmp(&(&b.group, &b.plural)));
    out
}

fn matches(r: &ResourceType, wanted: &str) -> bool {
    let w = wanted.to_ascii_lowercase();
    let plural = SHORT_NAMES
        .iter()
        .find(|(short, _)| r.metadata_only && *short == w)
        .map_or(w.as_str(), |(_, plural)| plural);
    r.plural == plural
        || r.kind.to_ascii_lowercase() == w
        || r.qualified() == w
        || format!("{}.{}", r.kind.to_ascii_lowercase(), r.group) == w
}

/// Marks the types to watch: those named by `--resource`, or every namespaced one (cluster-scoped ones too
/// when watching all namespaces). Returns the names that matched no type.
pub fn select(
    resources: &mut [ResourceType],
    wanted: &[String],
    namespaced_scope: bool,
) -> Vec<String> {
    if wanted.is_empty() {
        for r in resources.iter_mut() {
            r.watched = r.namespaced || !namespaced_scope;
        }
        return Vec::new();
    }
    select_named(resources, wanted)
}

/// Marks the types named in `wanted`; returns the names that matched none. A name served by several API groups
/// marks each.
pub fn select_named(resources: &mut [ResourceType], wanted: &[String]) -> Vec<String> {
    let mut unmatched = Vec::new();
    for w in wanted {
        let mut hit = false;
        for r in resources.iter_mut().filter(|r| matches(r, w)) {
            r.watched = true;
            hit = true;
        }
        if !hit {
            unmatched.push(w.clone());
        }
    }
    unmatched
}

/// `--owned`: adds, to be kept only where an object is owned by a type watched for its own sake, the other
/// custom resource types and the built-in kinds operators commonly create. Returns how many it added.
pub fn add_owned(
    resources: &mut [ResourceType],
    builtins: &mut [ResourceType],
    namespaced_scope: bool,
) -> usize {
    let mut added = 0;
    let in_scope = |r: &ResourceType| r.namespaced || !namespaced_scope;
    for r in resources.iter_mut().filter(|r| !r.watched && in_scope(r)) {
        r.watched = true;
        r.owned = true;
        added += 1;
    }
    for r in builtins.iter_mut().filter(|r| {
        !r.watched
            && in_scope(r)
            && OWNED_KINDS
                .iter()
                .any(|(plural, group)| r.plural == *plural && r.group == *group)
    }) {
        r.watched = true;
        r.owned = true;
        added += 1;
    }
    added
}

/// The (group, kind) of every type watched for its own sake: what an `--owned` type's objects must be owned by.
pub fn owners(resources: &[ResourceType]) -> Vec<(String, String)> {
    resources
        .iter()
        .filter(|r| r.watched && !r.owned)
        .map(|r| (r.group.clone(), r.kind.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(kind: &str, plural: &str, namespaced: bool) -> ResourceType {
        ResourceType {
            group: "bench.ctrlaudit.io".into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            ..ResourceType::default()
        }
    }

    #[test]
    fn select_by_name_kind_or_qualified() {
        let mut rs = vec![
            rt("Widget", "widgets", true),
            rt("Gadget", "gadgets", false),
        ];
        let unmatched = select(&mut rs, &["Widget".into(), "nope".into()], true);
        assert!(rs[0].watched && !rs[1].watched);
        assert_eq!(unmatched, vec!["nope".to_string()]);
        let mut rs = vec![
            rt("Widget", "widgets", true),
            rt("Gadget", "gadgets", false),
        ];
        select(&mut rs, &[], true);
        assert!(
            rs[0].watched && !rs[1].watched,
            "cluster-scoped types only with -A"
        );
        select(&mut rs, &["gadgets.bench.ctrlaudit.io".into()], true);
        assert!(rs[1].watched);
    }

    fn builtin(group: &str, kind: &str, plural: &str) -> ResourceType {
        ResourceType {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced: true,
            metadata_only: true,
            ..ResourceType::default()
        }
    }

    #[test]
    fn built_in_kinds_by_plural_kind_short_name_or_group_and_owned_ones() {
        let mut b = vec![
            builtin("apps", "Deployment", "deployments"),
            builtin("", "ConfigMap", "configmaps"),
            builtin("", "Event", "events"),
        ];
        let left = select_named(
            &mut b,
            &["deploy".into(), "configmap".into(), "gizmos".into()],
        );
        assert_eq!(left, vec!["gizmos".to_string()]);
        assert!(b[0].watched && b[1].watched && !b[2].watched);
        let mut b = vec![
            builtin("apps", "Deployment", "deployments"),
            builtin("", "Event", "events"),
        ];
        assert!(select_named(&mut b, &["deployments.apps".into()]).is_empty());
        // A custom resource's short-name look-alike is not resolved through the built-in table.
        let mut crs = vec![rt("Widget", "widgets", true), rt("Gadget", "gadgets", true)];
        assert_eq!(
            select_named(&mut crs, &["deploy".into()]),
            vec!["deploy".to_string()]
        );
        crs[0].watched = true;
        let mut b = vec![
            builtin("apps", "Deployment", "deployments"),
            builtin("", "Event", "events"),
        ];
        assert_eq!(add_owned(&mut crs, &mut b, true), 2);
        assert!(
            crs[1].owned && b[0].owned && !b[1].watched,
            "events are nobody's children"
        );
        assert_eq!(
            owners(&crs),
            vec![("bench.ctrlaudit.io".to_string(), "Widget".to_string())]
        );
    }
}
