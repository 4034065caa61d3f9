//! `live` against the real API server (testenv), with the bench variants as subjects, each in its own
//! namespace: every bad variant raises its rule with the controller named; the good one raises nothing.
//!
//! One test per scenario, so a failure in one does not hide the others. They run one after another (a shared
//! lock): the API server's counters are cluster-wide, so two scenarios at once would see each other's requests.
//! `live` runs as the read-only identity.
//! `CTRLAUDIT_BLESS=1` also saves each window as a fixture in `fixtures/live/<scenario>/` and the audit-log
//! excerpt in `fixtures/live/audit-testenv/`.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use common::live::{observe, stable_snapshot, start_variant};
use ctrlaudit::bench::variants::Code;
use ctrlaudit::bench::widget::{Widget, WidgetSpec};
use ctrlaudit::cli::{Cli, Command};
use ctrlaudit::config::Config;
use ctrlaudit::finding::{Finding, Subject};
use ctrlaudit::live::snapshot::Snapshot;
use ctrlaudit::live::{self, Observed, detectors, record};
use ctrlaudit::policy::Policy;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Mutex;

/// One scenario at a time (see the module doc).
static SERIAL: Mutex<()> = Mutex::const_new(());

const WINDOW: &str = "9s";
const OBJECTS: usize = 6;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/live")
}

fn bless() -> bool {
    std::env::var_os("CTRLAUDIT_BLESS").is_some()
}

async fn create_widgets(client: &Client, ns: &str, n: usize) {
    let api: Api<Widget> = Api::namespaced(client.clone(), ns);
    for i in 0..n {
        let w = Widget::new(
            &format!("w-{i}"),
            WidgetSpec {
                count: 1,
                message: "hello".into(),
            },
        );
        api.create(&PostParams::default(), &w).await.unwrap();
    }
}

fn codes(findings: &[Finding]) -> BTreeSet<&str> {
    findings.iter().map(|f| f.code.as_str()).collect()
}

fn show(o: &Observed) -> String {
    let mut s = String::new();
    for f in &o.findings {
        s.push_str(&format!(
            "{} {} — {}\n",
            f.code,
            f.subject.label(),
            f.message
        ));
    }
    for n in &o.snapshot.notes {
        s.push_str(&format!("note: {} — {}\n", n.subject, n.message));
    }
    s
}

/// Saves the window as `fixtures/live/<name>/` with the namespace replaced by a stable one.
fn record_fixture(name: &str, o: &Observed, ns: &str) {
    if !bless() {
        return;
    }
    let dir = fixtures().join(name);
    let snap = stable_snapshot(o, ns, name);
    let findings = detectors::run_all(&snap, &Config::default());
    record::write(&dir, &snap, &findings).unwrap();
}

/// Runs one scenario: starts the variant, runs `live` (as the read-only identity, reading the variant's
/// /metrics) while `drive` makes things happen, stops the variant. Returns the window and the variant's field
/// manager.
async fn scenario<F: Future<Output = ()>>(
    env: &common::TestEnv,
    (code, name, workers): (Code, &str, u16),
    extra: &[&str],
    drive: F,
) -> (Observed, String) {
    let v = start_variant(env, code, name, workers).await;
    let url = v.url.clone();
    let mut args = vec!["--metrics-url", url.as_str()];
    args.extend_from_slice(extra);
    let o = observe(env, WINDOW, &args, drive).await;
    let manager = v.manager.clone();
    v.stop().await;
    (o, manager)
}

fn find<'a>(o: &'a Observed, code: &str) -> &'a Finding {
    o.findings
        .iter()
        .find(|f| f.code == code)
        .unwrap_or_else(|| panic!("no {code}:\n{}", show(o)))
}

/// The audit-log scenarios whose excerpts make up `fixtures/live/audit-testenv/`, in the order they are written.
const AUDIT_SCENARIOS: [&str; 3] = [
    "audit-annotation-loop",
    "audit-status-on-main",
    "audit-conflicts",
];

/// Excerpts blessed so far in this run; the fixture is written once all of [`AUDIT_SCENARIOS`] are in.
static AUDIT_PARTS: std::sync::Mutex<BTreeMap<&'static str, Vec<String>>> =
    std::sync::Mutex::new(BTreeMap::new());

/// The audit log's events about this scenario's namespace (renamed to `stable`), judged offline by the same
/// detectors: each of `codes` must name the client `who`.
async fn audit_names(env: &common::TestEnv, stable: &'static str, codes: &[&str], who: &str) {
    let lines = audit_excerpt(env, &env.namespace, stable).await;
    let text = lines.join("\n") + "\n";
    let findings = audit_findings(&text);
    let got: BTreeSet<(String, String)> = findings
        .iter()
        .map(|f| (f.code.clone(), f.subject.label()))
        .collect();
    for code in codes {
        assert!(
            got.iter().any(|(c, s)| c == code && s.contains(who)),
            "the audit excerpt does not name {who} for {code}: {got:?}"
        );
    }
    if !bless() {
        return;
    }
    let mut parts = AUDIT_PARTS.lock().unwrap();
    parts.insert(stable, lines);
    if AUDIT_SCENARIOS.iter().all(|s| parts.contains_key(s)) {
        let all: Vec<&str> = AUDIT_SCENARIOS
            .iter()
            .flat_map(|s| parts[s].iter().map(String::as_str))
            .collect();
        let text = all.join("\n") + "\n";
        let dir = fixtures().join("audit-testenv");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(record::AUDIT), &text).unwrap();
        record::write_expected(&dir, &audit_findings(&text)).unwrap();
    }
}

/// The detectors' findings on an audit log alone, over the window the log spans.
fn audit_findings(text: &str) -> Vec<Finding> {
    let mut snap = Snapshot::default();
    snap.attach_audit(live::audit::summarise("audit", text, None));
    detectors::run_all(&snap, &Config::default())
}

/// The audit events about `ns` (renamed to `stable`), trimmed for a fixture.
async fn audit_excerpt(env: &common::TestEnv, ns: &str, stable: &str) -> Vec<String> {
    let log = env.audit_log.clone().unwrap();
    let events = common::audit_events(&log, ns, Duration::from_secs(10), |e| !e.is_empty())
        .await
        .unwrap();
    // A few hundred requests per scenario are plenty, and keep the fixture small.
    events
        .into_iter()
        .filter(|e| e["stage"] == "ResponseComplete")
        .take(120)
        .map(|mut e| {
            // Trimmed: managedFields make up most of each body and the detectors do not read them there.
            for body in ["requestObject", "responseObject"] {
                if let Some(m) = e
                    .get_mut(body)
                    .and_then(|b| b.get_mut("metadata"))
                    .and_then(|m| m.as_object_mut())
                {
                    m.remove("managedFields");
                }
            }
            e.to_string().replace(ns, stable)
        })
        .collect()
}

/// bad-annotation-loop → CA202 and CA201, naming its field manager, with the audit log's user and user agent.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_names_the_annotation_loop() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("live-annotation-loop").await;
    let audit = env.audit_log.clone().unwrap().display().to_string();
    let (o, manager_name) = scenario(
        &env,
        (Code::BadAnnotationLoop, "bad-annotation-loop", 1),
        &["--audit-log", &audit],
        create_widgets(&env.client, &env.namespace, OBJECTS),
    )
    .await;
    let report = show(&o);
    let c = codes(&o.findings);
    assert!(c.contains("CA202") && c.contains("CA201"), "{report}");
    for code in ["CA202", "CA201"] {
        let named = o.findings.iter().any(|f| {
            f.code == code
                && matches!(&f.subject, Subject::Controller { manager, user, user_agent, .. }
                    if manager.as_deref() == Some(manager_name.as_str())
                        && user.as_deref() == Some(common::ADMIN_USER)
                        && user_agent.as_deref().is_some_and(|u| u.starts_with(manager_name.as_str())))
        });
        assert!(named, "{code} does not name {manager_name}:\n{report}");
    }
    assert!(!c.contains("CA101") && !c.contains("CA102"), "{report}");
    // testenv's API server has WatchList: the list is streamed in the watch, no LIST request at all.
    assert!(
        !o.snapshot
            .requests
            .contains_key("list widgets.bench.ctrlaudit.io")
            && o.snapshot.requests.get("watch widgets.bench.ctrlaudit.io") >= Some(&1),
        "{:?}",
        o.snapshot.requests
    );
    record_fixture("annotation-loop", &o, &env.namespace);
    audit_names(
        &env,
        "audit-annotation-loop",
        &["CA202", "CA201"],
        "bad-annotation-loop",
    )
    .await;
}

/// The annotation loop again, on Widgets that carry `ctrlaudit.io/allow: "CA202: …"`: CA202 is excused (a note
/// says so, with the reason) and CA201 is still reported; on the same window, `[live]` exclusions of the
/// variant's field manager and of the namespace leave out what they name and count it in a note.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_leaves_out_what_annotations_and_the_configuration_exclude() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv("live-exclude").await;
    let create = async {
        let api: Api<Widget> = Api::namespaced(env.client.clone(), &env.namespace);
        for i in 0..OBJECTS {
            let mut w = Widget::new(
                &format!("w-{i}"),
                WidgetSpec {
                    count: 1,
                    message: "hello".into(),
                },
            );
            w.metadata.annotations = Some(BTreeMap::from([(
                live::snapshot::ALLOW_ANNOTATION.to_string(),
                "CA202: the stamp is this test's own".to_string(),
            )]));
            api.create(&PostParams::default(), &w).await.unwrap();
        }
    };
    let (o, manager) = scenario(
        &env,
        (Code::BadAnnotationLoop, "bad-annotation-loop", 1),
        &[],
        create,
    )
    .await;
    let report = show(&o);
    let c = codes(&o.findings);
    assert!(!c.contains("CA202") && c.contains("CA201"), "{report}");
    assert!(
        o.snapshot.notes.iter().any(|n| n.message
            == "CA202 not reported: excused by its ctrlaudit.io/allow annotation (the stamp is this test's own)"),
        "{report}"
    );
    assert!(
        o.snapshot
            .objects
            .iter()
            .all(|x| x.allow.as_deref() == Some("CA202: the stamp is this test's own")),
        "{report}"
    );
    let names_manager = |f: &Finding| matches!(&f.subject, Subject::Controller { manager: Some(m), .. } if *m == manager);
    assert!(o.findings.iter().any(names_manager), "{report}");
    let mut findings = o.findings.clone();
    let live_cfg = ctrlaudit::config::LiveConfig {
        exclude_field_managers: vec![format!("{}*", &manager[..manager.len().min(8)])],
        ..Default::default()
    };
    let notes = live::exclude::apply(&o.snapshot, &live_cfg, &mut findings);
    assert!(!findings.iter().any(names_manager), "{findings:?}");
    assert!(
        notes
            .iter()
            .any(|n| n.message.contains("exclude_field_managers")),
        "{notes:?}"
    );
    let mut findings = o.findings.clone();
    let live_cfg = ctrlaudit::config::LiveConfig {
        exclude_namespaces: vec![env.namespace.clone()],
        ..Default::default()
    };
    live::exclude::apply(&o.snapshot, &live_cfg, &mut findings);
    assert!(
        findings.iter().all(|f| f.objects.is_empty()),
        "every finding about the namespace's objects is left out: {findings:?}"
    );
}

/// bad-status-on-main → CA101: no object ever gets a status.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_sees_status_written_through_the_main_resource() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("live-status-on-main").await;
    let (o, _) = scenario(
        &env,
        (Code::BadStatusOnMain, "bad-status-on-main", 1),
        &[],
        create_widgets(&env.client, &env.namespace, OBJECTS),
    )
    .await;
    let report = show(&o);
    assert!(
        find(&o, "CA101")
            .message
            .contains("0 of 6 objects have a status"),
        "{report}"
    );
    assert!(!codes(&o.findings).contains("CA202"), "{report}");
    record_fixture("status-on-main", &o, &env.namespace);
    audit_names(
        &env,
        "audit-status-on-main",
        &["CA101"],
        "bad-status-on-main",
    )
    .await;
}

/// good-update at 5 workers, with a user changing the spec meanwhile → CA301 with its 409 rate.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_counts_the_conflicts_of_replace_beside_another_writer() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("live-good-update").await;
    create_widgets(&env.client, &env.namespace, 2).await;
    let api: Api<Widget> = Api::namespaced(env.client.clone(), &env.namespace);
    let bump = async {
        // Spec changes while the controller writes status: its replace_status carries a stale
        // resourceVersion whenever a bump lands between its read and its write.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(6);
        let mut i = 0i64;
        while tokio::time::Instant::now() < deadline {
            i += 1;
            for n in 0..2 {
                let _ = api
                    .patch(
                        &format!("w-{n}"),
                        &PatchParams::default(),
                        &Patch::Merge(json!({"spec": {"count": i}})),
                    )
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let (o, _) = scenario(&env, (Code::GoodUpdate, "good-update", 5), &[], bump).await;
    assert!(find(&o, "CA301").message.contains("409"), "{}", show(&o));
    record_fixture("conflicts", &o, &env.namespace);
    audit_names(&env, "audit-conflicts", &["CA301"], "good-update").await;
}

/// bad-poll → CA203, and polling is not mistaken for a watch-event storm (CA201).
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_sees_polling() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv("live-poll").await;
    create_widgets(&env.client, &env.namespace, OBJECTS).await;
    let (o, _) = scenario(&env, (Code::BadPoll, "bad-poll", 1), &[], async {}).await;
    let report = show(&o);
    assert!(codes(&o.findings).contains("CA203"), "{report}");
    assert!(
        !codes(&o.findings).contains("CA201"),
        "polling is not a storm:\n{report}"
    );
    record_fixture("poll", &o, &env.namespace);
}

/// bad-cardinality → CA402 on the per-object label.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_sees_a_metric_label_per_object() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv("live-cardinality").await;
    let (o, _) = scenario(
        &env,
        (Code::BadCardinality, "bad-cardinality", 1),
        &[],
        create_widgets(&env.client, &env.namespace, OBJECTS),
    )
    .await;
    assert!(
        find(&o, "CA402").message.contains("label `name`"),
        "{}",
        show(&o)
    );
    record_fixture("cardinality", &o, &env.namespace);
}

/// bad-fight → CA206 on `spec.count`, naming both field managers; nothing else claims the flips.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_names_both_sides_of_a_field_ownership_fight() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv("live-field-fight").await;
    let (o, _) = scenario(
        &env,
        (Code::BadFight, "bad-fight", 5),
        &[],
        create_widgets(&env.client, &env.namespace, OBJECTS),
    )
    .await;
    let f = find(&o, "CA206");
    assert!(
        f.message.contains("`spec.count`")
            && f.message.contains("`bad-fight/operator`")
            && f.message.contains("`bad-fight/scaler`"),
        "{}",
        show(&o)
    );
    record_fixture("field-fight", &o, &env.namespace);
}

/// good-one-owner → two writers on the same objects, one owner of `spec.count`: no finding.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_is_quiet_when_each_field_has_one_owner() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv("live-one-owner").await;
    let (o, _) = scenario(
        &env,
        (Code::GoodOneOwner, "good-one-owner", 5),
        &[],
        create_widgets(&env.client, &env.namespace, OBJECTS),
    )
    .await;
    let report = show(&o);
    assert!(o.findings.is_empty(), "good-one-owner raised:\n{report}");
    // The scaler did take `spec.count` from the creator: a handover was seen, and it is not a fight.
    assert!(
        o.snapshot
            .objects
            .iter()
            .all(|x| x.has_status && x.generation >= 2),
        "{report}"
    );
    record_fixture("one-owner", &o, &env.namespace);
}

/// good → no finding at all, and every object has a status.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_is_quiet_on_the_good_controller() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv("live-good").await;
    let (o, _) = scenario(
        &env,
        (Code::Good, "good", 5),
        &[],
        create_widgets(&env.client, &env.namespace, OBJECTS),
    )
    .await;
    let report = show(&o);
    assert!(o.findings.is_empty(), "the good variant raised:\n{report}");
    assert!(o.snapshot.objects.iter().all(|x| x.has_status), "{report}");
    record_fixture("good", &o, &env.namespace);
}

/// A second before now, in milliseconds since the epoch: earlier runs in the same control plane are in the audit
/// log too, and only what a test's run sent after this counts.
fn audit_since() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 1_000
}

/// The completed requests `live` sent (by its user agent) that the audit log records from `since_ms` on.
fn tool_requests(env: &common::TestEnv, since_ms: i64) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(env.audit_log.clone().unwrap()).unwrap();
    text.lines()
        .filter(|l| l.contains(live::USER_AGENT))
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|e: &serde_json::Value| e["stage"] == "ResponseComplete")
        .filter(|e| {
            e["requestReceivedTimestamp"]
                .as_str()
                .and_then(live::tracker::parse_time_ms)
                .is_some_and(|t| t >= since_ms)
        })
        .collect()
}

/// `live` as the read-only identity, through the real command line: it observes, and the audit log shows that
/// it wrote nothing (and never touched a Secret). Forbidden sources degrade into notes.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_as_the_readonly_identity_never_writes() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("live-readonly").await;
    create_widgets(&env.client, &env.namespace, 2).await;
    let started_ms = audit_since();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
        .args([
            "live",
            "-n",
            &env.namespace,
            "--duration",
            "2s",
            "-o",
            "json",
        ])
        .arg("--kubeconfig")
        .arg(env.dir.join("readonly.kubeconfig"))
        // The read-only user may not use the pod proxy: a note, not a failure.
        .args([
            "--controller-pod",
            "no-such-operator",
            "--metrics-port",
            "8080",
        ])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["findings"], json!([]), "{stdout}");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("no-such-operator"), "{notes}");
    assert!(doc["stats"]["objects"] == 2, "{stdout}");

    // Everything the tool sent, by its user agent, is in the log: reads only.
    // The admin acting as this identity (`live_as_impersonates_the_readonly_identity`) is another run.
    let mine: Vec<serde_json::Value> = tool_requests(&env, started_ms)
        .into_iter()
        .filter(|e| e["impersonatedUser"].is_null())
        .collect();
    assert!(
        mine.len() >= 3,
        "the tool's requests are not in the audit log"
    );
    for e in &mine {
        assert_eq!(e["user"]["username"], common::READONLY_USER, "{e}");
        let verb = e["verb"].as_str().unwrap_or("");
        assert!(
            matches!(verb, "get" | "list" | "watch"),
            "a {verb} from live: {e}"
        );
        assert_ne!(e["objectRef"]["resource"], "secrets", "{e}");
    }
    let verbs: BTreeSet<&str> = mine.iter().filter_map(|e| e["verb"].as_str()).collect();
    assert!(
        verbs.contains("list") && verbs.contains("watch"),
        "{verbs:?}"
    );
}

/// `--as` (kubectl's impersonation): the admin acts as the read-only identity. The audit log shows each of the
/// tool's requests made by the admin as that user, and an identity with no rights gets no objects.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_as_impersonates_the_readonly_identity() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv_with_audit("live-as").await;
    create_widgets(&env.client, &env.namespace, 2).await;
    let started_ms = audit_since();
    let live_as = |user: &'static str, groups: &'static [&'static str]| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"));
        cmd.args([
            "live",
            "-n",
            &env.namespace,
            "--duration",
            "2s",
            "-o",
            "json",
        ])
        .arg("--kubeconfig")
        .arg(env.dir.join("kubeconfig"))
        .args(["--as", user]);
        for g in groups {
            cmd.args(["--as-group", g]);
        }
        cmd
    };
    // With kubectl's -v=6, each request on stderr: method, full URL, status, time.
    let out = live_as(common::READONLY_USER, &[])
        .args(["-v", "6"])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let watch = format!(
        "/apis/bench.ctrlaudit.io/v1alpha1/namespaces/{}/widgets?",
        env.namespace
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("GET https://127.0.0.1:")
                && l.contains(&watch)
                && l.contains(" 200 OK in ")),
        "{stderr}"
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(doc["stats"]["objects"] == 2, "{stdout}");
    // The read-only identity's own runs (`live_as_the_readonly_identity_never_writes`) are another test's.
    let mine: Vec<serde_json::Value> = tool_requests(&env, started_ms)
        .into_iter()
        .filter(|e| e["user"]["username"] != common::READONLY_USER)
        .collect();
    assert!(
        mine.len() >= 3,
        "the tool's requests are not in the audit log"
    );
    for e in &mine {
        assert_eq!(
            e["impersonatedUser"]["username"],
            common::READONLY_USER,
            "{e}"
        );
    }
    // A user with no rights (and a group, sent too) sees nothing: the cluster said no, so no evidence.
    let out = live_as("nobody-at-all", &["no-such-group"])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("forbidden"), "{stdout}");
}

/// An address where nothing listens (the port was just released).
async fn refused_endpoint() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    drop(listener);
    url
}

/// A server that answers every request with `respond`'s bytes, then closes (or, with `None`, never answers).
async fn faulty_endpoint(respond: Option<fn() -> Vec<u8>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                match respond {
                    Some(body) => {
                        let _ = sock.write_all(&body()).await;
                        let _ = sock.shutdown().await;
                    }
                    // Hold the connection open without a byte, past any deadline of the test.
                    None => tokio::time::sleep(Duration::from_secs(3600)).await,
                }
            });
        }
    });
    url
}

/// 17 MiB of valid-looking samples: over live's 16 MiB cap for a controller's /metrics.
fn oversized() -> Vec<u8> {
    let line = "workqueue_adds_total{name=\"widgets\"} 1\n";
    let n = (17 << 20) / line.len();
    let mut body = format!("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", n * line.len()).into_bytes();
    for _ in 0..n {
        body.extend_from_slice(line.as_bytes());
    }
    body
}

fn garbage() -> Vec<u8> {
    let page = "<html><body>Sign in to continue</body></html>\n";
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
        page.len()
    )
    .into_bytes()
}

/// A controller /metrics endpoint that is down, never answers, is over the size cap or is not Prometheus text
/// costs a note each (saying which and why), and the findings of the sources that work are still given.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_notes_each_failing_metrics_endpoint_and_keeps_its_findings() {
    let _serial = SERIAL.lock().await;
    let env = common::testenv("live-faulty-metrics").await;
    let bad = [
        (refused_endpoint().await, "refused"),
        (faulty_endpoint(None).await, "no answer within"),
        (faulty_endpoint(Some(oversized)).await, "larger than"),
        (faulty_endpoint(Some(garbage)).await, "Prometheus"),
    ];
    let mut args = Vec::new();
    for (url, _) in &bad {
        args.extend(["--metrics-url", url.as_str()]);
    }
    let (o, _) = scenario(
        &env,
        (Code::BadAnnotationLoop, "bad-annotation-loop", 1),
        &args,
        create_widgets(&env.client, &env.namespace, OBJECTS),
    )
    .await;
    let report = show(&o);
    let c = codes(&o.findings);
    // CA202 from the watch, CA201 also from the one endpoint that works.
    assert!(c.contains("CA202") && c.contains("CA201"), "{report}");
    for (url, why) in &bad {
        let notes: Vec<_> = o
            .snapshot
            .notes
            .iter()
            .filter(|n| n.subject.contains(url.as_str()))
            .collect();
        assert_eq!(notes.len(), 1, "one note for {url}:\n{report}");
        assert!(
            notes[0].message.contains(why) && notes[0].message.contains("scrapes failed"),
            "{url}: {:?}",
            notes[0]
        );
    }
    assert!(o.snapshot.has_evidence());
}

/// A kubeconfig like testenv's admin one, but for a client certificate `CN=cn` from testenv's CA, valid for
/// `days` (negative: already expired), or, with `server`, pointing elsewhere.
fn issue_kubeconfig(
    env: &common::TestEnv,
    name: &str,
    cn: &str,
    days: i32,
    server: Option<&str>,
) -> PathBuf {
    let pki = env.dir.join("pki");
    let dir = std::env::temp_dir().join(format!("ctrlaudit-{}-{name}", env.namespace));
    std::fs::create_dir_all(&dir).unwrap();
    let (key, csr, crt) = (dir.join("c.key"), dir.join("c.csr"), dir.join("c.crt"));
    let run = |cmd: &mut std::process::Command| {
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(std::process::Command::new("openssl")
        .args(["req", "-new", "-nodes", "-newkey", "rsa:2048", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&csr)
        .args(["-subj", &format!("/CN={cn}")]));
    run(std::process::Command::new("openssl")
        .args(["x509", "-req", "-in"])
        .arg(&csr)
        .arg("-CA")
        .arg(pki.join("ca.crt"))
        .arg("-CAkey")
        .arg(pki.join("ca.key"))
        .args(["-CAcreateserial", "-out"])
        .arg(&crt)
        .args(["-days", &days.to_string(), "-extfile"])
        .arg(pki.join("openssl.cnf"))
        .args(["-extensions", "client"]));
    use base64::Engine as _;
    let b64 =
        |p: &PathBuf| base64::engine::general_purpose::STANDARD.encode(std::fs::read(p).unwrap());
    let mut text = String::new();
    for line in std::fs::read_to_string(env.dir.join("kubeconfig"))
        .unwrap()
        .lines()
    {
        let indent = &line[..line.len() - line.trim_start().len()];
        let t = line.trim_start();
        let line = if t.starts_with("client-certificate-data:") {
            format!("{indent}client-certificate-data: {}", b64(&crt))
        } else if t.starts_with("client-key-data:") {
            format!("{indent}client-key-data: {}", b64(&key))
        } else if let (Some(s), true) = (server, t.starts_with("server:")) {
            format!("{indent}server: {s}")
        } else {
            line.to_string()
        };
        text.push_str(&line);
        text.push('\n');
    }
    let path = dir.join("kubeconfig");
    std::fs::write(&path, text).unwrap();
    path
}

/// Without access, live stops at once instead of waiting out its 60 s window: exit 3 and a note that says what
/// is missing — the address it could not reach, the refused credentials, the verb and resource it may not use.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_without_access_exits_3_at_once_saying_what_is_missing() {
    let env = common::testenv("live-no-access").await;
    let closed = refused_endpoint()
        .await
        .replace("http://", "https://")
        .replace("/metrics", "");
    let cases = [
        (
            issue_kubeconfig(&env, "unreachable", "ctrlaudit-admin", 1, Some(&closed)),
            "Connection refused",
        ),
        (
            issue_kubeconfig(&env, "expired", "ctrlaudit-expired", -1, None),
            "unauthorized: the API server refused the credentials",
        ),
        (
            issue_kubeconfig(&env, "nobody", "ctrlaudit-nobody", 1, None),
            "forbidden (needs list and watch on widgets.bench.ctrlaudit.io)",
        ),
    ];
    for (kubeconfig, why) in cases {
        let started = std::time::Instant::now();
        let out = tokio::task::spawn_blocking({
            let ns = env.namespace.clone();
            move || {
                std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
                    .args(["live", "-n", &ns, "--kubeconfig"])
                    .arg(&kubeconfig)
                    .output()
                    .unwrap()
            }
        })
        .await
        .unwrap();
        let took = started.elapsed();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(3), "{why}:\n{stdout}");
        assert!(stdout.contains(why), "{why}:\n{stdout}");
        assert!(stdout.contains("ended early"), "{stdout}");
        // Not a timing claim: the default window is 60 s, and this shows it was not waited out.
        assert!(took < Duration::from_secs(40), "{why}: took {took:?}");
        eprintln!("{why}: exit 3 after {took:?}");
    }
}

/// The API server killed and restarted in the middle of the window, with etcd compacted meanwhile (a private
/// control plane: the shared one serves the other tests): live keeps watching after it returns, re-lists on the
/// 410 Gone, says how long the watch was down, still gives its findings, and counts no write twice.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_rides_out_an_api_server_restart() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let plane = common::plane::Plane::start("live-restart").await;
    let ns = common::create_namespace(&plane.client, "live-restart")
        .await
        .unwrap();
    let ns = ns.as_str();
    create_widgets(&plane.client, ns, OBJECTS).await;

    // A looping writer: a new timestamp annotation on every Widget, over and over, counting what succeeded.
    let made = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (api, made, stop) = (
            Api::<Widget>::namespaced(plane.client.clone(), ns),
            made.clone(),
            stop.clone(),
        );
        tokio::spawn(async move {
            let pp = PatchParams::apply("looper").force();
            while !stop.load(Ordering::Relaxed) {
                for i in 0..OBJECTS {
                    let patch = json!({
                        "apiVersion": "bench.ctrlaudit.io/v1alpha1", "kind": "Widget",
                        "metadata": {"annotations": {"example.com/touched": jiff::Timestamp::now().to_string()}}
                    });
                    if api
                        .patch(&format!("w-{i}"), &pp, &Patch::Apply(&patch))
                        .await
                        .is_ok()
                    {
                        made.fetch_add(1, Ordering::Relaxed);
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };

    let kubeconfig = plane.kubeconfig.display().to_string();
    let mut argv = vec!["kubectl-ctrlaudit", "live", "-n", ns, "--duration", "20s"];
    argv.extend(["--kubeconfig", &kubeconfig, "--scrape-interval", "1s"]);
    let cli = Cli::try_parse_from(argv).unwrap();
    let Command::Live(a) = cli.command else {
        panic!("not live")
    };
    let g = cli.global.cluster;
    let client = plane.client.clone();
    let owned_ns = ns.to_string();
    let live = tokio::spawn(async move {
        let cfg = Config::default();
        let policy = Policy::new(&cfg, &a.policy).unwrap();
        live::observe(Some((client, owned_ns)), &g, false, &a, &cfg, &policy).await
    });
    tokio::time::sleep(Duration::from_secs(4)).await;
    let before_kill = made.load(Ordering::Relaxed);
    tokio::task::block_in_place(|| plane.kill_apiserver());
    // While it is down the writes go on failing; the history live's watch would resume from is compacted away,
    // so the resumed watch gets 410 Gone and must re-list.
    tokio::time::sleep(Duration::from_secs(2)).await;
    tokio::task::block_in_place(|| plane.compact_etcd());
    tokio::time::sleep(Duration::from_secs(1)).await;
    plane.restart_apiserver().await;
    let back_ms = jiff::Timestamp::now().as_millisecond();
    let o = live.await.unwrap().unwrap();
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    let report = show(&o);
    let made = made.load(Ordering::Relaxed);
    assert!(made > before_kill, "the writer went on after the restart");

    assert!(codes(&o.findings).contains("CA202"), "{report}");
    let note = o
        .snapshot
        .notes
        .iter()
        .find(|n| n.subject == "watch widgets.bench.ctrlaudit.io")
        .unwrap_or_else(|| panic!("no note on the watch:\n{report}"));
    assert!(
        note.message.starts_with("down ") && note.message.contains("re-listed"),
        "{note:?}"
    );
    eprintln!("{}", note.message);
    // It kept watching: writes after the API server came back were seen as they happened.
    let seen_after = o
        .snapshot
        .objects
        .iter()
        .flat_map(|r| &r.history)
        .filter(|w| w.t_ms > back_ms)
        .count();
    assert!(seen_after > 0, "nothing seen after the restart:\n{report}");
    let widgets = o
        .snapshot
        .resources
        .iter()
        .find(|r| r.plural == "widgets")
        .unwrap();
    assert!(widgets.relists >= 1, "no re-list after 410 Gone:\n{report}");
    // No write counted twice: at most one per successful write (creation is before the window).
    let seen: u64 = o
        .snapshot
        .objects
        .iter()
        .map(|r| u64::from(r.writes.total))
        .sum();
    assert!(
        seen <= made,
        "seen {seen} writes, {made} were made:\n{report}"
    );
    assert!(seen > made / 2, "seen {seen} of {made} writes:\n{report}");
}

/// An API server without WatchList (before 1.27, or with the gate off) refuses the streaming list: live falls
/// back on LIST then WATCH, sees every object and every write, and says nothing went wrong.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_falls_back_on_paged_lists_without_watchlist() {
    let plane = common::plane::Plane::start_with_flags(
        "live-no-watchlist",
        &["--feature-gates=WatchList=false"],
    )
    .await;
    let ns = common::create_namespace(&plane.client, "live-no-watchlist")
        .await
        .unwrap();
    let ns = ns.as_str();
    create_widgets(&plane.client, ns, OBJECTS).await;

    let kubeconfig = plane.kubeconfig.display().to_string();
    let mut argv = vec!["kubectl-ctrlaudit", "live", "-n", ns, "--duration", "8s"];
    argv.extend(["--kubeconfig", &kubeconfig]);
    let cli = Cli::try_parse_from(argv).unwrap();
    let Command::Live(a) = cli.command else {
        panic!("not live")
    };
    let g = cli.global.cluster;
    let client = plane.client.clone();
    let owned_ns = ns.to_string();
    let live = tokio::spawn(async move {
        let cfg = Config::default();
        let policy = Policy::new(&cfg, &a.policy).unwrap();
        live::observe(Some((client, owned_ns)), &g, false, &a, &cfg, &policy).await
    });
    // Writes once the watch runs (the objects are listed first; a write before that is not a write seen).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let api = Api::<Widget>::namespaced(plane.client.clone(), ns);
    let pp = PatchParams::apply("toucher").force();
    for i in 0..OBJECTS {
        let patch = json!({
            "apiVersion": "bench.ctrlaudit.io/v1alpha1", "kind": "Widget",
            "metadata": {"annotations": {"example.com/touched": "once"}}
        });
        api.patch(&format!("w-{i}"), &pp, &Patch::Apply(&patch))
            .await
            .unwrap();
    }
    let o = live.await.unwrap().unwrap();
    let report = show(&o);
    let requests = &o.snapshot.requests;
    assert!(
        requests.get("list widgets.bench.ctrlaudit.io") >= Some(&1),
        "no LIST after the refused streaming list: {requests:?}\n{report}"
    );
    assert_eq!(o.snapshot.objects.len(), OBJECTS, "{report}");
    let seen: u64 = o
        .snapshot
        .objects
        .iter()
        .map(|r| u64::from(r.writes.total))
        .sum();
    assert_eq!(seen, OBJECTS as u64, "{report}");
    assert!(
        !o.snapshot
            .notes
            .iter()
            .any(|n| n.subject.starts_with("watch ")),
        "a note on the watch:\n{report}"
    );
}

/// `--resource deployments --owned`: a built-in kind watched for metadata only, and the objects a Widget owns
/// among the namespace's ConfigMaps (and only those). Two field managers flipping a Deployment's replicas raise
/// CA206; a timestamp stamped on an owned ConfigMap raises CA202; the same on a ConfigMap nobody owns is not
/// seen at all.
#[tokio::test]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_watches_built_in_kinds_and_what_a_custom_resource_owns() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    let _serial = SERIAL.lock().await;
    let env = common::testenv("live-builtin").await;
    let ns = env.namespace.clone();
    create_widgets(&env.client, &ns, 1).await;
    let widgets: Api<Widget> = Api::namespaced(env.client.clone(), &ns);
    let owner = widgets.get("w-0").await.unwrap();
    let owner_ref = json!([{
        "apiVersion": "bench.ctrlaudit.io/v1alpha1", "kind": "Widget", "name": "w-0",
        "uid": owner.metadata.uid.clone().unwrap(), "controller": true,
    }]);
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &ns);
    for (name, owned) in [("owned-cm", true), ("stray-cm", false)] {
        let mut meta = json!({"name": name});
        if owned {
            meta["ownerReferences"] = owner_ref.clone();
        }
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": meta, "data": {"k": "v"}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), &ns);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "owned-secret", "ownerReferences": owner_ref},
        "stringData": {"password": "do-not-read-me"},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), &ns);
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap();

    let drive = async {
        for i in 0..8 {
            // An "operator" and an "autoscaler" each force the replicas they want.
            let (manager, replicas) = if i % 2 == 0 {
                ("operator", 2)
            } else {
                ("autoscaler", 3)
            };
            let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": replicas}});
            deployments
                .patch(
                    "web",
                    &PatchParams::apply(manager).force(),
                    &Patch::Apply(&body),
                )
                .await
                .unwrap();
            let stamp = json!({"metadata": {"annotations": {"example.com/seen": format!("2026-12-01T10:00:0{i}Z")}}});
            let pp = PatchParams {
                field_manager: Some("stamper".into()),
                ..PatchParams::default()
            };
            for cm in ["owned-cm", "stray-cm"] {
                cms.patch(cm, &pp, &Patch::Merge(&stamp)).await.unwrap();
            }
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
    };
    let o = observe(
        &env,
        WINDOW,
        &["--resource", "widgets", "--resource", "deploy", "--owned"],
        drive,
    )
    .await;
    let report = show(&o);
    let fight = find(&o, "CA206");
    assert!(
        fight.message.contains("`spec.replicas` of 1 deployments")
            && fight.message.contains("`autoscaler` and `operator`"),
        "{report}"
    );
    assert!(
        matches!(&fight.subject, Subject::Object { kind, .. } if kind == "Deployment"),
        "{report}"
    );
    let stamp = find(&o, "CA202");
    assert!(
        stamp.message.contains("example.com/seen") && stamp.message.contains("configmaps"),
        "{report}"
    );
    let names: BTreeSet<&str> = o.snapshot.objects.iter().map(|x| x.name.as_str()).collect();
    assert!(
        names.contains("owned-cm") && names.contains("owned-secret") && !names.contains("stray-cm"),
        "{names:?}"
    );
    let types = |plural: &str| {
        o.snapshot
            .resources
            .iter()
            .find(|r| r.plural == plural)
            .unwrap_or_else(|| panic!("{plural} not in {:?}", o.snapshot.resources))
    };
    assert!(types("deployments").metadata_only && !types("deployments").owned);
    assert!(types("configmaps").metadata_only && types("configmaps").owned);
    assert!(
        types("secrets").metadata_only,
        "a Secret is only ever read as metadata"
    );
    assert!(!types("widgets").metadata_only);
    // Metadata only: nothing of a Secret's data reaches the snapshot.
    let text = serde_json::to_string(&o.snapshot).unwrap();
    assert!(
        !text.contains("do-not-read-me") && !text.contains("ZG8tbm90"),
        "secret data leaked"
    );
}

/// Creates every object of `deploy/kubectl-ctrlaudit.yaml` and `deploy/events-rbac.yaml` (so the API server
/// validates the manifests), then a token for its ServiceAccount and a kubeconfig that authenticates with it, as a pod's would.
async fn deploy_manifests_and_service_account_kubeconfig(plane: &common::plane::Plane) -> PathBuf {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::ServiceAccount;
    use kube::api::DynamicObject;
    use kube::discovery::Discovery;
    let deploy = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy");
    // The events role goes with `--events`, the one write the serving process may make.
    let text = ["kubectl-ctrlaudit.yaml", "events-rbac.yaml"]
        .map(|f| std::fs::read_to_string(deploy.join(f)).unwrap())
        .join("\n---\n");
    let discovery = Discovery::new(plane.client.clone()).run().await.unwrap();
    for doc in yaml_serde::Deserializer::from_str(&text) {
        let obj: DynamicObject = serde::Deserialize::deserialize(doc).unwrap();
        let types = obj.types.clone().unwrap();
        let gvk = kube::api::GroupVersionKind::try_from(&types).unwrap();
        let (ar, caps) = discovery.resolve_gvk(&gvk).unwrap();
        let api: Api<DynamicObject> = match (&obj.metadata.namespace, caps.scope) {
            (Some(ns), kube::discovery::Scope::Namespaced) => {
                Api::namespaced_with(plane.client.clone(), ns, &ar)
            }
            _ => Api::all_with(plane.client.clone(), &ar),
        };
        api.create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("{} {:?}: {e}", types.kind, obj.metadata.name));
    }
    let sas: Api<ServiceAccount> = Api::namespaced(plane.client.clone(), "ctrlaudit");
    let token = sas
        .create_token_request(
            "kubectl-ctrlaudit",
            &PostParams::default(),
            &TokenRequest {
                spec: TokenRequestSpec {
                    expiration_seconds: Some(3600),
                    ..TokenRequestSpec::default()
                },
                ..TokenRequest::default()
            },
        )
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    let mut kc = kube::config::Kubeconfig::read_from(&plane.kubeconfig).unwrap();
    for a in &mut kc.auth_infos {
        a.auth_info = Some(kube::config::AuthInfo {
            token: Some(token.clone().into()),
            ..kube::config::AuthInfo::default()
        });
    }
    let path = plane.dir.join("service-account.kubeconfig");
    std::fs::write(&path, serde_json::to_string(&kc).unwrap()).unwrap();
    path
}

/// The samples of one scrape of `url`, or why not.
async fn scrape(url: &str) -> Result<prometheus_parse::Scrape, String> {
    let limits = ctrlaudit::fetch::Limits {
        max_bytes: 1 << 20,
        timeout: Duration::from_secs(5),
        user_agent: "ctrlaudit-tests",
        accept: "text/plain",
    };
    let text = ctrlaudit::fetch::get(url, limits)
        .await
        .map_err(|e| e.to_string())?;
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .map_err(|e| e.to_string())
}

fn sample(s: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    s.samples
        .iter()
        .find(|x| x.metric == name && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .map(|x| match x.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
}

/// Polls `url` until `done` holds for a scrape, within `within`.
async fn scrape_until(
    url: &str,
    within: Duration,
    what: &str,
    done: impl Fn(&prometheus_parse::Scrape) -> bool,
) -> prometheus_parse::Scrape {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let last = match scrape(url).await {
            Ok(s) if done(&s) => return s,
            Ok(s) => format!(
                "{:?}",
                s.samples
                    .iter()
                    .map(|x| (&x.metric, &x.value))
                    .collect::<Vec<_>>()
            ),
            Err(e) => e,
        };
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {within:?}; last: {last}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// `live --serve` as a process authenticated as deploy/'s ServiceAccount (a token, as in a pod): windows one
/// after another with the looping writer's CA202 in its metrics, which parse as Prometheus text; it goes on
/// after the API server is killed and restarted; SIGTERM stops it at once with exit 0.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs testenv: ./test.sh runs it"]
async fn live_serve_publishes_each_window_rides_out_a_restart_and_stops_on_sigterm() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let plane = common::plane::Plane::start("live-serve").await;
    let kubeconfig = deploy_manifests_and_service_account_kubeconfig(&plane).await;
    let ns = common::create_namespace(&plane.client, "live-serve")
        .await
        .unwrap();
    create_widgets(&plane.client, &ns, OBJECTS).await;
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (api, stop) = (
            Api::<Widget>::namespaced(plane.client.clone(), &ns),
            stop.clone(),
        );
        tokio::spawn(async move {
            let pp = PatchParams::apply("looper").force();
            while !stop.load(Ordering::Relaxed) {
                for i in 0..OBJECTS {
                    let patch = json!({
                        "apiVersion": "bench.ctrlaudit.io/v1alpha1", "kind": "Widget",
                        "metadata": {"annotations": {"example.com/touched": jiff::Timestamp::now().to_string()}}
                    });
                    let _ = api
                        .patch(&format!("w-{i}"), &pp, &Patch::Apply(&patch))
                        .await;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let url = format!("http://{addr}/metrics");
    let stderr_path = plane.dir.join("serve.stderr");
    let stderr = || std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
        .args([
            "live",
            "-n",
            &ns,
            "--serve",
            &addr,
            "--duration",
            "3s",
            "--no-apiserver-metrics",
            "--events",
        ])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();

    let windows =
        |s: &prometheus_parse::Scrape| sample(s, "ctrlaudit_windows_total", &[]).unwrap_or(0.0);
    let s = scrape_until(
        &url,
        Duration::from_secs(90),
        "two windows with CA202",
        |s| {
            windows(s) >= 2.0
                && sample(s, "ctrlaudit_rule_findings", &[("rule", "CA202")]).unwrap_or(0.0) >= 1.0
        },
    )
    .await;
    assert_eq!(
        sample(
            &s,
            "ctrlaudit_findings",
            &[("rule", "CA202"), ("controller", "looper")]
        ),
        Some(1.0),
        "{:?}",
        s.samples
    );
    // Every live rule has a series, 0 when quiet.
    assert_eq!(
        sample(&s, "ctrlaudit_rule_findings", &[("rule", "CA206")]),
        Some(0.0)
    );
    // --events: one Event per looping Widget, on the object (uid and all, so `kubectl describe` shows it), and
    // not again while the finding lasts.
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(plane.client.clone(), &ns);
    let list = events.list(&Default::default()).await.unwrap().items;
    let mut per_object: BTreeMap<(String, String), usize> = BTreeMap::new();
    for e in &list {
        let o = &e.involved_object;
        // CA101 too: nobody writes these Widgets' status (inferred, as a warning).
        assert!(
            matches!(e.reason.as_deref(), Some("CA202" | "CA101"))
                && e.type_.as_deref() == Some("Warning")
                && o.kind.as_deref() == Some("Widget"),
            "{e:?}"
        );
        assert!(
            o.uid.is_some()
                && e.source.as_ref().and_then(|s| s.component.as_deref())
                    == Some("kubectl-ctrlaudit")
        );
        let key = (
            e.reason.clone().unwrap_or_default(),
            o.name.clone().unwrap_or_default(),
        );
        *per_object.entry(key).or_default() += 1;
    }
    assert!(
        per_object.keys().any(|(r, _)| r == "CA202"),
        "no CA202 Event: {per_object:?}\n{}",
        stderr()
    );
    assert!(
        per_object.values().all(|n| *n == 1),
        "posted again while the finding lasted: {per_object:?}"
    );

    tokio::task::block_in_place(|| plane.kill_apiserver());
    tokio::time::sleep(Duration::from_secs(4)).await;
    plane.restart_apiserver().await;
    let before = windows(&scrape(&url).await.unwrap());
    // Two whole windows after the restart, with the loop seen again.
    let s = scrape_until(
        &url,
        Duration::from_secs(90),
        "windows after the restart",
        |s| {
            windows(s) >= before + 2.0
                && sample(
                    s,
                    "ctrlaudit_findings",
                    &[("rule", "CA202"), ("controller", "looper")],
                ) == Some(1.0)
        },
    )
    .await;
    assert!(
        child.try_wait().unwrap().is_none(),
        "it exited during the outage"
    );
    eprintln!(
        "windows {} (unobserved {:?})",
        windows(&s),
        sample(&s, "ctrlaudit_windows_unobserved_total", &[])
    );

    let pid = child.id().unwrap().to_string();
    let sent = std::time::Instant::now();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("still running 20 s after SIGTERM")
        .unwrap();
    let err = stderr();
    assert!(status.success(), "{status:?}\n{err}");
    assert!(err.contains("stopped"), "{err}");
    eprintln!("stopped {:?} after SIGTERM", sent.elapsed());
    assert!(
        scrape(&url).await.is_err(),
        "the endpoint outlived the process"
    );
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
}
