//! `kubectl ctrlaudit bench` against the testenv control plane: short runs of the real binary, asserting who
//! converges, who loops and who conflicts, never how fast.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_kubectl-ctrlaudit");

fn bench(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("bench")
        .args(args)
        .output()
        .unwrap()
}

fn report(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not the JSON report ({e}); exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn variant<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no variant {name} in the report"))
}

/// The CSV column `col` of every row.
fn column(csv: &Path, col: &str) -> Vec<f64> {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = header.iter().position(|h| *h == col).unwrap();
    lines
        .map(|l| l.split(',').nth(i).unwrap().parse::<f64>().unwrap())
        .collect()
}

async fn run_namespaces(client: &kube::Client, run_id: &str) -> Vec<String> {
    let api: Api<Namespace> = Api::all(client.clone());
    api.list(&ListParams::default().labels(&format!("ctrlaudit.io/bench-run={run_id}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect()
}

#[tokio::test]
async fn a_short_bench_shows_who_converges_loops_and_conflicts() {
    let Some(env) = common::testenv("bench_short").await else {
        return;
    };
    let out_dir = tempfile::tempdir().unwrap();
    let args = [
        "--variants",
        "good,bad-annotation-loop,bad-status-on-main,good-update",
        "--objects",
        "40",
        "--duration",
        "25s",
        // Another writer on a few objects: what makes replace_status conflict (and patch not).
        "--churn",
        "30",
        "--probe",
        "1s",
        "--finalize-namespaces",
        "-o",
        "json",
        "--output-dir",
    ];
    let mut all: Vec<&str> = args.to_vec();
    all.push(out_dir.path().to_str().unwrap());
    let out = tokio::task::spawn_blocking({
        let kc = env.dir.join("kubeconfig");
        let all: Vec<String> = all.iter().map(|s| s.to_string()).collect();
        move || bench(&kc, &all.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    let r = report(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(r["complete"], true);

    let good = variant(&r, "good");
    assert_eq!(good["ready"], good["expected"], "good converges: {good}");
    assert_eq!(
        good["conflicts_409"], 0.0,
        "merge patches never conflict: {good}"
    );

    let bad_loop = variant(&r, "bad-annotation-loop");
    assert_eq!(bad_loop["settled"], false, "{bad_loop}");
    // Reconciles keep growing between scrapes right to the end of the window.
    let reconciles = column(
        &out_dir.path().join("bad-annotation-loop.csv"),
        "reconcile_total",
    );
    let n = reconciles.len();
    assert!(n > 10, "{n} rows");
    assert!(
        reconciles[n - 1] > reconciles[n - 3] && reconciles[n - 3] > reconciles[n - 6],
        "the annotation loop stopped: {reconciles:?}"
    );

    let on_main = variant(&r, "bad-status-on-main");
    assert_eq!(
        on_main["ready"], 0,
        "status through the main resource is dropped: {on_main}"
    );
    assert!(
        on_main["reconciles_total"].as_f64().unwrap() >= 40.0,
        "{on_main}"
    );

    let update = variant(&r, "good-update");
    assert_eq!(update["ready"], update["expected"], "{update}");
    assert!(
        update["conflicts_409"].as_f64().unwrap() > 0.0,
        "replace_status against another writer conflicts: {update}"
    );

    assert!(r["ceiling"]["per_second"].as_f64().unwrap() > 0.0);
    for f in [
        "good.csv",
        "bad-annotation-loop.csv",
        "variants.svg",
        "report.json",
    ] {
        assert!(out_dir.path().join(f).is_file(), "{f} missing");
    }
    // Everything it created is gone (testenv has no namespace controller: --finalize-namespaces).
    let run_id = r["run_id"].as_str().unwrap();
    assert!(run_namespaces(&env.client, run_id).await.is_empty());
    assert_eq!(
        r["cleanup"]["errors"].as_array().unwrap().len(),
        0,
        "{}",
        r["cleanup"]
    );
}

#[tokio::test]
async fn tenant_designs_report_memory_tasks_and_watches_per_tenant() {
    let Some(env) = common::testenv("bench_tenants").await else {
        return;
    };
    let out_dir = tempfile::tempdir().unwrap();
    let kc = env.dir.join("kubeconfig");
    let dir = out_dir.path().to_str().unwrap().to_string();
    let out = tokio::task::spawn_blocking(move || {
        bench(
            &kc,
            &[
                "--experiment",
                "tenants",
                "--tenants",
                "4",
                "--objects",
                "8",
                "--duration",
                "8s",
                "--probe",
                "0s",
                "--finalize-namespaces",
                "-o",
                "json",
                "--output-dir",
                &dir,
            ],
        )
    })
    .await
    .unwrap();
    let r = report(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, watches, controllers) in [("per-tenant", 4.0, 4.0), ("shared", 1.0, 1.0)] {
        let v = variant(&r, name);
        assert_eq!(v["ready"], 8, "{v}");
        let t = &v["tenants"];
        assert_eq!(t["tenants"], 4, "{v}");
        assert_eq!(t["watches_open"], watches, "{v}");
        assert_eq!(t["controllers"], controllers, "{v}");
        assert!(t["resident_bytes"].as_f64().unwrap() > 0.0, "{v}");
        assert!(t["bytes_per_tenant"].is_number(), "{v}");
    }
    let per = &variant(&r, "per-tenant")["tenants"];
    let shared = &variant(&r, "shared")["tenants"];
    assert!(
        per["tasks"].as_f64().unwrap() > shared["tasks"].as_f64().unwrap(),
        "one controller per tenant runs more tasks: {per} vs {shared}"
    );
}

#[tokio::test]
async fn forbidden_says_which_verb_on_which_resource_is_missing() {
    let Some(env) = common::testenv("bench_forbidden").await else {
        return;
    };
    let kc = env.dir.join("readonly.kubeconfig");
    let out = tokio::task::spawn_blocking(move || {
        bench(
            &kc,
            &["--rule", "CA201", "--objects", "5", "--duration", "5s"],
        )
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "stderr: {stderr}");
    assert!(stderr.contains("forbidden"), "{stderr}");
    assert!(stderr.contains("`create` on namespaces"), "{stderr}");
    assert!(
        stderr.contains("`patch` on widgets.bench.ctrlaudit.io/status"),
        "{stderr}"
    );
    assert!(stderr.contains(common::READONLY_USER), "{stderr}");
}

#[tokio::test]
async fn cleanup_removes_a_runs_namespaces_and_nothing_else() {
    let Some(env) = common::testenv("bench_cleanup").await else {
        return;
    };
    let api: Api<Namespace> = Api::all(env.client.clone());
    let run_id = format!("c{:05x}", std::process::id() & 0xfffff);
    let mk = |name: String, labelled: bool| Namespace {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(if labelled {
                [
                    ("ctrlaudit.io/bench-run".to_string(), run_id.clone()),
                    (
                        "app.kubernetes.io/managed-by".to_string(),
                        "kubectl-ctrlaudit".to_string(),
                    ),
                ]
                .into()
            } else {
                Default::default()
            }),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    let ours = format!("ctrlaudit-bench-{run_id}-good");
    let theirs = format!("ctrlaudit-bench-{run_id}-not-ours");
    api.create(&PostParams::default(), &mk(ours.clone(), true))
        .await
        .unwrap();
    api.create(&PostParams::default(), &mk(theirs.clone(), false))
        .await
        .unwrap();

    let kc = env.dir.join("kubeconfig");
    let id = run_id.clone();
    let out = tokio::task::spawn_blocking(move || {
        bench(&kc, &["--cleanup", &id, "--finalize-namespaces"])
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        api.get_opt(&ours).await.unwrap().is_none(),
        "{ours} still there"
    );
    assert!(
        api.get_opt(&theirs).await.unwrap().is_some(),
        "{theirs} was touched"
    );
    common::delete_namespace(&env.client, &theirs)
        .await
        .unwrap();
}
