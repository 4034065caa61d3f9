//! The Go front end on small kubebuilder-shaped sources: the facts each shape gives.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::finding::Severity;
use crate::sema::{ApiMethod, ConcurrencyConfig};

const HEAD: &str = "package controller\n\nimport (\n\t\"context\"\n\t\"time\"\n\n\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\tctrl \"sigs.k8s.io/controller-runtime\"\n\t\"sigs.k8s.io/controller-runtime/pkg/client\"\n\t\"sigs.k8s.io/controller-runtime/pkg/controller\"\n\t\"sigs.k8s.io/controller-runtime/pkg/predicate\"\n\n\tappv1 \"example.com/widget/api/v1\"\n)\n\n";

fn model(body: &str) -> FileModel {
    analyze("w.go", &format!("{HEAD}{body}")).unwrap()
}

#[test]
fn client_calls_are_typed_with_their_kind_and_subresource() {
    let m = model(
        "func (r *WidgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {\n\
         \tvar w appv1.Widget\n\
         \tif err := r.Get(ctx, req.NamespacedName, &w); err != nil {\n\t\treturn ctrl.Result{}, client.IgnoreNotFound(err)\n\t}\n\
         \tw.Status.Phase = \"Ready\"\n\
         \tif err := r.Status().Update(ctx, &w); err != nil {\n\t\treturn ctrl.Result{}, err\n\t}\n\
         \tif err := r.Client.Update(ctx, &w); err != nil {\n\t\treturn ctrl.Result{}, err\n\t}\n\
         \treturn ctrl.Result{RequeueAfter: 5 * time.Minute}, nil\n}\n",
    );
    let f = &m.fns[0];
    assert_eq!(f.self_ty.as_deref(), Some("WidgetReconciler"));
    assert!(f.returns_action);
    let calls: Vec<(ApiMethod, Option<&str>, bool)> = f
        .api_calls
        .iter()
        .map(|c| (c.method, c.kind.as_deref(), c.body_has_status))
        .collect();
    assert_eq!(
        calls,
        [
            (ApiMethod::Get, Some("Widget"), false),
            (ApiMethod::ReplaceStatus, Some("Widget"), false),
            (ApiMethod::Replace, Some("Widget"), true),
        ]
    );
    assert!(f.api_calls[0].cached);
    assert!(f.api_calls[2].propagated);
    assert_eq!(f.requeues.len(), 1);
    assert_eq!(f.requeues[0].secs, Some(300.0));
    assert!(!f.requeues[0].conditional);
}

#[test]
fn a_requeue_returned_with_an_error_is_none_and_one_on_an_error_branch_is_on_error() {
    let m = model(
        "const retry = 2 * time.Second\n\n\
         func (r *R) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {\n\
         \tif err := r.step(ctx); err != nil {\n\t\treturn ctrl.Result{RequeueAfter: retry}, nil\n\t}\n\
         \tif err := r.other(ctx); err != nil {\n\t\treturn ctrl.Result{RequeueAfter: time.Second}, err\n\t}\n\
         \treturn ctrl.Result{Requeue: true}, nil\n}\n",
    );
    assert_eq!(m.consts, [("retry".to_string(), 2.0)]);
    let f = &m.fns[0];
    assert_eq!(f.requeues.len(), 1);
    assert!(f.requeues[0].on_error && f.requeues[0].conditional);
    assert_eq!(f.requeues[0].secs, None);
    assert_eq!(f.returns.len(), 3);
    assert_eq!(f.calls.len(), 2);
}

#[test]
fn an_unconditional_timestamp_is_carried_by_the_next_write_of_its_object() {
    let m = model(
        "func (r *R) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {\n\
         \tw := &appv1.Widget{}\n\
         \t_ = r.Get(ctx, req.NamespacedName, w)\n\
         \tif w.Annotations == nil {\n\t\tw.Annotations = map[string]string{}\n\t}\n\
         \tw.Annotations[\"example.com/seen\"] = time.Now().Format(time.RFC3339)\n\
         \tif cond {\n\t\tw.Status.LastSync = metav1.Now()\n\t}\n\
         \treturn ctrl.Result{}, r.Update(ctx, w)\n}\n",
    );
    let f = &m.fns[0];
    assert_eq!(f.volatile_writes.len(), 1, "{:?}", f.volatile_writes);
    let v = &f.volatile_writes[0];
    assert_eq!(v.key.as_deref(), Some("example.com/seen"));
    assert_eq!(v.source, "time.Now()");
    assert_eq!(v.write.method, ApiMethod::Replace);
}

#[test]
fn builder_chains_become_controllers_with_their_predicates_and_workers() {
    let m = model(
        "func (r *WidgetReconciler) SetupWithManager(mgr ctrl.Manager) error {\n\
         \treturn ctrl.NewControllerManagedBy(mgr).\n\t\tFor(&appv1.Widget{}).\n\
         \t\tWithEventFilter(predicate.GenerationChangedPredicate{}).\n\
         \t\tWithOptions(controller.Options{MaxConcurrentReconciles: 5}).\n\t\tComplete(r)\n}\n\n\
         func setup(mgr ctrl.Manager) error {\n\
         \tb := ctrl.NewControllerManagedBy(mgr).For(&appv1.Gadget{})\n\
         \treturn b.Complete(&GadgetReconciler{Client: mgr.GetClient()})\n}\n",
    );
    assert_eq!(m.controllers.len(), 2);
    let c = &m.controllers[0];
    assert_eq!(c.kind.as_deref(), Some("Widget"));
    assert_eq!(c.stream.len(), 1);
    assert!(
        c.stream[0]
            .arg_names
            .iter()
            .any(|n| n == "GenerationChangedPredicate")
    );
    assert_eq!(c.config, ConcurrencyConfig::Limit(5));
    assert_eq!(
        c.run.as_ref().and_then(|r| r.reconcile.as_deref()),
        Some("WidgetReconciler::Reconcile")
    );
    let g = &m.controllers[1];
    assert_eq!(g.kind.as_deref(), Some("Gadget"));
    assert!(g.stream.is_empty());
    assert_eq!(g.config, ConcurrencyConfig::Limit(1));
    assert_eq!(
        g.run.as_ref().and_then(|r| r.reconcile.as_deref()),
        Some("GadgetReconciler::Reconcile")
    );
}

#[test]
fn markers_declare_kinds_and_the_status_subresource() {
    let m = model(
        "// +kubebuilder:object:root=true\n// +kubebuilder:subresource:status\n\n// Widget is a widget.\n\
         type Widget struct {\n\tSpec WidgetSpec\n}\n\n// +kubebuilder:object:root=true\n\
         type WidgetList struct {}\n\n// +kubebuilder:object:root=true\ntype Plain struct {}\n",
    );
    let kinds: Vec<(&str, bool)> = m
        .crds
        .iter()
        .map(|c| (c.kind.as_str(), c.has_status))
        .collect();
    assert_eq!(kinds, [("Widget", true), ("Plain", false)]);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    assert!(matches!(
        analyze("x.go", "package x\nfunc f( {\n"),
        Err(GoError::Syntax { .. })
    ));
    let deep = format!(
        "package x\nvar x = {}1{}\n",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    assert!(matches!(
        analyze("x.go", &deep),
        Err(GoError::TooDeep { .. })
    ));
}

#[test]
fn clientset_calls_are_uncached_reads_and_typed_writes() {
    let m = model(
        "func (r *WidgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {\n\
         \td, err := r.kubeClient.AppsV1().Deployments(req.Namespace).Get(ctx, req.Name, metav1.GetOptions{})\n\
         \tif err != nil {\n\t\treturn ctrl.Result{}, err\n\t}\n\
         \t_, err = r.kubeClient.SchedulingV1beta1().PodGroups(req.Namespace).UpdateStatus(ctx, pg, metav1.UpdateOptions{})\n\
         \t_, _ = r.configClient.ConfigV1().Proxies().List(ctx, metav1.ListOptions{})\n\
         \t_ = r.kubeClient.CoreV1().Pods(ns).Delete(ctx, d.Name, metav1.DeleteOptions{})\n\
         \t_ = r.logger.V1().Info(ctx, d.Name, x)\n\
         \treturn ctrl.Result{}, nil\n}\n",
    );
    let calls: Vec<(ApiMethod, Option<&str>, bool)> = m.fns[0]
        .api_calls
        .iter()
        .map(|c| (c.method, c.kind.as_deref(), c.cached))
        .collect();
    assert_eq!(
        calls,
        [
            (ApiMethod::Get, Some("Deployment"), false),
            (ApiMethod::ReplaceStatus, Some("PodGroup"), false),
            (ApiMethod::List, Some("Proxy"), false),
            (ApiMethod::Delete, Some("Pod"), false),
        ]
    );
}

#[test]
fn go_1_26_new_of_a_value_parses() {
    let m = model(
        "func f() *int32 {\n\ts := \"new(\" // new(x\n\tp := new(int32(0))\n\tq := Foo{Path: new(\"/x\"), N: new(in.X == y), L: new([]string)}\n\t_, _ = s, q\n\treturn p\n}\n",
    );
    assert_eq!(m.fns.len(), 1);
    assert_eq!(
        syntax::new_of_value_as_call("a := new(int)\nb := new([]T)\n// new(x)\nc := x.new(y)"),
        Some("a := neW(int)\nb := new([]T)\n// new(x)\nc := x.new(y)".to_string())
    );
    assert_eq!(
        syntax::new_of_value_as_call("b := new(map[string]int)"),
        None
    );
}

#[test]
fn calls_on_declared_types_name_the_type_and_signatures_drop_qualifiers() {
    use crate::sema::{Callee, TypeRef};
    let m = model(
        "type Getter interface {\n\tGet(ctx context.Context, name string) (*appv1.Widget, error)\n}\n\n\
         type Syncer struct {\n\tgetter Getter\n\tclock  *metav1.Time\n}\n\n\
         func (s *Syncer) Sync(ctx context.Context, steps []Step, w appv1.Widget) error {\n\
         \t_, _ = s.getter.Get(ctx, \"a\")\n\
         \tfor _, st := range steps {\n\t\tst.Apply(ctx)\n\t}\n\
         \tlocal := &Syncer{}\n\tlocal.Other()\n\
         \treturn nil\n}\n",
    );
    let callees: Vec<&Callee> = m.fns[0].calls.iter().map(|c| &c.callee).collect();
    let on = |package: Option<&str>, name: &str, field: Option<&str>, m: &str| {
        Callee::OnType(
            Box::new(TypeRef {
                package: package.map(str::to_string),
                name: name.to_string(),
                field: field.map(str::to_string),
                result_of: None,
            }),
            m.to_string(),
        )
    };
    assert!(callees.contains(&&on(None, "Syncer", Some("getter"), "Get")));
    assert!(callees.contains(&&on(None, "Step", None, "Apply")));
    assert!(callees.contains(&&on(None, "Syncer", None, "Other")));
    assert_eq!(
        m.interfaces[0].signatures,
        ["Context,string->*Widget,error".to_string()]
    );
    assert_eq!(m.fns[0].signature, "Context,[]Step,Widget->error");
    let fields: Vec<(&str, &str)> = m
        .field_types
        .iter()
        .map(|f| (f.field.as_str(), f.ty.name.as_str()))
        .collect();
    assert_eq!(fields, [("getter", "Getter"), ("clock", "Time")]);
}

#[test]
fn a_write_error_dropped_is_not_propagated_and_ranges_type_their_items() {
    let m = model(
        "func (r *WidgetReconciler) sync(ctx context.Context, list *appv1.WidgetList) (bool, error) {\n\
         \t_ = r.Update(ctx, &list.Items[0])\n\
         \tr.Update(ctx, &list.Items[1])\n\
         \tif err := r.Update(ctx, &list.Items[2]); err != nil {\n\t\tctrl.Log.Error(err, \"update\")\n\t}\n\
         \tfor _, w := range list.Items {\n\
         \t\tif err := r.Update(ctx, &w); err != nil {\n\t\t\treturn false, err\n\t\t}\n\t}\n\
         \terr := r.Update(ctx, &list.Items[3])\n\
         \tif err != nil {\n\t\tctrl.Log.Error(err, \"update\")\n\t}\n\
         \treturn true, err\n}\n",
    );
    let calls: Vec<(Option<&str>, bool)> = m.fns[0]
        .api_calls
        .iter()
        .map(|c| (c.kind.as_deref(), c.propagated))
        .collect();
    assert_eq!(
        calls,
        [
            (Some("Widget"), false),
            (Some("Widget"), false),
            (Some("Widget"), false),
            (Some("Widget"), true),
            // Logged, then returned after the branch.
            (Some("Widget"), true),
        ]
    );
}

#[test]
fn a_label_of_a_metric_whose_series_are_deleted_is_reported_at_info() {
    let dir = "../../fixtures/scan/CA402-unbounded-metric-label";
    for (name, expected) in [
        (
            "bad_series_deleted_with_their_object.go",
            // The deleted gauge at info; the counter deleted only through a local (`c.Reset()`) keeps its level.
            vec![(56, Severity::Info), (57, Severity::Warning)],
        ),
        (
            "bad_series_removed_with_their_object.rs",
            vec![(68, Severity::Info), (69, Severity::Info)],
        ),
    ] {
        let text = std::fs::read_to_string(format!("{}/{dir}/{name}", env!("CARGO_MANIFEST_DIR")))
            .unwrap();
        let mut got: Vec<(usize, Severity)> = crate::scan_source(name, &text, &Default::default())
            .into_iter()
            .filter(|f| f.code == "CA402")
            .filter_map(|f| match f.subject {
                crate::finding::Subject::Source(span) => Some((span.line, f.severity)),
                _ => None,
            })
            .collect();
        got.sort_by_key(|g| g.0);
        assert_eq!(got, expected, "{name}");
    }
}

/// The findings scan gives a CA303 fixture, each with its severity, by line; and their messages.
fn ca303_fixture_severities(name: &str) -> (Vec<(String, usize, Severity)>, Vec<String>) {
    let path = format!(
        "{}/../../fixtures/scan/CA303-uncached-read-in-reconcile/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    let found = crate::scan_source(name, &text, &Default::default());
    let mut got: Vec<(String, usize, Severity)> = found
        .iter()
        .filter_map(|f| match &f.subject {
            crate::finding::Subject::Source(span) => {
                Some((f.code.to_string(), span.line, f.severity))
            }
            _ => None,
        })
        .collect();
    got.sort_by_key(|g| g.1);
    (got, found.into_iter().map(|f| f.message).collect())
}

#[test]
fn a_read_only_a_timer_reaches_is_reported_at_info_and_a_wait_there_not_at_all() {
    let (got, messages) = ca303_fixture_severities("bad_timer_loops_read_through_a_clientset.go");
    // The LIST of a timer is bounded by its period: info, not the warning of a LIST per event.
    assert_eq!(
        got,
        vec![
            ("CA303".to_string(), 37, Severity::Info),
            ("CA303".to_string(), 61, Severity::Info)
        ]
    );
    assert!(messages.iter().all(|m| !m.contains("every reconcile")));
}

#[test]
fn a_list_of_one_small_page_is_reported_at_info_a_whole_list_at_warning() {
    let (got, _) = ca303_fixture_severities("bad_list_of_a_collection_and_a_page_of_one.go");
    assert_eq!(
        got,
        vec![
            ("CA303".to_string(), 32, Severity::Warning),
            ("CA303".to_string(), 36, Severity::Info)
        ]
    );
}
