//! `scan` of Go modules laid out as kubebuilder lays them out: which modules and files are analysed (go.mod
//! requiring controller-runtime or client-go; tests, generated and vendored files not judged, and said so), kinds
//! declared in another package or in CRD YAML, a file that cannot be walked reported as CA001 without hiding
//! another file's findings, allow comments in Go, and a tree of both languages.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn scan(root: &Path, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
        .arg("scan")
        .arg(root)
        .args(["-o", "json"])
        .args(extra)
        .output()
        .unwrap();
    let doc = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (
        o.status.code().unwrap_or(-1),
        doc,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// (file name, line, code) of every finding.
fn findings(doc: &serde_json::Value) -> Vec<(String, u64, String)> {
    let mut out: Vec<(String, u64, String)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let file = f["subject"]["file"].as_str().unwrap_or("");
            let name = Path::new(file)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (
                name,
                f["subject"]["line"].as_u64().unwrap_or(0),
                f["code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn notes(doc: &serde_json::Value) -> String {
    doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| format!("{} {}\n", n["subject"], n["message"]))
        .collect()
}

const GO_MOD: &str = "module example.com/widget\n\ngo 1.22\n\nrequire (\n\tk8s.io/apimachinery v0.30.0\n\t\
                      sigs.k8s.io/controller-runtime v0.18.0\n)\n";

const TYPES: &str = "package v1\n\nimport metav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\n\
// +kubebuilder:object:root=true\n// +kubebuilder:subresource:status\n\n// Widget is a widget.\n\
type Widget struct {\n\tmetav1.TypeMeta   `json:\",inline\"`\n\tmetav1.ObjectMeta `json:\"metadata,omitempty\"`\n\
\tStatus WidgetStatus `json:\"status,omitempty\"`\n}\n\ntype WidgetStatus struct {\n\tPhase string `json:\"phase\"`\n}\n";

/// The reconciler of `Widget` (declared in `api/v1`) and of `Gadget` (declared only by CRD YAML): both send
/// status through `r.Update`; line 19 and line 27.
const CONTROLLER: &str = "package controller\n\nimport (\n\t\"context\"\n\n\tctrl \"sigs.k8s.io/controller-runtime\"\n\
\t\"sigs.k8s.io/controller-runtime/pkg/client\"\n\t\"sigs.k8s.io/controller-runtime/pkg/predicate\"\n\n\
\tappv1 \"example.com/widget/api/v1\"\n)\n\ntype WidgetReconciler struct{ client.Client }\n\n\
func (r *WidgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {\n\
\tvar w appv1.Widget\n\t_ = r.Get(ctx, req.NamespacedName, &w)\n\tw.Status.Phase = \"Ready\"\n\
\treturn ctrl.Result{}, r.Update(ctx, &w)\n}\n\nfunc (r *WidgetReconciler) sync(ctx context.Context) error {\n\
\tvar g appv1.Gadget\n\t_ = r.Get(ctx, client.ObjectKey{Name: \"g\"}, &g)\n\tg.Status.Phase = \"Ready\"\n\
\t_ = 0\n\treturn r.Update(ctx, &g)\n}\n\nfunc (r *WidgetReconciler) SetupWithManager(mgr ctrl.Manager) error {\n\
\treturn ctrl.NewControllerManagedBy(mgr).For(&appv1.Widget{}).\n\
\t\tWithEventFilter(predicate.GenerationChangedPredicate{}).Complete(r)\n}\n";

const GADGET_CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  \
name: gadgets.example.com\nspec:\n  group: example.com\n  names:\n    kind: Gadget\n    plural: gadgets\n  \
scope: Namespaced\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      \
subresources:\n        status: {}\n      schema:\n        openAPIV3Schema:\n          type: object\n";

#[test]
fn a_kubebuilder_module_is_analysed_across_its_packages_and_crd_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "go.mod", GO_MOD);
    write(root, "api/v1/widget_types.go", TYPES);
    write(root, "internal/controller/widget_controller.go", CONTROLLER);
    write(
        root,
        "config/crd/bases/example.com_gadgets.yaml",
        GADGET_CRD,
    );
    // Not judged, and counted in a note: a test, a generated deep copy, vendored code.
    write(
        root,
        "internal/controller/widget_controller_test.go",
        &CONTROLLER.replace("package controller", "package controller_test"),
    );
    write(root, "api/v1/zz_generated.deepcopy.go", "package v1\n");
    write(root, "vendor/example.org/lib/lib.go", CONTROLLER);
    let (code, doc, err) = scan(root, &[]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        findings(&doc),
        [
            ("widget_controller.go".into(), 19, "CA101".into()),
            ("widget_controller.go".into(), 27, "CA101".into()),
        ],
        "{doc:#}"
    );
    let notes = notes(&doc);
    assert!(
        notes.contains("3 Go files") && notes.contains("_test.go"),
        "{notes}"
    );
}

#[test]
fn a_file_that_cannot_be_walked_hides_no_other_files_findings() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "go.mod", GO_MOD);
    write(root, "api/v1/widget_types.go", TYPES);
    write(root, "internal/controller/widget_controller.go", CONTROLLER);
    let deep = format!(
        "package controller\n\nvar x = {}1{}\n",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    write(root, "internal/controller/deep.go", &deep);
    write(
        root,
        "internal/controller/broken.go",
        "package controller\n\nfunc f( {\n",
    );
    let (code, doc, err) = scan(root, &[]);
    assert_eq!(code, 1, "{err}");
    let got = findings(&doc);
    for want in [
        ("broken.go", 3, "CA001"),
        ("deep.go", 3, "CA001"),
        ("widget_controller.go", 19, "CA101"),
    ] {
        assert!(
            got.contains(&(want.0.to_string(), want.1, want.2.to_string())),
            "{want:?} not in {got:?}"
        );
    }
}

#[test]
fn an_allow_comment_in_go_suppresses_with_its_reason_and_a_bare_one_is_ca002() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "go.mod", GO_MOD);
    write(root, "api/v1/widget_types.go", TYPES);
    let text = CONTROLLER
        .replace(
            "\treturn ctrl.Result{}, r.Update(ctx, &w)\n",
            "\t// ctrlaudit: allow(CA101) reason: migrating to Status().Update in #42\n\treturn ctrl.Result{}, r.Update(ctx, &w)\n",
        )
        .replace("\t_ = 0\n", "\t// ctrlaudit: allow(CA203)\n");
    write(root, "internal/controller/widget_controller.go", &text);
    write(
        root,
        "config/crd/bases/example.com_gadgets.yaml",
        GADGET_CRD,
    );
    let (_, doc, err) = scan(root, &[]);
    let got = findings(&doc);
    assert!(
        !got.iter().any(|f| f.1 == 20 && f.2 == "CA101"),
        "{got:?} {err}"
    );
    assert!(
        got.contains(&("widget_controller.go".into(), 28, "CA101".into())),
        "{got:?}"
    );
    assert!(got.iter().any(|f| f.2 == "CA002" && f.1 == 27), "{got:?}");
}

#[test]
fn a_module_without_a_controller_library_is_a_note_and_nothing_analysed_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "go.mod",
        "module example.com/cli\n\ngo 1.22\n\nrequire github.com/spf13/cobra v1.8.0\n",
    );
    write(root, "main.go", "package main\n\nfunc main() {}\n");
    let o = Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
        .arg("scan")
        .arg(root)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("1 Go file"), "{err}");
    assert!(
        err.contains("go.mod requires neither controller-runtime nor client-go"),
        "{err}"
    );
}

#[test]
fn a_repository_with_both_languages_is_judged_in_each() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "operator-go/go.mod", GO_MOD);
    write(root, "operator-go/api/v1/widget_types.go", TYPES);
    write(
        root,
        "operator-go/internal/controller/widget_controller.go",
        CONTROLLER,
    );
    let rust = std::fs::read_to_string(
        "fixtures/scan/CA202-volatile-value-written-every-reconcile/bad_annotation_timestamp.rs",
    )
    .unwrap();
    write(root, "operator-rs/controller.rs", &rust);
    let (code, doc, err) = scan(root, &[]);
    assert_eq!(code, 1, "{err}");
    let got = findings(&doc);
    assert!(
        got.iter()
            .any(|f| f.0 == "widget_controller.go" && f.2 == "CA101"),
        "{got:?}"
    );
    assert!(
        got.iter().any(|f| f.0 == "controller.rs" && f.2 == "CA202"),
        "{got:?}"
    );
}
