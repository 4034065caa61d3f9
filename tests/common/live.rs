//! The cluster side of the live tests: bench variants run in the test process with their /metrics served on
//! 127.0.0.1, and `live` observing a window while a scenario happens (tests/live_testenv.rs,
//! tests/live_corpus.rs).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use ctrlaudit::bench::client::{self as bench_client, RestMetrics};
use ctrlaudit::bench::instrument::{StopHandle, VariantCtx, VariantOptions};
use ctrlaudit::bench::variants::{self, Code};
use ctrlaudit::cli::{Cli, Command};
use ctrlaudit::config::Config;
use ctrlaudit::live::snapshot::Snapshot;
use ctrlaudit::live::{self, Observed};
use ctrlaudit::policy::Policy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A bench variant running in this process, with its /metrics served on 127.0.0.1.
pub struct Variant {
    pub stop: StopHandle,
    pub task: tokio::task::JoinHandle<anyhow::Result<()>>,
    pub server: tokio::task::JoinHandle<()>,
    pub url: String,
    /// The field manager the API server derives from the variant's user agent.
    pub manager: String,
}

impl Variant {
    pub async fn stop(mut self) {
        self.stop.stop();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
        self.server.abort();
    }
}

pub async fn start_variant(env: &super::TestEnv, code: Code, name: &str, workers: u16) -> Variant {
    start_variant_working(env, code, name, workers, Duration::from_millis(10)).await
}

/// [`start_variant`] with each reconcile taking `work` (a slower loop).
pub async fn start_variant_working(
    env: &super::TestEnv,
    code: Code,
    name: &str,
    workers: u16,
    work: Duration,
) -> Variant {
    let config = ctrlaudit::connect::config(Some(&env.dir.join("kubeconfig")), None)
        .await
        .unwrap();
    let rest = RestMetrics::default();
    // The API server names a write without fieldManager after the user agent up to its first '/'.
    let client = bench_client::build(&config, &format!("{name}/ctrlaudit-tests"), &rest).unwrap();
    let (ctx, stop) = VariantCtx::new(
        client,
        rest,
        VariantOptions {
            controller: name.to_string(),
            work,
            streaming_lists: false,
            label_selector: None,
            process_metrics: false,
            workers,
        },
    );
    let task = tokio::spawn(variants::run(
        code,
        vec![env.namespace.clone()],
        ctx.clone(),
    ));
    let (url, server) = serve_metrics(ctx).await;
    Variant {
        stop,
        task,
        server,
        url,
        manager: name.to_string(),
    }
}

/// A minimal HTTP/1.1 server answering every request with the variant's metrics text.
pub async fn serve_metrics(ctx: Arc<VariantCtx>) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let body = ctx.encode();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(body.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (url, server)
}

/// `live -n NS --duration WINDOW --scrape-interval 1s EXTRA…` as the command line would parse it.
pub fn live_args(
    ns: &str,
    window: &str,
    extra: &[&str],
) -> (ctrlaudit::connect::ClusterArgs, live::LiveArgs) {
    let mut argv = vec![
        "kubectl-ctrlaudit",
        "live",
        "-n",
        ns,
        "--duration",
        window,
        "--scrape-interval",
        "1s",
    ];
    argv.extend_from_slice(extra);
    let cli = Cli::try_parse_from(argv).unwrap();
    match cli.command {
        Command::Live(a) => (cli.global.cluster, a),
        other => panic!("not live: {other:?}"),
    }
}

/// Runs `live` as the read-only identity while `drive` makes the scenario happen, 1.5 s into the window.
pub async fn observe<F: Future<Output = ()>>(
    env: &super::TestEnv,
    window: &str,
    extra: &[&str],
    drive: F,
) -> Observed {
    observe_as(env, env.readonly.clone(), window, extra, drive).await
}

/// [`observe`] with `client` (the read-only identity under another user agent, say).
pub async fn observe_as<F: Future<Output = ()>>(
    env: &super::TestEnv,
    client: kube::Client,
    window: &str,
    extra: &[&str],
    drive: F,
) -> Observed {
    let (g, a) = live_args(&env.namespace, window, extra);
    let ns = env.namespace.clone();
    let handle = tokio::spawn(async move {
        let cfg = Config::default();
        let policy = Policy::new(&cfg, &a.policy).unwrap();
        live::observe(Some((client, ns)), &g, false, &a, &cfg, &policy).await
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    drive.await;
    handle.await.unwrap().unwrap()
}

/// The window as a fixture keeps it: the namespace renamed `live-<name>` (stable across runs) and the API
/// server's cluster-wide counters of other resources left out (noise in a fixture).
pub fn stable_snapshot(o: &Observed, ns: &str, name: &str) -> Snapshot {
    let text = serde_json::to_string(&o.snapshot)
        .unwrap()
        .replace(ns, &format!("live-{name}"));
    let mut snap: Snapshot = serde_json::from_str(&text).unwrap();
    for m in &mut snap.metrics {
        for s in &mut m.scrapes {
            s.samples.retain(|x| {
                x.labels
                    .get("group")
                    .is_none_or(|g| g.is_empty() || g == "bench.ctrlaudit.io")
            });
        }
    }
    snap
}
