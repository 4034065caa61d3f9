//! CA206 scan, where the source shows it: the crate builds a HorizontalPodAutoscaler that scales a Deployment or
//! StatefulSet, and on the same reconcile path builds that workload with `spec.replicas` set. The HPA controller
//! (in kube-controller-manager) owns `spec.replicas` once it scales; every reconcile that applies the workload
//! takes it back. A fight needs two writers, and this is the one shape where one crate shows both.

use super::{Ctx, finding, per_pass};
use crate::finding::{Evidence, Finding, Severity};
use std::collections::BTreeMap;

/// Workload spec types and the kind an HPA's `scaleTargetRef` names them by.
const WORKLOADS: &[(&str, &str)] = &[
    ("DeploymentSpec", "Deployment"),
    ("StatefulSetSpec", "StatefulSet"),
    ("ReplicaSetSpec", "ReplicaSet"),
];

/// A replicas value that already defers to the autoscaler (`if app.spec.autoscaling.is_some() { None } ..`).
fn defers(value: &str) -> bool {
    let v = value.to_ascii_lowercase();
    v == "none" || v.contains("autoscal") || v.contains("hpa")
}

/// The first string literal of a value: `"Deployment".to_string()` → `Deployment`.
fn quoted(value: &str) -> Option<&str> {
    let start = value.find('"')? + 1;
    let len = value[start..].find('"')?;
    Some(&value[start..start + len])
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    // The kinds an HPA built on the reconcile path scales (`CrossVersionObjectReference` is the HPA's target type).
    let mut scaled: BTreeMap<String, crate::finding::Span> = BTreeMap::new();
    for &id in cx.reach.keys() {
        for f in &cx.unit.func(id).spec_fields {
            if f.ty == "CrossVersionObjectReference"
                && f.field == "kind"
                && let Some(kind) = quoted(&f.value)
            {
                scaled
                    .entry(kind.to_string())
                    .or_insert_with(|| f.span.clone());
            }
        }
    }
    if scaled.is_empty() {
        return;
    }
    for &id in cx.reach.keys() {
        let func = cx.unit.func(id);
        for f in func.spec_fields.iter().filter(|f| f.field == "replicas") {
            let Some((_, kind)) = WORKLOADS.iter().find(|(ty, _)| *ty == f.ty) else {
                continue;
            };
            let Some(hpa) = scaled.get(*kind) else {
                continue;
            };
            if defers(&f.value) {
                continue;
            }
            let when = cx.when_fn(id);
            let mut finding = finding(
                &crate::registry::CA206,
                f.span.clone(),
                when.clone(),
                format!(
                    "`replicas: {}` is set on the {kind} this reconcile builds while the crate's HorizontalPodAutoscaler \
                     scales that {kind}: the HPA controller and this operator take `spec.replicas` from each other \
                     {}{}",
                    f.value,
                    when.phrase(),
                    cx.via(id)
                ),
                "leave `replicas` out of what you apply when an HPA scales the workload (server-side apply then keeps \
                 the autoscaler's value), or set the HPA's minReplicas instead",
            );
            // The source shows both writers but not that both run against the same object at once.
            finding.severity = Severity::Warning;
            finding.evidence.push(Evidence::Related {
                span: hpa.clone(),
                note: format!("the HorizontalPodAutoscaler's target: a {kind}"),
            });
            finding.evidence.extend(cx.call_path(id));
            // Each apply takes the field back: the cost is per pass.
            out.push(per_pass(finding));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_and_deferring_values() {
        assert_eq!(quoted("\"Deployment\".to_string()"), Some("Deployment"));
        assert_eq!(quoted("kind"), None);
        assert!(defers("None"));
        assert!(defers(
            "if app.spec.autoscaling.is_some(){None}else{Some(n)}"
        ));
        assert!(!defers("Some(app.spec.replicas as i32)"));
    }
}
