//! The benchmark's `Widget` custom resource, which the bench variants reconcile and the testenv tests use.
//!
//! The CRD that the derive produces is also committed as `fixtures/crds/widget.yaml` (for `kubectl apply` and
//! for the scanner's CRD-YAML input); a unit test keeps the two equal.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state: how much work to do and a free-form message.
#[derive(
    CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema,
)]
#[kube(
    group = "bench.ctrlaudit.io",
    version = "v1alpha1",
    kind = "Widget",
    plural = "widgets",
    namespaced,
    status = "WidgetStatus",
    shortname = "wg"
)]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
    /// How many units of work one reconcile should account for.
    pub count: i64,
    /// Free text that a spec write can change without changing `count`.
    #[serde(default)]
    pub message: String,
}

/// What a controller last observed and did. Written only through the status subresource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    /// `Pending`, `Ready` or `Failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The `spec.count` that was last processed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processed_count: Option<i64>,
    /// The `metadata.generation` that was last processed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the status was last written (RFC 3339). A plain string so the crate needs no time library here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_updated: Option<String>,
    /// Conventional Kubernetes conditions, e.g. `Ready`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<WidgetCondition>,
}

/// One entry of `status.conditions`, shaped like `metav1.Condition` (whose k8s-openapi type has no JSON schema
/// unless that crate's `schemars` feature is on).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetCondition {
    /// The condition's kind, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A machine-readable CamelCase reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A human-readable explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When `status` last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_transition_time: Option<String>,
    /// The `metadata.generation` the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt;

    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/crds/widget.yaml");
    const HEADER: &str = "# The Widget CRD, generated from src/bench/widget.rs (Widget::crd()).\n\
                          # Regenerate: CTRLAUDIT_BLESS=1 cargo test --lib bench::widget\n";

    #[test]
    fn derived_crd_equals_the_committed_fixture() {
        let derived = serde_json::to_value(Widget::crd()).expect("crd serialises");
        // CTRLAUDIT_BLESS=1 rewrites the fixture after an intentional change to the types above.
        if std::env::var_os("CTRLAUDIT_BLESS").is_some() {
            let yaml = yaml_serde::to_string(&Widget::crd()).expect("crd as yaml");
            std::fs::write(FIXTURE, format!("{HEADER}{yaml}")).expect("write fixture");
        }
        let text = std::fs::read_to_string(FIXTURE).expect("read fixtures/crds/widget.yaml");
        let committed: serde_json::Value = yaml_serde::from_str(&text).expect("fixture is yaml");
        assert_eq!(
            derived, committed,
            "fixtures/crds/widget.yaml differs from Widget::crd(); rerun with CTRLAUDIT_BLESS=1 if intended"
        );
    }

    #[test]
    fn crd_has_the_names_and_status_subresource_the_bench_relies_on() {
        let crd = Widget::crd();
        assert_eq!(crd.spec.group, "bench.ctrlaudit.io");
        assert_eq!(crd.spec.names.kind, "Widget");
        assert_eq!(crd.spec.names.plural, "widgets");
        assert_eq!(crd.spec.names.short_names, Some(vec!["wg".to_owned()]));
        assert_eq!(crd.spec.scope, "Namespaced");
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        assert!(
            version
                .subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some()
        );
        let schema = serde_json::to_value(&version.schema).expect("schema serialises");
        let props = &schema["openAPIV3Schema"]["properties"];
        for field in ["count", "message"] {
            assert!(
                props["spec"]["properties"].get(field).is_some(),
                "spec.{field}"
            );
        }
        for field in [
            "phase",
            "processedCount",
            "observedGeneration",
            "lastUpdated",
            "conditions",
        ] {
            assert!(
                props["status"]["properties"].get(field).is_some(),
                "status.{field}"
            );
        }
        assert_eq!(
            props["status"]["properties"]["lastUpdated"]["format"],
            "date-time"
        );
    }
}
