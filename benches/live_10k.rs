//! Benchmark: `live` watching 10,000 Widgets on testenv. Reports the tool's peak memory (VmHWM of the process)
//! against the same run over an empty namespace, and the API requests it sent (from the audit log, by its user
//! agent). Figures go to docs/live.md.
//!
//! Run: `eval "$(testenv/start.sh --audit)"; cargo bench --bench live_10k`. `LIVE_BENCH_OBJECTS` changes the
//! 10,000; `LIVE_BENCH_KIND=configmaps` watches ConfigMaps instead (`--resource configmaps`: a built-in kind,
//! watched for metadata only). Under `cargo test --all-targets` (no `--bench` argument) it does nothing, so the test run stays short.
#![allow(clippy::unwrap_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use ctrlaudit::bench::widget::{Widget, WidgetSpec};
use ctrlaudit::live;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

/// Peak resident set of a running process, polled until it exits; with its exit output.
async fn run_and_measure(args: Vec<String>) -> (u64, serde_json::Value, Duration) {
    let started = Instant::now();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let status_path = format!("/proc/{pid}/status");
    let mut peak_kib = 0u64;
    let wait = child.wait_with_output();
    tokio::pin!(wait);
    let out = loop {
        tokio::select! {
            out = &mut wait => break out.unwrap(),
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                if let Ok(s) = std::fs::read_to_string(&status_path)
                    && let Some(line) = s.lines().find(|l| l.starts_with("VmHWM:"))
                    && let Some(kib) = line.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok())
                {
                    peak_kib = peak_kib.max(kib);
                }
            }
        }
    };
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    // Polling misses a peak in the last 100 ms (the closing scrape, the detectors): the tool's own figure,
    // read after them, is the sure one.
    let own_kib = doc["stats"]["peak_memory_mib"]
        .as_f64()
        .map_or(0, |mib| (mib * 1024.0) as u64);
    (peak_kib.max(own_kib), doc, started.elapsed())
}

fn audit_requests_since(
    log: &std::path::Path,
    since_ms: i64,
) -> (usize, std::collections::BTreeMap<String, usize>) {
    let text = std::fs::read_to_string(log).unwrap();
    let mut by = std::collections::BTreeMap::new();
    let mut n = 0;
    for e in text
        .lines()
        .filter(|l| l.contains(live::USER_AGENT))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["stage"] == "ResponseComplete")
        .filter(|e| {
            e["requestReceivedTimestamp"]
                .as_str()
                .and_then(live::tracker::parse_time_ms)
                .is_some_and(|t| t >= since_ms)
        })
    {
        n += 1;
        let key = format!(
            "{} {}",
            e["verb"].as_str().unwrap_or("?"),
            e["objectRef"]["resource"]
                .as_str()
                .unwrap_or("(non-resource)")
        );
        *by.entry(key).or_default() += 1;
    }
    (n, by)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("live_10k: a benchmark; run it with cargo bench --bench live_10k");
        return;
    }
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(live_memory_and_requests_at_10k_widgets());
}

async fn live_memory_and_requests_at_10k_widgets() {
    let empty = common::testenv_with_audit("live-bench-empty").await;
    let env = common::testenv_with_audit("live-bench-10k").await;
    let n: usize = std::env::var("LIVE_BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let configmaps = std::env::var("LIVE_BENCH_KIND").is_ok_and(|k| k == "configmaps");
    let log = env.audit_log.clone().unwrap();
    let readonly = env.dir.join("readonly.kubeconfig");
    let args = |ns: &str| -> Vec<String> {
        let mut v: Vec<String> = vec![
            "live".into(),
            "-n".into(),
            ns.into(),
            "--duration".into(),
            "20s".into(),
            "-o".into(),
            "json".into(),
            "--kubeconfig".into(),
            readonly.display().to_string(),
        ];
        if configmaps {
            v.extend(["--resource".into(), "configmaps".into()]);
        }
        v
    };

    // Baseline: the same run over an empty namespace.
    let (base_kib, _, _) = run_and_measure(args(&empty.namespace)).await;

    let api: Api<Widget> = Api::namespaced(env.client.clone(), &env.namespace);
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    let t = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let cms = cms.clone();
            async move {
                if configmaps {
                    let cm: ConfigMap = serde_json::from_value(json!({
                        "metadata": {"name": format!("w-{i:05}"), "labels": {"app": "shop"}},
                        "data": {"config.yaml": "replicas: 3\nmessage: a config map of moderate size\n"},
                    }))
                    .unwrap();
                    cms.create(&PostParams::default(), &cm).await.unwrap();
                    return;
                }
                let w = Widget::new(
                    &format!("w-{i:05}"),
                    WidgetSpec {
                        count: 1,
                        message: "bench".into(),
                    },
                );
                api.create(&PostParams::default(), &w).await.unwrap();
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    let what = if configmaps { "configmaps" } else { "widgets" };
    eprintln!("created {n} {what} in {:.1}s", t.elapsed().as_secs_f64());

    // During the window: 1,000 objects get an annotation written twice (writes the tracker must digest).
    let since = now_ms();
    let churn = {
        let api = api.clone();
        let cms = cms.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            for round in 0..2 {
                futures::stream::iter(0..n.min(1_000))
                    .map(|i| {
                        let api = api.clone();
                        let cms = cms.clone();
                        async move {
                            let p = json!({"metadata": {"annotations": {"bench/round": format!("r{round}")}}});
                            let name = format!("w-{i:05}");
                            let _ = if configmaps {
                                cms.patch(&name, &PatchParams::default(), &Patch::Merge(&p))
                                    .await
                                    .map(|_| ())
                            } else {
                                api.patch(&name, &PatchParams::default(), &Patch::Merge(&p))
                                    .await
                                    .map(|_| ())
                            };
                        }
                    })
                    .buffer_unordered(16)
                    .collect::<Vec<_>>()
                    .await;
            }
        }
    };
    let ((peak_kib, doc, took), ()) = tokio::join!(run_and_measure(args(&env.namespace)), churn);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (requests, by) = audit_requests_since(&log, since);

    let per_object = (peak_kib.saturating_sub(base_kib) as f64 * 1024.0) / n as f64;
    eprintln!("--- live at {n} {what} (20 s window) ---");
    eprintln!(
        "peak RSS: {:.1} MiB (empty namespace: {:.1} MiB)",
        peak_kib as f64 / 1024.0,
        base_kib as f64 / 1024.0
    );
    eprintln!(
        "per object: {per_object:.0} bytes (peak difference / objects: digest plus decoding buffers)"
    );
    eprintln!("API requests (audit log, by user agent): {requests} {by:?}");
    eprintln!("the tool's own count: {}", doc["stats"]);
    eprintln!(
        "wall time: {:.1}s; findings: {}",
        took.as_secs_f64(),
        doc["findings"].as_array().map_or(0, Vec::len)
    );
    for f in doc["findings"].as_array().into_iter().flatten() {
        eprintln!("finding: {} {} — {}", f["code"], f["subject"], f["message"]);
    }
    assert_eq!(doc["stats"]["objects"], n);
}
