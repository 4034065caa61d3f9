//! The live detectors on recorded windows (`fixtures/live/<scenario>/`), checked both ways: every expected
//! finding appears and nothing else does. Some recordings come from testenv runs of the bench variants
//! (`tests/live_testenv.rs` with `CTRLAUDIT_BLESS=1`), one is an audit-log excerpt captured there, and the rest
//! are small hand-made snapshots for the rules that need a large or slow cluster to show.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use ctrlaudit::config::Config;
use ctrlaudit::finding::Severity;
use ctrlaudit::live::record::{self, Expectation};
use ctrlaudit::live::{detectors, snapshot::Snapshot};
use ctrlaudit::policy::Policy;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/live")
}

fn scenarios() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

fn config_for(dir: &Path) -> Config {
    let p = dir.join("ctrlaudit.toml");
    if p.is_file() {
        Config::load(&p).unwrap()
    } else {
        Config::default()
    }
}

#[test]
fn every_fixture_gives_exactly_its_expected_findings() {
    let dirs = scenarios();
    assert!(
        dirs.len() >= 8,
        "fixtures/live has {} scenarios",
        dirs.len()
    );
    let mut codes_seen = BTreeSet::new();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let snap = record::read(&dir).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        let cfg = config_for(&dir);
        let mut findings = detectors::run_all(&snap, &cfg);
        Policy::from_config(&cfg).apply(&mut findings);
        let got: BTreeSet<Expectation> = record::expectations(&findings).into_iter().collect();
        let want: BTreeSet<Expectation> =
            record::read_expected(&dir).unwrap().into_iter().collect();
        let missing: Vec<_> = want.difference(&got).collect();
        let extra: Vec<_> = got.difference(&want).collect();
        let detail: String = findings
            .iter()
            .map(|f| format!("  {} {} — {}\n", f.code, f.subject.label(), f.message))
            .collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{name}: missing {missing:?}, unexpected {extra:?}\n{detail}"
        );
        codes_seen.extend(findings.iter().map(|f| f.code.clone()));
        // Every finding carries its window and points to the bench (or the rule doc).
        for f in &findings {
            assert!(
                f.evidence.iter().any(|e| matches!(e, ctrlaudit::finding::Evidence::Value { name, .. } if name == "window")),
                "{name}: {} has no window",
                f.code
            );
            assert!(f.help.contains("kubectl ctrlaudit"), "{name}: {}", f.help);
            if ctrlaudit::rules::find(&f.code)
                .unwrap()
                .bench_pair
                .is_some()
            {
                assert!(
                    f.help.contains(&format!("bench --rule {}", f.code)),
                    "{}",
                    f.help
                );
            }
        }
    }
    // Between them the fixtures exercise every live rule.
    for r in ctrlaudit::rules::RULES
        .iter()
        .filter(|r| r.has_lens(ctrlaudit::finding::Lens::Live))
    {
        assert!(codes_seen.contains(r.code), "no fixture raises {}", r.code);
    }
}

/// The live accuracy corpus (tests/live_corpus.rs records it on testenv): every scenario with hand-written labels
/// gives the findings they require and none they forbid, with its audit log and replayed without it. Scored like
/// scan's fixtures: every label is checked, and the summary says how many.
#[test]
fn the_live_corpus_holds_its_labels_with_and_without_the_audit_log() {
    let mut labelled = 0;
    let mut checked = 0;
    let mut wrong = Vec::new();
    for dir in scenarios() {
        let Some(labels) = record::read_labels(&dir).unwrap() else {
            continue;
        };
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        labelled += 1;
        let snap = record::read(&dir).unwrap();
        assert!(
            snap.audit.is_some(),
            "{name}: recorded without its audit log"
        );
        let judge = |s: &Snapshot| {
            let cfg = Config::default();
            let mut f = detectors::run_all(s, &cfg);
            Policy::from_config(&cfg).apply(&mut f);
            f
        };
        let mut sets = vec![("with the audit log", &labels.findings, judge(&snap))];
        if let Some(set) = &labels.without_audit {
            sets.push((
                "without the audit log",
                set,
                judge(&record::without_audit(&snap)),
            ));
        }
        for (how, set, findings) in sets {
            checked += set.must.len() + set.must_not.len();
            wrong.extend(
                set.check(&findings)
                    .into_iter()
                    .map(|w| format!("{name}, {how}: {w}")),
            );
            // A message never denies the evidence it was given.
            if snap.audit.is_some() && how == "with the audit log" {
                wrong.extend(
                    findings
                        .iter()
                        .filter(|f| f.message.contains("no audit log"))
                        .map(|f| format!("{name}: {} says there is no audit log", f.code)),
                );
            }
        }
    }
    assert!(labelled >= 15, "the live corpus has {labelled} scenarios");
    assert!(
        wrong.is_empty(),
        "{} of {checked} labels do not hold:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// CA101 says how certain it is: confirmed by the audit log, or inferred from the objects and the controller's
/// metrics when there is none (a managed cluster, a read-only identity), and then only a warning. The API
/// server's counters corroborate an inference and say they cannot tell a dropped status from a write that changes
/// nothing; alone they never decide. With no sign of a running controller it says nothing.
#[test]
fn status_dropped_says_how_certain_it_is() {
    let ca101 = |name: &str| {
        let snap = record::read(&fixtures().join(name)).unwrap();
        detectors::run_all(&snap, &Config::default())
            .into_iter()
            .filter(|f| f.code == "CA101")
            .collect::<Vec<_>>()
    };
    let confirmed = ca101("audit-testenv");
    assert!(
        !confirmed.is_empty()
            && confirmed.iter().all(|f| {
                f.message.contains("confirmed by the audit log") && f.severity == Severity::Error
            }),
        "{confirmed:#?}"
    );
    let corroborated = ca101("status-on-main");
    assert!(
        corroborated.len() == 1
            && corroborated[0]
                .message
                .contains("inferred from the objects and the controller's metrics")
            && corroborated[0]
                .message
                .contains("the counters cannot tell them apart")
            && corroborated[0].message.contains("no audit log was read")
            && corroborated[0].severity == Severity::Warning,
        "{corroborated:#?}"
    );
    let inferred = ca101("status-on-main-inferred");
    assert!(
        inferred.len() == 1
            && inferred[0]
                .message
                .contains("inferred from the objects and the controller's metrics")
            && inferred[0].message.contains("6 successful reconciles")
            && inferred[0].severity == Severity::Warning,
        "{inferred:#?}"
    );
    assert!(ca101("no-controller-running").is_empty());

    // A controller that never writes status is no controller whose status is dropped: with the API server's
    // counters showing no write of the main resource in the window, nothing is inferred.
    let mut snap =
        record::without_audit(&record::read(&fixtures().join("seed-status-on-main")).unwrap());
    let before = detectors::run_all(&snap, &Config::default());
    assert!(before.iter().any(|f| f.code == "CA101"), "{before:#?}");
    for m in snap
        .metrics
        .iter_mut()
        .filter(|m| m.kind == ctrlaudit::live::snapshot::SourceKind::Apiserver)
    {
        for sc in &mut m.scrapes {
            sc.samples.retain(|x| {
                !(x.name == "apiserver_request_total" && x.label("resource") == "widgets")
            });
        }
    }
    let after = detectors::run_all(&snap, &Config::default());
    assert!(after.iter().all(|f| f.code != "CA101"), "{after:#?}");
}

#[test]
fn thresholds_come_from_the_config() {
    let dir = fixtures().join("convergence-lag");
    let snap = record::read(&dir).unwrap();
    let mut cfg = Config::default();
    assert_eq!(detectors::run_all(&snap, &cfg).len(), 1);
    cfg.thresholds.convergence_lag_secs = 1_000.0;
    assert!(detectors::run_all(&snap, &cfg).is_empty());
    cfg = Config::parse("[rules]\nCA102 = \"off\"\n", Path::new("ctrlaudit.toml")).unwrap();
    let mut findings = detectors::run_all(&snap, &cfg);
    Policy::from_config(&cfg).apply(&mut findings);
    assert!(findings.is_empty());
}

#[test]
fn malformed_audit_lines_are_counted() {
    let snap: Snapshot = record::read(&fixtures().join("tenants-and-reads-audit")).unwrap();
    let a = snap.audit.unwrap();
    assert_eq!(a.malformed, 1);
    assert_eq!(a.requests, 54);
}

/// What one run of the binary gave: exit code, stdout as JSON (null when it is not), stderr.
struct Run {
    code: Option<i32>,
    doc: serde_json::Value,
    stderr: String,
}

impl Run {
    fn of(args: &[&std::ffi::OsStr]) -> Run {
        let out = Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
            .args(args)
            .output()
            .unwrap();
        Run {
            code: out.status.code(),
            doc: serde_json::from_slice(&out.stdout).unwrap_or_default(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `live --replay` of a fixture with `extra` (and `-o json` unless `extra` names a format).
    fn replay(fixture: &str, extra: &[&str]) -> Run {
        let dir = fixtures().join(fixture);
        let mut args = vec!["live".as_ref(), "--replay".as_ref(), dir.as_os_str()];
        let json: &[&str] = if extra.contains(&"-o") {
            &[]
        } else {
            &["-o", "json"]
        };
        args.extend(json.iter().chain(extra).map(std::ffi::OsStr::new));
        Run::of(&args)
    }

    /// (code, severity) of every finding.
    fn levels(&self) -> BTreeSet<(&str, &str)> {
        self.findings()
            .map(|f| (f["code"].as_str().unwrap(), f["severity"].as_str().unwrap()))
            .collect()
    }

    fn codes(&self) -> BTreeSet<&str> {
        self.findings()
            .map(|f| f["code"].as_str().unwrap())
            .collect()
    }

    fn findings(&self) -> impl Iterator<Item = &serde_json::Value> {
        self.doc["findings"].as_array().into_iter().flatten()
    }
}

#[test]
fn replay_through_the_command_line() {
    let run = Run::replay("annotation-loop", &[]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(run.doc["command"], "live");
    let codes = run.codes();
    assert!(
        codes.contains("CA202") && codes.contains("CA201"),
        "{codes:?}"
    );
    assert!(run.findings().all(|f| f["lens"] == "live"));

    // The same policy step as scan: --allow drops a rule, -W/-D set its level, an unknown code is exit 2.
    let run = Run::replay("annotation-loop", &["--allow", "CA201,CA202"]);
    let codes = run.codes();
    assert!(
        !codes.contains("CA201") && !codes.contains("CA202"),
        "{codes:?}"
    );
    assert_eq!(run.code, Some(if codes.is_empty() { 0 } else { 1 }));
    let run = Run::replay("annotation-loop", &["-W", "CA202", "-D", "CA201"]);
    let levels = run.levels();
    assert!(levels.contains(&("CA202", "warning")), "{levels:?}");
    assert!(levels.contains(&("CA201", "error")), "{levels:?}");
    let run = Run::replay("annotation-loop", &["--deny", "CA999"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown rule \"CA999\" in --deny"),
        "{}",
        run.stderr
    );

    // The good window: nothing, exit 0; junit and sarif render too.
    for fmt in ["table", "junit", "sarif", "github"] {
        let run = Run::replay("good", &["-o", fmt]);
        assert_eq!(run.code, Some(0), "{fmt}: {}", run.stderr);
    }
}

#[test]
fn unreachable_cluster_is_exit_3_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    // A port nobody listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n    namespace: default\ncurrent-context: x\n"
        ),
    )
    .unwrap();
    let run = Run::of(&[
        "live".as_ref(),
        "--duration".as_ref(),
        "1s".as_ref(),
        "-o".as_ref(),
        "json".as_ref(),
        "--kubeconfig".as_ref(),
        kubeconfig.as_os_str(),
    ]);
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    let notes = run.doc["notes"].to_string();
    assert!(notes.contains("unreachable"), "{notes}");
    assert!(notes.contains("apiserver /metrics"), "{notes}");
}

#[test]
fn offline_audit_log_needs_no_cluster() {
    let log = fixtures()
        .join("tenants-and-reads-audit")
        .join(record::AUDIT);
    let run = Run::of(&[
        "live".as_ref(),
        "--offline".as_ref(),
        "--audit-log".as_ref(),
        log.as_os_str(),
        "-o".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(run.codes(), BTreeSet::from(["CA303", "CA401"]));
    assert!(
        run.doc["notes"].to_string().contains("1 of 55 lines"),
        "{}",
        run.doc["notes"]
    );
}

/// Serves `body` after `delay` to every connection on 127.0.0.1; returns the URL.
async fn serve(body: Vec<u8>, delay: std::time::Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let _ = sock.read(&mut buf).await;
                tokio::time::sleep(delay).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&body).await;
            });
        }
    });
    url
}

#[tokio::test]
async fn bad_metrics_endpoints_are_reported_and_skipped() {
    use ctrlaudit::fetch::FetchError;
    use ctrlaudit::live::collect::scrape::http_get;
    use ctrlaudit::live::metrics::{ParseError, parse};
    use ctrlaudit::live::snapshot::SourceKind;
    use std::time::Duration;
    let names = ctrlaudit::config::MetricNames::default();
    let fast = Duration::from_millis(0);

    // Down: nobody listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = http_get(
        &format!("http://127.0.0.1:{port}/metrics"),
        1 << 20,
        Duration::from_secs(2),
    )
    .await;
    assert!(
        matches!(e, Err(FetchError::Request(ref m)) if m.contains("unreachable")),
        "{e:?}"
    );

    // Slow: no answer within the deadline.
    let url = serve(b"up 1\n".to_vec(), Duration::from_secs(5)).await;
    let e = http_get(&url, 1 << 20, Duration::from_millis(300)).await;
    assert!(matches!(e, Err(FetchError::Timeout(_))), "{e:?}");

    // Huge: cut off at the cap, not read to the end.
    let url = serve(vec![b'#'; 3 << 20], fast).await;
    let e = http_get(&url, 1 << 20, Duration::from_secs(5)).await;
    assert!(matches!(e, Err(FetchError::TooLarge(_))), "{e:?}");

    // Garbage: text, but no samples in it.
    let url = serve(b"<html><body>login</body></html>\n".to_vec(), fast).await;
    let text = http_get(&url, 1 << 20, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(matches!(
        parse(&text, 0, SourceKind::Controller, &names),
        Err(ParseError::Garbage { .. })
    ));
    let url = serve(vec![0xff, 0xfe, 0x00, 0x01], fast).await;
    assert!(matches!(
        http_get(&url, 1 << 20, Duration::from_secs(5)).await,
        Err(FetchError::NotText)
    ));

    // And a good one parses.
    let url = serve(
        b"controller_runtime_reconcile_total{controller=\"c\",result=\"success\"} 3\n".to_vec(),
        fast,
    )
    .await;
    let text = http_get(&url, 1 << 20, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(
        parse(&text, 0, SourceKind::Controller, &names)
            .unwrap()
            .samples
            .len(),
        1
    );

    // https is refused with a pointer to the pod proxy.
    let e = http_get(
        "https://127.0.0.1:1/metrics",
        1 << 20,
        Duration::from_secs(1),
    )
    .await;
    assert!(
        matches!(e, Err(FetchError::Request(ref m)) if m.contains("--controller-pod")),
        "{e:?}"
    );
}
