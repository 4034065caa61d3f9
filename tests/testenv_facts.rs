//! The API-server facts the project rests on, shown with kube-rs against a real kube-apiserver (testenv).
//!
//! Each test skips locally when no testenv runs and fails in CI; see `tests/common/mod.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use ctrlaudit::bench::widget::{Widget, WidgetSpec, WidgetStatus};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

fn widget(name: &str, count: i64) -> Widget {
    Widget::new(
        name,
        WidgetSpec {
            count,
            message: "hello".to_owned(),
        },
    )
}

fn ready_status() -> WidgetStatus {
    WidgetStatus {
        phase: Some("Ready".to_owned()),
        processed_count: Some(1),
        observed_generation: Some(1),
        last_updated: Some("2025-01-01T00:00:00Z".to_owned()),
        conditions: Vec::new(),
    }
}

async fn create(api: &Api<Widget>, name: &str, manager: &str) -> Widget {
    let pp = PostParams {
        field_manager: Some(manager.to_owned()),
        ..PostParams::default()
    };
    api.create(&pp, &widget(name, 1))
        .await
        .expect("create widget")
}

fn merge_as(manager: &str) -> PatchParams {
    PatchParams {
        field_manager: Some(manager.to_owned()),
        ..PatchParams::default()
    }
}

fn rv(w: &Widget) -> String {
    w.resource_version().expect("resourceVersion")
}

fn generation(w: &Widget) -> i64 {
    w.metadata.generation.expect("generation")
}

/// Writes `w` again with its (by now stale) resourceVersion, after moving the object on; returns the error.
async fn stale_replace(api: &Api<Widget>, name: &str) -> kube::Error {
    let stale = api.get(name).await.expect("get");
    api.patch(
        name,
        &merge_as("ctrlaudit-bumper"),
        &Patch::Merge(json!({"spec": {"message": "moved on"}})),
    )
    .await
    .expect("bump");
    let mut edited = stale;
    edited.spec.count += 1;
    api.replace(name, &PostParams::default(), &edited)
        .await
        .expect_err("a replace with a stale resourceVersion must fail")
}

#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn status_written_through_the_main_resource_is_accepted_and_dropped() {
    let env = common::testenv("status_via_main_resource").await;
    let api: Api<Widget> = Api::namespaced(env.client.clone(), &env.namespace);
    create(&api, "w", "ctrlaudit-test").await;

    // replace with a status: 200, but the answer and the stored object carry no status.
    let mut w = api.get("w").await.unwrap();
    w.status = Some(ready_status());
    let replaced = api
        .replace("w", &PostParams::default(), &w)
        .await
        .expect("replace succeeds");
    assert_eq!(replaced.status, None, "replace answered with a status");
    assert_eq!(
        api.get("w").await.unwrap().status,
        None,
        "replace stored a status"
    );

    // merge patch of the main resource with a status: also success, also dropped.
    let patched = api
        .patch(
            "w",
            &merge_as("ctrlaudit-test"),
            &Patch::Merge(json!({"status": {"phase": "Ready"}})),
        )
        .await
        .expect("patch succeeds");
    assert_eq!(patched.status, None, "patch answered with a status");
    assert_eq!(
        api.get("w").await.unwrap().status,
        None,
        "patch stored a status"
    );

    // Through the status subresource it is stored.
    let patched = api
        .patch_status(
            "w",
            &merge_as("ctrlaudit-test"),
            &Patch::Merge(json!({"status": ready_status()})),
        )
        .await
        .expect("patch_status succeeds");
    assert_eq!(patched.status, Some(ready_status()));
    assert_eq!(api.get("w").await.unwrap().status, Some(ready_status()));
}

#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn writes_bump_generation_and_resource_version_as_documented() {
    let env = common::testenv("generation_and_rv").await;
    let api: Api<Widget> = Api::namespaced(env.client.clone(), &env.namespace);
    let w0 = create(&api, "w", "ctrlaudit-test").await;
    assert_eq!(generation(&w0), 1);

    let w1 = api
        .patch_status(
            "w",
            &merge_as("ctrlaudit-test"),
            &Patch::Merge(json!({"status": {"phase": "Ready"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        generation(&w1),
        generation(&w0),
        "a status write bumped generation"
    );
    assert_ne!(
        rv(&w1),
        rv(&w0),
        "a status write did not bump resourceVersion"
    );

    let w2 = api
        .patch(
            "w",
            &merge_as("ctrlaudit-test"),
            &Patch::Merge(json!({"spec": {"count": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(
        generation(&w2),
        generation(&w1) + 1,
        "a spec write did not bump generation"
    );
    assert_ne!(
        rv(&w2),
        rv(&w1),
        "a spec write did not bump resourceVersion"
    );

    let w3 = api
        .patch(
            "w",
            &merge_as("ctrlaudit-test"),
            &Patch::Merge(json!({"metadata": {"annotations": {"ctrlaudit.io/touched": "yes"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        generation(&w3),
        generation(&w2),
        "an annotation write bumped generation"
    );
    assert_ne!(
        rv(&w3),
        rv(&w2),
        "an annotation write did not bump resourceVersion"
    );
}

#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn replace_with_a_stale_resource_version_gets_409() {
    let env = common::testenv("stale_replace_409").await;
    let api: Api<Widget> = Api::namespaced(env.client.clone(), &env.namespace);
    create(&api, "w", "ctrlaudit-test").await;
    match stale_replace(&api, "w").await {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 409, "{status:?}");
            assert_eq!(status.reason, "Conflict", "{status:?}");
        }
        other => panic!("expected a 409 from the API server, got {other:?}"),
    }
}

async fn conflicts_on_widgets(client: &Client) -> f64 {
    let text = common::apiserver_metrics(client)
        .await
        .expect("read /metrics");
    common::metric_sum(
        &text,
        "apiserver_request_total",
        &[
            ("code", "409"),
            ("group", "bench.ctrlaudit.io"),
            ("resource", "widgets"),
            ("verb", "PUT"),
        ],
    )
}

#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn apiserver_metrics_count_the_409() {
    let env = common::testenv("metrics_409").await;
    let api: Api<Widget> = Api::namespaced(env.client.clone(), &env.namespace);
    create(&api, "w", "ctrlaudit-test").await;
    // Other tests run concurrently and may add 409s of their own, so compare before/after with >=.
    let before = conflicts_on_widgets(&env.client).await;
    let _ = stale_replace(&api, "w").await;
    let after = conflicts_on_widgets(&env.client).await;
    assert!(
        after >= before + 1.0,
        "apiserver_request_total{{code=\"409\",resource=\"widgets\"}} went from {before} to {after}"
    );
    // The read-only identity may scrape /metrics too (it is what `live` runs as).
    let seen_by_readonly = conflicts_on_widgets(&env.readonly).await;
    assert!(
        seen_by_readonly >= after,
        "read-only /metrics: {seen_by_readonly} < {after}"
    );
}

#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn managed_fields_name_each_writer_and_mark_status_writes() {
    let env = common::testenv("managed_fields").await;
    let api: Api<Widget> = Api::namespaced(env.client.clone(), &env.namespace);
    create(&api, "w", "ctrlaudit-creator").await;
    api.patch_status(
        "w",
        &merge_as("ctrlaudit-status-writer"),
        &Patch::Merge(json!({"status": {"phase": "Ready"}})),
    )
    .await
    .unwrap();
    let applied = json!({
        "apiVersion": "bench.ctrlaudit.io/v1alpha1",
        "kind": "Widget",
        "spec": {"message": "applied"}
    });
    // spec.message belongs to the creator, so a non-forced apply would be refused with a 409 conflict.
    api.patch(
        "w",
        &PatchParams::apply("ctrlaudit-applier").force(),
        &Patch::Apply(&applied),
    )
    .await
    .unwrap();

    let w = api.get("w").await.unwrap();
    let entries = w.managed_fields();
    let find = |manager: &str| {
        entries
            .iter()
            .find(|e| e.manager.as_deref() == Some(manager))
            .unwrap_or_else(|| panic!("no managedFields entry for {manager}: {entries:#?}"))
    };
    let created = find("ctrlaudit-creator");
    assert_eq!(created.operation.as_deref(), Some("Update"));
    assert_eq!(created.subresource, None);
    let status = find("ctrlaudit-status-writer");
    assert_eq!(status.operation.as_deref(), Some("Update"));
    assert_eq!(status.subresource.as_deref(), Some("status"));
    let fields = serde_json::to_value(&status.fields_v1).unwrap();
    assert!(
        fields.to_string().contains("f:phase"),
        "status manager owns {fields}"
    );
    let apply = find("ctrlaudit-applier");
    assert_eq!(apply.operation.as_deref(), Some("Apply"));
    assert_eq!(apply.subresource, None);
}

#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn audit_log_attributes_each_request() {
    let env = common::testenv_with_audit("audit_log").await;
    let log = env.audit_log.clone().expect("audit log path");
    let api: Api<Widget> = Api::namespaced(env.client.clone(), &env.namespace);
    create(&api, "w", "ctrlaudit-test").await;
    api.patch_status(
        "w",
        &merge_as("ctrlaudit-test"),
        &Patch::Merge(json!({"status": {"phase": "Ready"}})),
    )
    .await
    .unwrap();
    let _ = stale_replace(&api, "w").await;

    let wanted: [(&str, Option<&str>, i64); 3] = [
        ("create", None, 201),
        ("patch", Some("status"), 200),
        ("update", None, 409),
    ];
    let is_widget_event = |e: &serde_json::Value, verb: &str, sub: Option<&str>, code: i64| {
        e["stage"] == "ResponseComplete"
            && e["objectRef"]["resource"] == "widgets"
            && e["objectRef"]["apiGroup"] == "bench.ctrlaudit.io"
            && e["verb"] == verb
            && e["objectRef"]["subresource"].as_str() == sub
            && e["responseStatus"]["code"] == code
    };
    let events = common::audit_events(&log, &env.namespace, Duration::from_secs(15), |events| {
        wanted
            .iter()
            .all(|(verb, sub, code)| events.iter().any(|e| is_widget_event(e, verb, *sub, *code)))
    })
    .await
    .expect("audit events");

    for (verb, sub, code) in wanted {
        let e = events
            .iter()
            .find(|e| is_widget_event(e, verb, sub, code))
            .expect("matched above");
        assert_eq!(e["user"]["username"], common::ADMIN_USER, "{e}");
        assert!(
            e["user"]["groups"]
                .as_array()
                .is_some_and(|g| g.iter().any(|g| g == "system:masters")),
            "{e}"
        );
        assert_eq!(e["userAgent"], env.user_agent.as_str(), "{e}");
        assert_eq!(e["objectRef"]["name"], "w", "{e}");
        // Custom resources are audited at RequestResponse: the request body is there.
        assert_eq!(e["level"], "RequestResponse", "{e}");
        assert!(e.get("requestObject").is_some(), "{e}");
    }
}

#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn readonly_identity_reads_but_cannot_write() {
    let env = common::testenv("readonly_identity").await;
    let admin: Api<Widget> = Api::namespaced(env.client.clone(), &env.namespace);
    create(&admin, "w", "ctrlaudit-test").await;
    let ro: Api<Widget> = Api::namespaced(env.readonly.clone(), &env.namespace);
    assert_eq!(ro.list(&Default::default()).await.unwrap().items.len(), 1);
    ro.get("w").await.unwrap();
    let denied = ro
        .patch(
            "w",
            &merge_as("ctrlaudit-readonly"),
            &Patch::Merge(json!({"spec": {"count": 9}})),
        )
        .await
        .expect_err("the read-only user must not write");
    match denied {
        kube::Error::Api(status) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("expected 403, got {other:?}"),
    }
}
