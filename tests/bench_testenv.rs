//! `kubectl ctrlaudit bench` against the testenv control plane: short runs of the real binary, asserting who
//! converges, who loops and who conflicts, never how fast.
#![allow(clippy::unwrap_used)]

mod browser;
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, ObjectMeta, PostParams,
};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_kubectl-ctrlaudit");

// The bench runs of the tests below.
const GOOD: &str = "--variants good,good-update --objects 40 --duration 15s --churn 30 --settle 180s --probe 0s --keep --finalize-namespaces";
const BAD: &str = "--variants bad-annotation-loop,bad-status-on-main --objects 40 --duration 15s --probe 1s --keep --finalize-namespaces";
const TENANTS: &str = "--experiment tenants --tenants 4 --objects 8 --duration 8s --settle 180s --probe 0s --finalize-namespaces";

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

/// Runs `bench ARGS -o json --output-dir DIR` on a blocking thread; returns the process output.
async fn bench_json(env: &common::TestEnv, args: &[&str], dir: &Path) -> Output {
    let mut all = args.to_vec();
    all.extend(["-o", "json", "--output-dir", dir.to_str().unwrap()]);
    bench_off_thread(env.dir.join("kubeconfig"), &all).await
}

/// Runs `bench ARGS` with `kubeconfig` on a blocking thread, so the test's runtime keeps serving.
async fn bench_off_thread(kubeconfig: PathBuf, args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        bench(
            &kubeconfig,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    })
    .await
    .unwrap()
}

/// In a testenv namespace for the test `name`, runs `bench` with the whitespace-separated `args` (`-o json` into
/// a temporary dir), asserts exit 0 and a complete report. Returns the testenv, the report and the output dir
/// (removed when dropped).
async fn bench_run(name: &str, args: &str) -> (common::TestEnv, Value, tempfile::TempDir) {
    let env = common::testenv(name).await;
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<&str> = args.split_whitespace().collect();
    let out = bench_json(&env, &args, dir.path()).await;
    let r = report(&out);
    assert_success(&out);
    assert_eq!(r["complete"], true, "{r}");
    (env, r, dir)
}

fn assert_success(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Ready and total Widgets per namespace of a run, judged from the raw JSON the API server returns (what
/// `kubectl get widgets -o json` prints), independently of the library's own Ready test.
async fn listed_ready(client: &kube::Client, run_id: &str) -> BTreeMap<String, (u64, u64)> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "bench.ctrlaudit.io",
        "v1alpha1",
        "Widget",
    ));
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let list = api
        .list(&ListParams::default().labels(&format!("ctrlaudit.io/bench-run={run_id}")))
        .await
        .unwrap();
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for w in list.items {
        let ns = w.metadata.namespace.clone().unwrap();
        let status = &w.data["status"];
        let ready = status["phase"] == "Ready"
            && status["observedGeneration"].as_i64() == w.metadata.generation;
        let e = out.entry(ns).or_default();
        e.0 += u64::from(ready);
        e.1 += 1;
    }
    out
}

/// Convergence is what is asserted here, so the run waits for it (`--settle`, bounded) instead of hoping a
/// fixed window is long enough on a loaded machine; the other writer (`--churn`) is what makes replace_status
/// conflict, and merge patches not. `--keep` leaves the objects so that the report's Ready counts can be
/// checked against a LIST of them.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn good_variants_converge_beside_another_writer_and_ready_matches_a_list() {
    let (env, r, _out_dir) = bench_run("bench_good", GOOD).await;

    let good = variant(&r, "good");
    assert_eq!(good["ready"], good["expected"], "good converges: {good}");
    assert_eq!(good["settled"], true, "good settles: {good}");
    assert_eq!(
        good["conflicts_409"], 0.0,
        "merge patches never conflict: {good}"
    );
    let update = variant(&r, "good-update");
    assert_eq!(update["ready"], update["expected"], "{update}");
    assert_eq!(update["settled"], true, "{update}");
    assert!(
        update["conflicts_409"].as_f64().unwrap() > 0.0,
        "replace_status against another writer conflicts: {update}"
    );
    let churn = &r["churn"];
    assert!(churn["accepted"].as_u64().unwrap() > 0, "{churn}");
    assert!(r["ended_s"].as_f64().unwrap() >= 15.0, "{}", r["ended_s"]);

    ready_matches_a_list_then_clean_up(&env, &r, &["good", "good-update"]).await;
}

/// The report's Ready counts are what the API server holds once the run is over (`--keep` left the objects);
/// then `bench --cleanup` removes the run.
async fn ready_matches_a_list_then_clean_up(env: &common::TestEnv, r: &Value, names: &[&str]) {
    let run_id = r["run_id"].as_str().unwrap().to_string();
    assert!(r["cleanup_command"].as_str().unwrap().contains(&run_id));
    let listed = listed_ready(&env.client, &run_id).await;
    for name in names {
        let ns = format!("ctrlaudit-bench-{run_id}-{name}");
        let (ready, total) = listed.get(&ns).copied().unwrap_or_default();
        assert_eq!(
            Some(total),
            variant(r, name)["expected"].as_u64(),
            "{ns}: {listed:?}"
        );
        assert_eq!(
            Some(ready),
            variant(r, name)["ready"].as_u64(),
            "{name}: the report's Ready differs from a LIST"
        );
    }
    let out = bench_off_thread(
        env.dir.join("kubeconfig"),
        &["--cleanup", &run_id, "--finalize-namespaces"],
    )
    .await;
    assert_success(&out);
    assert!(run_namespaces(&env.client, &run_id).await.is_empty());
}

/// "Never converges" needs a window: the bad variants run for a fixed one.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn bad_variants_loop_or_never_become_ready() {
    let (env, r, out_dir) = bench_run("bench_bad", BAD).await;

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

    assert!(r["ceiling"]["per_second"].as_f64().unwrap() > 0.0);
    for f in [
        "bad-annotation-loop.csv",
        "bad-status-on-main.csv",
        "variants.svg",
        "report.json",
        "report.html",
    ] {
        assert!(out_dir.path().join(f).is_file(), "{f} missing");
    }
    // The page people share renders its tables and its chart, with no console error.
    let page = browser::render(&out_dir.path().join("report.html"));
    assert!(page.errors.is_empty(), "console errors: {:?}", page.errors);
    assert!(page.tables >= 1 && page.table_rows >= 2, "{page:?}");
    assert_eq!(page.charts.len(), 1, "{:?}", page.charts);
    let (w, h) = page.charts[0];
    assert!(w > 300.0 && h > 200.0, "chart laid out at {w}x{h}");
    for text in [
        "bad-annotation-loop",
        "bad-status-on-main",
        "CA202",
        "write ceiling",
    ] {
        assert!(page.text.contains(text), "{text} missing:\n{}", page.text);
    }
    browser::save_screenshot("bench-report.png", &page.png);
    // A loop reaches some objects and not others: a count worth checking against the objects themselves.
    ready_matches_a_list_then_clean_up(&env, &r, &["bad-annotation-loop", "bad-status-on-main"])
        .await;
}

#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn tenant_designs_report_memory_tasks_and_watches_per_tenant() {
    // Every object Ready is asserted: --settle waits for it (bounded) rather than trusting 8 s.
    let (env, r, _out_dir) = bench_run("bench_tenants", TENANTS).await;
    for (name, watches, controllers) in [("per-tenant", 4.0, 4.0), ("shared", 1.0, 1.0)] {
        let v = variant(&r, name);
        assert_eq!(v["ready"], 8, "{v}");
        assert_eq!(v["settled"], true, "{v}");
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
    // Everything it created is gone (testenv has no namespace controller: --finalize-namespaces).
    let run_id = r["run_id"].as_str().unwrap();
    assert!(run_namespaces(&env.client, run_id).await.is_empty());
    assert_eq!(
        r["cleanup"]["errors"].as_array().unwrap().len(),
        0,
        "{}",
        r["cleanup"]
    );
    assert!(r["cleanup_command"].is_null(), "{}", r["cleanup_command"]);
}

#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn forbidden_says_which_verb_on_which_resource_is_missing() {
    let env = common::testenv("bench_forbidden").await;
    let out = bench_off_thread(
        env.dir.join("readonly.kubeconfig"),
        &["--rule", "CA201", "--objects", "5", "--duration", "5s"],
    )
    .await;
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
#[ignore = "needs testenv: ./test.sh runs it"]
async fn cleanup_removes_a_runs_namespaces_and_nothing_else() {
    let env = common::testenv("bench_cleanup").await;
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

    let out = bench_off_thread(
        env.dir.join("kubeconfig"),
        &["--cleanup", &run_id, "--finalize-namespaces"],
    )
    .await;
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

/// How a test interrupts a bench run.
#[derive(Debug, Clone, Copy)]
enum Signal {
    Int,
    Term,
    /// Two SIGINTs: quit at once, printing the cleanup command.
    IntTwice,
}

/// Runs `bench ARGS`, calls `act` once when a stderr line starts with `at`; returns the exit code, the run id,
/// stdout and stderr. Bounded: a run that outlives its patience fails the test.
fn bench_acting_at(
    kubeconfig: &Path,
    args: &str,
    at: &str,
    act: impl FnOnce(&str),
) -> (Option<i32>, String, String, String) {
    use std::io::{BufRead, BufReader, Read};
    let mut child = Command::new(BIN)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("bench")
        .args(args.split_whitespace())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let mut stdout_pipe = child.stdout.take().unwrap();
    let stdout_reader = std::thread::spawn(move || {
        let mut s = String::new();
        stdout_pipe.read_to_string(&mut s).unwrap();
        s
    });
    let patience = std::time::Instant::now() + std::time::Duration::from_secs(240);
    let mut stderr = String::new();
    let mut act = Some(act);
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        stderr.push_str(&line);
        stderr.push('\n');
        if line.trim_start().starts_with(at)
            && let Some(act) = act.take()
        {
            act(&pid);
        }
        assert!(
            std::time::Instant::now() < patience,
            "bench did not end:\n{stderr}"
        );
    }
    let status = child.wait().unwrap();
    assert!(act.is_none(), "never reached {at:?}:\n{stderr}");
    let run_id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("run ").and_then(|r| r.split(':').next()))
        .unwrap_or_else(|| panic!("no run id:\n{stderr}"))
        .to_string();
    (status.code(), run_id, stdout_reader.join().unwrap(), stderr)
}

/// Runs `bench ARGS` and sends `signal` when a stderr line starts with `at`; returns the exit code, the run id
/// and stderr.
fn interrupt_bench(
    kubeconfig: &Path,
    args: &str,
    at: &str,
    signal: Signal,
) -> (Option<i32>, String, String) {
    let kill = |pid: &str, sig: &str| {
        Command::new("kill")
            .args(["-s", sig, pid])
            .status()
            .unwrap();
    };
    let (code, run_id, _, stderr) = bench_acting_at(kubeconfig, args, at, |pid| match signal {
        Signal::Int => kill(pid, "INT"),
        Signal::Term => kill(pid, "TERM"),
        Signal::IntTwice => {
            kill(pid, "INT");
            std::thread::sleep(std::time::Duration::from_millis(300));
            kill(pid, "INT");
        }
    });
    (code, run_id, stderr)
}

/// SIGINT or SIGTERM at each phase — CRD and probe, creating the Widgets, the run, the cleanup — ends the run
/// with exit 3 and leaves none of its namespaces; a second Ctrl-C quits at once and prints the command that
/// removes what is left, and that command works.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn interrupted_at_any_phase_it_leaves_nothing_or_says_how_to_remove_it() {
    let env = common::testenv("bench_interrupt").await;
    let kubeconfig = env.dir.join("kubeconfig");
    // A namespace that looks like a bench run's (its name pattern and both labels, another run id): no cleanup
    // of these runs may touch it.
    let planted = format!("ctrlaudit-bench-p{:05x}-good", std::process::id() & 0xfffff);
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(planted.clone()),
                    labels: Some(
                        [
                            ("ctrlaudit.io/bench-run".to_string(), "p00000".to_string()),
                            (
                                "app.kubernetes.io/managed-by".to_string(),
                                "kubectl-ctrlaudit".to_string(),
                            ),
                        ]
                        .into(),
                    ),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            },
        )
        .await
        .unwrap();
    const ARGS: &str = "--variants good,bad-annotation-loop --objects 300 --duration 10s --probe 2s --finalize-namespaces";
    for (at, signal) in [
        ("probing the API server", Signal::Int),
        ("creating ", Signal::Term),
        ("created ", Signal::Int),
        ("cleaning up run", Signal::Term),
    ] {
        let kc = kubeconfig.clone();
        let (code, run_id, stderr) =
            tokio::task::spawn_blocking(move || interrupt_bench(&kc, ARGS, at, signal))
                .await
                .unwrap();
        // Interrupted while cleaning up, the run itself was complete: it finishes the cleanup and says so.
        let expected = if at == "cleaning up run" {
            [0, 3]
        } else {
            [3, 3]
        };
        assert!(
            code.is_some_and(|c| expected.contains(&c)),
            "{signal:?} at {at:?}: exit {code:?}\n{stderr}"
        );
        let left = run_namespaces(&env.client, &run_id).await;
        assert!(
            left.is_empty(),
            "{signal:?} at {at:?} left {left:?}\n{stderr}"
        );
    }

    let kc = kubeconfig.clone();
    let (code, run_id, stderr) = tokio::task::spawn_blocking(move || {
        interrupt_bench(&kc, ARGS, "created ", Signal::IntTwice)
    })
    .await
    .unwrap();
    assert_eq!(code, Some(3), "{stderr}");
    let hint = format!("to remove what is left: kubectl ctrlaudit bench --cleanup {run_id}");
    assert!(stderr.contains(&hint), "{stderr}");
    assert!(
        !run_namespaces(&env.client, &run_id).await.is_empty(),
        "quit at once cleans nothing"
    );
    let out = bench_off_thread(kubeconfig, &["--cleanup", &run_id, "--finalize-namespaces"]).await;
    assert_success(&out);
    assert!(run_namespaces(&env.client, &run_id).await.is_empty());
    let still = namespaces.get_opt(&planted).await.unwrap();
    assert!(
        still.is_some_and(|n| n.metadata.deletion_timestamp.is_none()),
        "{planted} was touched"
    );
    common::delete_namespace(&env.client, &planted)
        .await
        .unwrap();
}

/// kube-apiserver killed in the middle of a run (a private control plane, without the Widget CRD, so that the
/// bench installs it): exit 3, a report marked incomplete with the command that removes what is left, and that
/// command, once the API server is back, removes the namespaces and the CRD the run installed.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn the_api_server_killed_mid_run_gives_an_incomplete_report_and_a_cleanup_that_works() {
    let plane = common::plane::Plane::start_without_crd("bench-apiserver-killed").await;
    let out_dir = tempfile::tempdir().unwrap();
    let args = format!(
        "--variants good,bad-annotation-loop --objects 30 --duration 15s --probe 0s --finalize-namespaces --output-dir {}",
        out_dir.path().display()
    );
    let (code, run_id, stdout, stderr) = tokio::task::block_in_place(|| {
        bench_acting_at(&plane.kubeconfig, &args, "created ", |_| {
            plane.kill_apiserver()
        })
    });
    assert_eq!(code, Some(3), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("INCOMPLETE: the API server went away"),
        "{stdout}"
    );
    let hint = format!("to remove what is left: kubectl ctrlaudit bench --cleanup {run_id}");
    assert!(stdout.contains(&hint), "{stdout}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.path().join("report.json")).unwrap())
            .unwrap();
    assert_eq!(report["complete"], false);
    assert!(
        report["cleanup_command"]
            .as_str()
            .unwrap()
            .contains(&run_id)
    );

    plane.restart_apiserver().await;
    let out = bench_off_thread(
        plane.kubeconfig.clone(),
        &["--cleanup", &run_id, "--finalize-namespaces"],
    )
    .await;
    assert_success(&out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("and the CRD it installed"), "{said}");
    assert!(run_namespaces(&plane.client, &run_id).await.is_empty());
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(plane.client.clone());
    // The API server finalizes a deleted CRD on its own schedule: bounded wait, not a fixed sleep.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(90);
    while crds
        .get_opt(common::WIDGET_CRD_NAME)
        .await
        .unwrap()
        .is_some()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the CRD the run installed is still there"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}
