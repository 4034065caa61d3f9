//! Hand-written CRD YAML in the scanned tree: which kinds have `subresources: status: {}`.

use serde::Deserialize;

/// Kinds declared by the CRDs in one YAML text (multi-document), with whether they have the
/// status subresource. Documents that are not CRDs, and invalid YAML, contribute nothing.
pub fn kinds(text: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        let Ok(v) = serde_yaml::Value::deserialize(doc) else {
            continue;
        };
        if v.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition") {
            continue;
        }
        let Some(spec) = v.get("spec") else { continue };
        let Some(kind) = spec
            .get("names")
            .and_then(|n| n.get("kind"))
            .and_then(|k| k.as_str())
        else {
            continue;
        };
        // apiextensions v1: per version; v1beta1: spec.subresources.
        let per_version = spec
            .get("versions")
            .and_then(|vs| vs.as_sequence())
            .is_some_and(|vs| {
                vs.iter().any(|ver| {
                    ver.get("subresources")
                        .and_then(|s| s.get("status"))
                        .is_some()
                })
            });
        let top = spec
            .get("subresources")
            .and_then(|s| s.get("status"))
            .is_some();
        out.push((kind.to_string(), per_version || top));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_status_subresource() {
        let y = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  names:\n    kind: Widget\n  versions:\n  - name: v1\n    subresources:\n      status: {}\n---\nkind: ConfigMap\n";
        assert_eq!(super::kinds(y), vec![("Widget".to_string(), true)]);
    }
}
