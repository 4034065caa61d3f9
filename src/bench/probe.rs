//! The API server's write ceiling: concurrent status patches for a few seconds, each one a real change (so a
//! real etcd write), counted per second. Each variant's write rate is then reported as a share of it (CA403).

use std::time::{Duration, Instant};

use anyhow::Result;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::cluster::{Target, create_widgets};
use super::stats::percentile;
use super::widget::Widget;

/// Patches in flight during the probe: enough to saturate one API server and etcd.
pub const CONCURRENCY: usize = 16;

/// What the probe measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Ceiling {
    pub writes: u64,
    pub seconds: f64,
    /// Successful writes per second: the ceiling.
    pub per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub concurrency: usize,
    pub errors: u64,
}

/// Runs the probe in `namespace` (which must exist) for `duration`.
pub async fn run(
    client: &Client,
    namespace: &str,
    run_id: &str,
    duration: Duration,
) -> Result<Ceiling> {
    let target = Target {
        namespace: namespace.to_string(),
        variant: "probe".into(),
        count: CONCURRENCY as u64,
    };
    create_widgets(client, &[target], run_id, CONCURRENCY, |_| {}).await?;
    let start = Instant::now();
    let deadline = start + duration;
    let workers = (0..CONCURRENCY).map(|i| {
        let api: Api<Widget> = Api::namespaced(client.clone(), namespace);
        let name = format!("w-{i:05}");
        async move {
            let mut latencies = Vec::new();
            let mut errors = 0u64;
            let mut n: i64 = 0;
            while Instant::now() < deadline {
                n += 1;
                // A new value every time: a no-op patch would not reach etcd and would flatter the ceiling.
                let body = json!({ "status": { "processedCount": n, "phase": "Probe" } });
                let t = Instant::now();
                let result = api
                    // ctrlaudit: allow(CA304) reason: each worker writes in turn; CONCURRENCY workers run at once
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&body))
                    .await;
                match result {
                    Ok(_) => latencies.push(t.elapsed().as_secs_f64() * 1000.0),
                    Err(_) => errors += 1,
                }
            }
            (latencies, errors)
        }
    });
    let results = futures::future::join_all(workers).await;
    let seconds = start.elapsed().as_secs_f64();
    let mut all: Vec<f64> = results
        .iter()
        .flat_map(|(l, _)| l.iter().copied())
        .collect();
    let errors = results.iter().map(|(_, e)| e).sum();
    let writes = all.len() as u64;
    Ok(Ceiling {
        writes,
        seconds,
        per_second: writes as f64 / seconds.max(1e-9),
        p50_ms: percentile(&mut all, 0.5).unwrap_or(0.0),
        p99_ms: percentile(&mut all, 0.99).unwrap_or(0.0),
        concurrency: CONCURRENCY,
        errors,
    })
}
