//! Benchmark: the memory of `live`'s scrapes of one controller `/metrics` of 20,000 series, served on 127.0.0.1,
//! scraped every second for a window. Prints the process's peak memory (VmHWM) and what was kept; with
//! `LIVE_SCRAPE_KEEP_ALL=1` every scrape is kept instead (the behaviour before issue 22), for comparison.
//!
//! Run: `cargo bench --bench live_scrape_memory` (`LIVE_SCRAPE_WINDOW=20s`, `LIVE_SCRAPE_SERIES=20000`). Under
//! `cargo test --all-targets` (no `--bench` argument) it does nothing.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use ctrlaudit::config::Config;
use ctrlaudit::live::collect::scrape::{self, Resolved};
use ctrlaudit::live::collect::{CollectOptions, Limits};
use ctrlaudit::live::snapshot::MetricSource;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

/// A `/metrics` of `series` reconcile counters, one per object, and a gauge.
async fn endpoint(series: usize) -> String {
    let mut body = String::from("# TYPE controller_runtime_reconcile_total counter\n");
    for i in 0..series {
        body.push_str(&format!(
            "controller_runtime_reconcile_total{{controller=\"widget\",name=\"widget-{i:05}\",namespace=\"shop\",result=\"success\"}} {i}\n"
        ));
    }
    body.push_str("controller_runtime_active_workers{controller=\"widget\"} 1\n");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(head.as_bytes()).await;
                let _ = conn.write_all(body.as_bytes()).await;
            });
        }
    });
    url
}

#[tokio::main]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let window = std::env::var("LIVE_SCRAPE_WINDOW")
        .ok()
        .and_then(|w| ctrlaudit::duration::parse(&w).ok())
        .unwrap_or(Duration::from_secs(20));
    let series: usize = std::env::var("LIVE_SCRAPE_SERIES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let keep_all = std::env::var_os("LIVE_SCRAPE_KEEP_ALL").is_some();
    let target = Resolved::Url(endpoint(series).await);
    let client =
        kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
    let cfg = Config::default();
    let before = peak_rss_mib();
    let started = Instant::now();
    let source = if keep_all {
        let mut source = MetricSource::default();
        while started.elapsed() < window {
            let (s, _) = scrape::scrape_once(&client, &target, &cfg, Duration::from_secs(5))
                .await
                .unwrap();
            source.scrapes.push(s);
            source.scraped += 1;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        source
    } else {
        let opts = CollectOptions {
            duration: window,
            ..CollectOptions::default()
        };
        let limits = Limits::new(&opts);
        scrape::scrape_target(client, target, &cfg, Duration::from_secs(1), &limits)
            .await
            .source
    };
    let kept: usize = source
        .scrapes
        .iter()
        .map(|s| s.samples.len())
        .sum::<usize>()
        + source.peaks.len();
    println!(
        "{} scrapes of {series} series in {:.0?} ({}): {} scrapes kept, {kept} samples kept, peak memory {:.1} MiB \
         (before scraping {before:.1} MiB)",
        source.scrape_count(),
        started.elapsed(),
        if keep_all {
            "every scrape kept"
        } else {
            "bounded"
        },
        source.scrapes.len(),
        peak_rss_mib()
    );
}
