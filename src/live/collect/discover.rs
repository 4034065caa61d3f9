//! Finds the custom resource types (and which have the status subresource) and picks the ones to watch.

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
        other => format!("unreachable: {}", causes(other)),
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
) -> (Vec<ResourceType>, Vec<Note>) {
    let mut notes = Vec::new();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    *requests
        .entry("list customresourcedefinitions".into())
        .or_default() += 1;
    match crds.list(&ListParams::default()).await {
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
                        watched: false,
                        relists: 0,
                        listed_after_ms: None,
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
            *requests.entry("discovery".into()).or_default() += 1;
            match Discovery::new(client.clone()).run_aggregated().await {
                Ok(d) => {
                    let mut out = Vec::new();
                    for g in d.groups().filter(|g| !builtin_group(g.name())) {
                        for (ar, caps) in g.recommended_resources() {
                            out.push(ResourceType {
                                group: ar.group.clone(),
                                version: ar.version.clone(),
                                kind: ar.kind.clone(),
                                plural: ar.plural.clone(),
                                namespaced: caps.scope == kube::discovery::Scope::Namespaced,
                                status_subresource: caps
                                    .subresources
                                    .iter()
                                    .any(|(s, _)| s.plural == "status"),
                                watched: false,
                                relists: 0,
                                listed_after_ms: None,
                            });
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

/// Marks the types to watch: those named by `--resource`, or every namespaced one (cluster-scoped ones too
/// when watching all namespaces). Unknown names become notes.
pub fn select(
    resources: &mut [ResourceType],
    wanted: &[String],
    namespaced_scope: bool,
    notes: &mut Vec<Note>,
) {
    if wanted.is_empty() {
        for r in resources.iter_mut() {
            r.watched = r.namespaced || !namespaced_scope;
        }
        return;
    }
    for w in wanted {
        let w_l = w.to_ascii_lowercase();
        let mut hit = false;
        for r in resources.iter_mut() {
            let matches = r.plural == w_l
                || r.kind.to_ascii_lowercase() == w_l
                || r.qualified() == w_l
                || format!("{}.{}", r.kind.to_ascii_lowercase(), r.group) == w_l;
            if matches {
                r.watched = true;
                hit = true;
            }
        }
        if !hit {
            notes.push(Note {
                subject: format!("--resource {w}"),
                message: "no custom resource type of that name (live watches custom resources)"
                    .into(),
            });
        }
    }
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
        let mut notes = Vec::new();
        select(&mut rs, &["Widget".into(), "nope".into()], true, &mut notes);
        assert!(rs[0].watched && !rs[1].watched);
        assert_eq!(notes.len(), 1);
        let mut rs = vec![
            rt("Widget", "widgets", true),
            rt("Gadget", "gadgets", false),
        ];
        select(&mut rs, &[], true, &mut notes);
        assert!(
            rs[0].watched && !rs[1].watched,
            "cluster-scoped types only with -A"
        );
        select(
            &mut rs,
            &["gadgets.bench.ctrlaudit.io".into()],
            true,
            &mut notes,
        );
        assert!(rs[1].watched);
    }
}
