//! The live accuracy corpus: windows on testenv that mix controllers with the people and tools every real
//! namespace also has (kubectl apply, edit, scale, annotate and label bursts, a helm-like install and upgrade,
//! two GitOps tools and a CI job re-applying identical manifests, an autoscaler, a controller that only reads),
//! beside the seed controllers of the benchmark the project grew from.
//!
//! Each scenario runs once against the real API server with its audit log, as the read-only identity under
//! live's own user agent, and is judged by its hand-written labels (`fixtures/live/<scenario>/labels.json`: the
//! findings it must and must not give, with the audit log and without it). `CTRLAUDIT_BLESS=1` saves the window
//! as the fixture that tests/live_fixtures.rs replays both ways; the people use the real kubectl that
//! testenv/build.sh builds at the cluster's version, so their requests are kubectl's own.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::live::{observe_as, stable_snapshot, start_variant_working};
use ctrlaudit::bench::variants::Code;
use ctrlaudit::bench::widget::Widget;
use ctrlaudit::config::Config;
use ctrlaudit::finding::Finding;
use ctrlaudit::live::snapshot::Snapshot;
use ctrlaudit::live::{self, Observed, detectors, record};
use ctrlaudit::policy::Policy;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tokio::sync::Mutex;

/// One scenario at a time: the API server's counters are cluster-wide.
static SERIAL: Mutex<()> = Mutex::const_new(());

const WINDOW: &str = "10s";

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/live")
        .join(name)
}

fn bless() -> bool {
    std::env::var_os("CTRLAUDIT_BLESS").is_some()
}

/// The kubectl testenv built (`CTRLAUDIT_TESTENV_KUBECTL`, also in the state dir's `env`).
fn kubectl_bin(env: &common::TestEnv) -> PathBuf {
    if let Some(p) = std::env::var_os("CTRLAUDIT_TESTENV_KUBECTL").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let text = std::fs::read_to_string(env.dir.join("env")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("export CTRLAUDIT_TESTENV_KUBECTL="))
        .map(|v| PathBuf::from(v.trim_matches('\'')))
        .unwrap_or_else(|| {
            panic!(
                "testenv has no kubectl: testenv/build.sh builds it (testenv/kubectl), then start testenv again"
            )
        })
}

/// kubectl as the admin user in the scenario's namespace, its discovery cache with the testenv (not in ~/.kube).
fn kubectl_cmd(env: &common::TestEnv, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(kubectl_bin(env));
    cmd.arg("--kubeconfig")
        .arg(env.dir.join("kubeconfig"))
        .arg("--cache-dir")
        .arg(env.dir.join("kubectl-cache"))
        .args(["-n", &env.namespace])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

/// Waits for a kubectl run and panics when it failed.
async fn finished(mut child: tokio::process::Child, stdin: Option<String>, args: &[&str]) {
    use tokio::io::AsyncWriteExt;
    let mut pipe = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        pipe.write_all(text.as_bytes()).await.unwrap();
    }
    drop(pipe);
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs kubectl, `stdin` piped in; panics when it fails.
async fn kubectl(env: &common::TestEnv, args: &[&str], stdin: Option<String>) {
    finished(kubectl_cmd(env, args).spawn().unwrap(), stdin, args).await;
}

/// `kubectl edit` with `editor` as `KUBE_EDITOR`.
async fn kubectl_with_editor(env: &common::TestEnv, editor: &str, args: &[&str]) {
    let child = kubectl_cmd(env, args)
        .env("KUBE_EDITOR", editor)
        .spawn()
        .unwrap();
    finished(child, None, args).await;
}

/// `n` Widget manifests named `{prefix}-{i}`, as a file a person would `kubectl apply -f`.
fn manifests(n: usize, prefix: &str, message: &str) -> String {
    (0..n)
        .map(|i| {
            format!(
                "apiVersion: bench.ctrlaudit.io/v1alpha1\nkind: Widget\nmetadata:\n  name: {prefix}-{i}\nspec:\n  count: 1\n  \
                 message: {message}\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

/// A client of the admin user that announces itself as `user_agent`.
async fn client_as(env: &common::TestEnv, user_agent: &str) -> Client {
    common::client_from(&env.dir.join("kubeconfig"), user_agent)
        .await
        .unwrap()
}

/// Server-side applies `body` (merged into a Widget named `name`) as field manager `manager`.
async fn apply(client: &Client, ns: &str, name: &str, manager: &str, body: serde_json::Value) {
    let api: Api<Widget> = Api::namespaced(client.clone(), ns);
    let mut doc = json!({
        "apiVersion": "bench.ctrlaudit.io/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": name},
    });
    merge(&mut doc, body);
    api.patch(name, &PatchParams::apply(manager), &Patch::Apply(doc))
        .await
        .unwrap();
}

fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
    match (a, b) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

/// Keeps a watch of the namespace's Widgets open for `secs`, as a GitOps tool or a dashboard does.
fn watch_for(client: Client, ns: &str, secs: u64) -> tokio::task::JoinHandle<()> {
    use futures::StreamExt;
    let api: Api<Widget> = Api::namespaced(client, ns);
    tokio::spawn(async move {
        let stream = kube::runtime::watcher(api, kube::runtime::watcher::Config::default());
        let _ =
            tokio::time::timeout(Duration::from_secs(secs), stream.for_each(|_| async {})).await;
    })
}

/// The findings on `snap` as `live --replay` gives them (default policy).
fn judge(snap: &Snapshot) -> Vec<Finding> {
    let cfg = Config::default();
    let mut f = detectors::run_all(snap, &cfg);
    Policy::from_config(&cfg).apply(&mut f);
    f
}

fn show(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            format!(
                "  {} {} [{}] — {}\n",
                f.code,
                f.subject.label(),
                f.severity,
                f.message
            )
        })
        .collect()
}

/// Checks the window against `fixtures/live/<name>/labels.json`, with its audit log and without, and saves it as
/// that fixture when blessing (the namespace renamed to a stable one, the API server's counters of other
/// resources left out).
fn judge_and_record(name: &str, o: &Observed, ns: &str) {
    let labels = record::read_labels(&fixture(name))
        .unwrap()
        .unwrap_or_else(|| {
            panic!("{name}: fixtures/live/{name}/labels.json is missing: write the labels first")
        });
    let mut snap = stable_snapshot(o, ns, name);
    assert!(snap.audit.is_some(), "{name}: the window read no audit log");
    // Kept for a look when a label fails (target/ is not part of the checkout).
    let kept = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("live-corpus")
        .join(name);
    record::write(&kept, &snap, &[]).unwrap();
    let with = judge(&snap);
    let wrong = labels.findings.check(&with);
    assert!(
        wrong.is_empty(),
        "{name}, with the audit log:\n{}\n{}",
        wrong.join("\n"),
        show(&with)
    );
    if let Some(set) = &labels.without_audit {
        let without = judge(&record::without_audit(&snap));
        let wrong = set.check(&without);
        assert!(
            wrong.is_empty(),
            "{name}, without the audit log:\n{}\n{}",
            wrong.join("\n"),
            show(&without)
        );
    }
    if bless() {
        // The recorded notes include the window's own; a replay classifies the actors again.
        snap.notes.retain(|n| n.subject != "actors");
        record::write(&fixture(name), &snap, &with).unwrap();
    }
}

/// Starts `variants`, observes a window with the audit log and their metrics while `drive` runs, stops them.
async fn window<F: Future<Output = ()>>(
    env: &common::TestEnv,
    variants: &[(Code, &str)],
    extra: &[&str],
    drive: F,
) -> Observed {
    window_working(env, variants, Duration::from_millis(10), extra, drive).await
}

/// [`window`] with each of the variants' reconciles taking `work`.
async fn window_working<F: Future<Output = ()>>(
    env: &common::TestEnv,
    variants: &[(Code, &str)],
    work: Duration,
    extra: &[&str],
    drive: F,
) -> Observed {
    let mut running = Vec::new();
    for (code, name) in variants {
        running.push(start_variant_working(env, *code, name, 1, work).await);
    }
    let audit = env.audit_log.clone().unwrap().display().to_string();
    let mut args: Vec<&str> = vec!["--audit-log", &audit];
    for v in &running {
        args.extend(["--metrics-url", v.url.as_str()]);
    }
    args.extend_from_slice(extra);
    let tool = common::client_from(&env.dir.join("readonly.kubeconfig"), live::USER_AGENT)
        .await
        .unwrap();
    let o = observe_as(env, tool, WINDOW, &args, drive).await;
    for v in running {
        v.stop().await;
    }
    o
}

/// Creates `n` Widgets `w-{i}` with `kubectl create`, as a person setting up the namespace.
async fn seed_widgets(env: &common::TestEnv, n: usize) {
    kubectl(
        env,
        &["create", "-f", "-"],
        Some(manifests(n, "w", "hello")),
    )
    .await;
}

/// kubectl applies 40 Widgets (one invocation), then applies the same file again, beside a good controller:
/// kubectl GETs each object and the namespace once per object; it is no controller with a cache to read from.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn people_kubectl_apply_burst() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-kubectl-apply").await;
    let o = window(&env, &[(Code::Good, "good-patch")], &[], async {
        let m = manifests(40, "app", "v1");
        kubectl(&env, &["apply", "-f", "-"], Some(m.clone())).await;
        kubectl(&env, &["apply", "-f", "-"], Some(m)).await;
    })
    .await;
    judge_and_record("people-kubectl-apply-burst", &o, &env.namespace);
}

/// A person stamps `deployed-at=<now>` on every Widget three times, beside a good controller: a timestamp
/// annotation rewritten, but by kubectl, which has no reconcile to loop.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn people_kubectl_annotate_timestamps() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-kubectl-annotate").await;
    seed_widgets(&env, 6).await;
    let o = window(&env, &[(Code::Good, "good-patch")], &[], async {
        for _ in 0..3 {
            let now = jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string();
            kubectl(
                &env,
                &[
                    "annotate",
                    "--overwrite",
                    "widgets",
                    "--all",
                    &format!("example.com/deployed-at={now}"),
                ],
                None,
            )
            .await;
            kubectl(
                &env,
                &["label", "--overwrite", "widgets", "--all", "tier=web"],
                None,
            )
            .await;
            tokio::time::sleep(Duration::from_millis(1500)).await;
        }
    })
    .await;
    judge_and_record("people-kubectl-annotate-timestamps", &o, &env.namespace);
}

/// Two GitOps tools, each holding a watch, re-apply the same six Widgets ten times with no controller running:
/// writes that change nothing are no dropped status, and co-owners of one value no fight.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn gitops_identical_reapply() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-gitops").await;
    let argo = client_as(&env, "argocd-application-controller/v3.1.5").await;
    let flux = client_as(&env, "kustomize-controller/v1.6.1").await;
    let ns = env.namespace.clone();
    let spec = json!({"spec": {"count": 1, "message": "from git"}});
    for i in 0..6 {
        apply(
            &argo,
            &ns,
            &format!("app-{i}"),
            "argocd-controller",
            spec.clone(),
        )
        .await;
    }
    let o = window(&env, &[], &[], async {
        let watches = [
            watch_for(argo.clone(), &ns, 9),
            watch_for(flux.clone(), &ns, 9),
        ];
        for _ in 0..10 {
            for i in 0..6 {
                let name = format!("app-{i}");
                apply(&argo, &ns, &name, "argocd-controller", spec.clone()).await;
                apply(&flux, &ns, &name, "kustomize-controller", spec.clone()).await;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        for w in watches {
            let _ = w.await;
        }
    })
    .await;
    judge_and_record("gitops-identical-reapply", &o, &env.namespace);
}

/// Three managers co-own `spec.count = 1` by server-side apply, each also bumping a label of its own on every
/// round, so the field is handed around with every apply: the value never changes, so nothing is fought over.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn co_owners_of_one_value() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-co-owners").await;
    let ns = env.namespace.clone();
    let teams = ["team-a", "team-b", "team-c"];
    let mut clients = Vec::new();
    for t in teams {
        clients.push((t, client_as(&env, &format!("{t}-sync/1.2.0")).await));
    }
    let o = window(&env, &[(Code::Good, "good-patch")], &[], async {
        for round in 0..6 {
            for (team, client) in &clients {
                for i in 0..4 {
                    let body = json!({
                        "metadata": {"labels": {format!("{team}/round"): round.to_string()}},
                        "spec": {"count": 1},
                    });
                    apply(client, &ns, &format!("shared-{i}"), team, body).await;
                }
            }
            tokio::time::sleep(Duration::from_millis(700)).await;
        }
    })
    .await;
    judge_and_record("co-owners-of-one-value", &o, &env.namespace);
}

/// The operator and the scaler of `bad-fight` flip `spec.count` between their values while a person labels the
/// Widgets: the fight is named, the person is not.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn fight_beside_kubectl_label() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-fight").await;
    seed_widgets(&env, 6).await;
    let o = window(&env, &[(Code::BadFight, "bad-fight")], &[], async {
        for tier in ["web", "api", "web"] {
            kubectl(
                &env,
                &[
                    "label",
                    "--overwrite",
                    "widgets",
                    "--all",
                    &format!("tier={tier}"),
                ],
                None,
            )
            .await;
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    })
    .await;
    judge_and_record("fight-beside-kubectl-label", &o, &env.namespace);
}

/// A helm-like release: 20 Widgets installed in one burst, then upgraded (a new message and a revision
/// annotation on each), beside a good controller.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn helm_like_install_and_upgrade() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-helm").await;
    let helm = client_as(&env, "Helm/3.16.2").await;
    let ns = env.namespace.clone();
    let o = window(&env, &[(Code::Good, "good-patch")], &[], async {
        for (revision, message) in [(1, "v1"), (2, "v2")] {
            for i in 0..20 {
                let body = json!({
                    "metadata": {
                        "labels": {"app.kubernetes.io/managed-by": "Helm"},
                        "annotations": {
                            "meta.helm.sh/release-name": "shop",
                            "meta.helm.sh/release-revision": revision.to_string(),
                        },
                    },
                    "spec": {"count": 1, "message": message},
                });
                apply(&helm, &ns, &format!("shop-{i}"), "helm", body).await;
            }
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
    })
    .await;
    judge_and_record("helm-like-install-and-upgrade", &o, &env.namespace);
}

/// A CI pipeline runs `kubectl apply --server-side` of the same ten manifests four times, beside a good
/// controller: identical re-applies, and kubectl's reads.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn ci_reapply_identical() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-ci").await;
    let o = window(&env, &[(Code::Good, "good-patch")], &[], async {
        let m = manifests(10, "svc", "release-42");
        for _ in 0..4 {
            kubectl(
                &env,
                &[
                    "apply",
                    "--server-side",
                    "--field-manager",
                    "ci-deploy",
                    "-f",
                    "-",
                ],
                Some(m.clone()),
            )
            .await;
            tokio::time::sleep(Duration::from_millis(1500)).await;
        }
    })
    .await;
    judge_and_record("ci-reapply-identical", &o, &env.namespace);
}

/// An autoscaler (kube-controller-manager's user agent and field manager) raises `spec.count` step by step on
/// each Widget beside a good controller that writes status only: a field that moves on, not one flipped back.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn autoscaler_beside_a_good_controller() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-autoscaler").await;
    seed_widgets(&env, 6).await;
    let hpa = client_as(
        &env,
        "kube-controller-manager/v1.34.12 (linux/amd64) kubernetes/0000000/system:serviceaccount:kube-system:horizontal-pod-autoscaler",
    )
    .await;
    let ns = env.namespace.clone();
    let o = window(&env, &[(Code::Good, "good-patch")], &[], async {
        let api: Api<Widget> = Api::namespaced(hpa.clone(), &ns);
        for count in 2..6 {
            for i in 0..6 {
                api.patch(
                    &format!("w-{i}"),
                    &PatchParams {
                        field_manager: Some("kube-controller-manager".into()),
                        ..PatchParams::default()
                    },
                    &Patch::Merge(json!({"spec": {"count": count}})),
                )
                .await
                .unwrap();
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    })
    .await;
    judge_and_record("autoscaler-beside-a-good-controller", &o, &env.namespace);
}

/// A dashboard that only reads (one list and a watch of the Widgets) beside a good controller.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn read_only_dashboard() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-dashboard").await;
    seed_widgets(&env, 6).await;
    let dash = client_as(&env, "widget-dashboard/0.4.0").await;
    let ns = env.namespace.clone();
    let o = window(&env, &[(Code::Good, "good-patch")], &[], async {
        let _ = watch_for(dash.clone(), &ns, 8).await;
    })
    .await;
    judge_and_record("read-only-dashboard", &o, &env.namespace);
}

/// Seed: the timestamp annotation written on every reconcile, without a generation predicate.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn seed_annotation_loop() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-seed-loop").await;
    seed_widgets(&env, 6).await;
    let o = window(
        &env,
        &[(Code::BadAnnotationLoop, "bad-annotation-loop")],
        &[],
        async {},
    )
    .await;
    judge_and_record("seed-annotation-loop", &o, &env.namespace);
}

/// Seed: status written through the main resource of a type with the status subresource.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn seed_status_on_main() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-seed-status").await;
    // Created in the window, so that the controller's writes fall in it whatever the machine's speed (it writes
    // each object once: created before, they could all be done before the first scrape).
    let o = window(
        &env,
        &[(Code::BadStatusOnMain, "bad-status-on-main")],
        &[],
        seed_widgets(&env, 6),
    )
    .await;
    judge_and_record("seed-status-on-main", &o, &env.namespace);
}

/// Seed, good: `Status().Update` with a retry on conflict, while a person applies 20 Widgets with kubectl.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn seed_good_update_beside_kubectl() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-seed-update").await;
    seed_widgets(&env, 6).await;
    let o = window(&env, &[(Code::GoodUpdate, "good-update")], &[], async {
        kubectl(
            &env,
            &["apply", "-f", "-"],
            Some(manifests(20, "app", "v1")),
        )
        .await;
    })
    .await;
    judge_and_record("seed-good-update-beside-kubectl", &o, &env.namespace);
}

/// Seed, good: `Status().Patch`, while a helm-like client installs 20 Widgets.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn seed_good_patch_beside_helm() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-seed-patch").await;
    seed_widgets(&env, 6).await;
    let helm = client_as(&env, "Helm/3.16.2").await;
    let ns = env.namespace.clone();
    let o = window(&env, &[(Code::Good, "good-patch")], &[], async {
        for i in 0..20 {
            apply(
                &helm,
                &ns,
                &format!("shop-{i}"),
                "helm",
                json!({"spec": {"count": 1, "message": "v1"}}),
            )
            .await;
        }
    })
    .await;
    judge_and_record("seed-good-patch-beside-helm", &o, &env.namespace);
}

/// Status on the main resource on a managed cluster: the audit log is read but logs custom resources at the
/// `Metadata` level (no request bodies), and the API server's /metrics cannot be read. CA101 is then inferred,
/// and says that the log it read has no bodies to confirm it, not that there is no log.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn status_on_main_on_a_managed_cluster() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-managed").await;
    let mut o = window(
        &env,
        &[(Code::BadStatusOnMain, "bad-status-on-main")],
        &["--no-apiserver-metrics"],
        seed_widgets(&env, 6),
    )
    .await;
    // The same window's audit events as a Metadata-level policy would have logged them: no bodies.
    let log = env.audit_log.clone().unwrap();
    let events = common::audit_events(&log, &env.namespace, Duration::from_secs(10), |e| {
        !e.is_empty()
    })
    .await
    .unwrap();
    let (from, to) = (o.snapshot.window.start_ms, o.snapshot.window.end_ms);
    let text: String = events
        .into_iter()
        .map(|mut e| {
            if let Some(m) = e.as_object_mut() {
                m.remove("requestObject");
                m.remove("responseObject");
                m.insert("level".into(), json!("Metadata"));
            }
            e.to_string() + "\n"
        })
        .collect();
    let mut folder =
        live::audit::AuditFolder::new("audit log (Metadata level)", Some(&env.namespace))
            .within(from, to);
    for line in text.lines() {
        folder.line(line);
    }
    o.snapshot.audit = Some(folder.finish());
    judge_and_record("status-on-main-on-a-managed-cluster", &o, &env.namespace);
}

/// A storm among many objects: `bad-annotation-loop`, slowed to 200 ms a reconcile, loops on its six Widgets while
/// the namespace also holds 150 ConfigMaps that live watches (`--resource configmaps`). The rate is per object the
/// controller reconciles, not per object in scope: divided by all 156 it would hide below the threshold.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn storm_among_many_objects() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-storm").await;
    seed_widgets(&env, 6).await;
    let cms: String = (0..150)
        .map(|i| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\ndata:\n  k: v\n")
        })
        .collect::<Vec<_>>()
        .join("---\n");
    kubectl(&env, &["create", "-f", "-"], Some(cms)).await;
    let o = window_working(
        &env,
        &[(Code::BadAnnotationLoop, "bad-annotation-loop")],
        Duration::from_millis(200),
        &["--resource", "widgets", "--resource", "configmaps"],
        async {},
    )
    .await;
    judge_and_record("storm-among-many-objects", &o, &env.namespace);
}

/// The annotation loop on a cluster whose write ceiling `bench` measured low: CA403 names the controller whose
/// writes make the load, not the API server.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn write_ceiling_names_the_writer() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-ceiling").await;
    seed_widgets(&env, 6).await;
    let o = window(
        &env,
        &[(Code::BadAnnotationLoop, "bad-annotation-loop")],
        &["--write-ceiling", "2"],
        async {},
    )
    .await;
    judge_and_record("write-ceiling-names-the-writer", &o, &env.namespace);
}

/// A person edits Widgets with `kubectl edit` (the editor a script) and scales a Deployment up and down with
/// `kubectl scale`, beside a good controller, with Deployments watched too: spec changes by hand, no reconcile.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn people_kubectl_edit_and_scale() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("corpus-kubectl-edit").await;
    seed_widgets(&env, 6).await;
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  \
                      selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    \
                      spec:\n      containers:\n      - {name: web, image: nginx}\n";
    kubectl(&env, &["create", "-f", "-"], Some(deployment.to_string())).await;
    let o = window(
        &env,
        &[(Code::Good, "good-patch")],
        &["--resource", "widgets", "--resource", "deployments"],
        async {
            for (i, message) in ["edited", "edited again"].into_iter().enumerate() {
                // kubectl runs the editor through the shell with the file to edit appended.
                let editor = format!("sed -i 's/^  message: .*/  message: {message}/'");
                kubectl_with_editor(&env, &editor, &["edit", &format!("widget/w-{i}")]).await;
            }
            for replicas in ["3", "5", "2"] {
                kubectl(
                    &env,
                    &["scale", "deployment/web", "--replicas", replicas],
                    None,
                )
                .await;
                tokio::time::sleep(Duration::from_millis(1500)).await;
            }
        },
    )
    .await;
    judge_and_record("people-kubectl-edit-and-scale", &o, &env.namespace);
}
