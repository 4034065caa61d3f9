//! The memory `live` keeps per watched object: its digest of a realistic Widget stays under a kilobyte.
//! (The end-to-end figure at 10,000 objects on testenv is `cargo bench --bench live_10k`.)
#![allow(clippy::unwrap_used)]

use ctrlaudit::live;
use serde_json::json;

/// A Widget as the API server sends it after a controller made it Ready: two managers, an annotation, a
/// status with a condition.
fn realistic_widget(i: usize) -> kube::api::DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "bench.ctrlaudit.io/v1alpha1",
        "kind": "Widget",
        "metadata": {
            "name": format!("widget-{i:05}"), "namespace": "shop", "uid": format!("3f2504e0-4f89-11d3-9a0c-{i:012}"),
            "resourceVersion": (100_000 + i).to_string(), "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "shop", "tier": "backend"},
            "annotations": {"example.com/owner": "team-a"},
            "managedFields": [
                {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "bench.ctrlaudit.io/v1alpha1",
                 "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:example.com/owner": {}}, "f:labels": {".": {}, "f:app": {}, "f:tier": {}}},
                              "f:spec": {".": {}, "f:count": {}, "f:message": {}}}},
                {"manager": "widget-operator", "operation": "Update", "subresource": "status", "apiVersion": "bench.ctrlaudit.io/v1alpha1",
                 "time": "2026-01-01T00:00:01Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:status": {".": {}, "f:phase": {}, "f:observedGeneration": {}, "f:conditions": {}}}}
            ]
        },
        "spec": {"count": 3, "message": "a widget of moderate size"},
        "status": {"phase": "Ready", "observedGeneration": 1, "processedCount": 3,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "Done", "lastTransitionTime": "2026-01-01T00:00:01Z"}]}
    }))
    .unwrap()
}

/// The digest's own memory per tracked object, beyond decoding: the tracker's self-accounting of what stays
/// allocated after every object of a 10,000-object list went through it (each decoded object is dropped after
/// its event). The crate forbids `unsafe`, so no counting allocator: the tracker sums its own allocations.
#[test]
fn digest_memory_per_object_is_under_a_kilobyte() {
    let n = 10_000;
    let mut t = live::tracker::TypeTracker::new("bench.ctrlaudit.io", "Widget", "widgets");
    t.handle(0, live::tracker::WatchEvent::Init);
    for i in 0..n {
        let o = realistic_widget(i);
        t.handle(0, live::tracker::WatchEvent::InitApply(&o));
    }
    t.handle(0, live::tracker::WatchEvent::InitDone);
    let per_object = t.digest_bytes() as f64 / n as f64;
    eprintln!("digest: {per_object:.0} bytes per object over {n} objects");
    assert_eq!(t.len(), n);
    assert!(per_object < 1024.0, "{per_object:.0} bytes per object");
}
