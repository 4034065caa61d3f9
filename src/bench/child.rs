//! Processes the harness starts from its own binary: the tenant designs (per-tenant, shared), each alone in a
//! process so that its resident memory and task count are its own, and `create-one`, the one-object-per-
//! process creation that stands in for a `kubectl apply` loop.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use kube::api::{Api, PostParams};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

use super::catalog;
use super::client::{self, RestMetrics};
use super::cluster;
use super::instrument::{VariantCtx, VariantOptions};
use super::variants;
use super::widget::Widget;
use crate::connect::ClusterArgs;
use crate::duration;
use crate::endpoint;

/// The binary to start children from: `CTRLAUDIT_BENCH_EXE`, else this process's own executable.
pub fn exe() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("CTRLAUDIT_BENCH_EXE").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    std::env::current_exe().context("finding this program's executable")
}

/// The global flags a child needs to reach the same cluster as the same user.
fn cluster_flags(g: &ClusterArgs) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(k) = &g.kubeconfig {
        v.push("--kubeconfig".to_string());
        v.push(k.display().to_string());
    }
    if let Some(c) = &g.context {
        v.push("--context".to_string());
        v.push(c.clone());
    }
    v
}

/// A tenant design running in its own process.
#[derive(Debug)]
pub struct ChildVariant {
    pub name: String,
    pub addr: SocketAddr,
    child: Child,
}

/// Starts `variant` over `namespaces` in a child process and waits for its metrics address.
pub async fn spawn_design(
    exe: &Path,
    g: &ClusterArgs,
    variant: &str,
    namespaces: &[String],
    selector: &str,
    work: Duration,
) -> Result<ChildVariant> {
    let mut cmd = Command::new(exe);
    cmd.args(cluster_flags(g))
        .args(["bench", "child", "--variant", variant])
        .arg("--namespaces")
        .arg(namespaces.join(","))
        .args(["--selector", selector, "--work", &duration::format(work)])
        // The child stops when its stdin closes, so it never outlives the harness.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {} for the {variant} design", exe.display()))?;
    let stdout = child
        .stdout
        .take()
        .context("the child's stdout is not piped")?;
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .with_context(|| {
            format!("the {variant} process did not report its metrics port within 60s")
        })?
        .context("reading the child's stdout")?;
    let Some(line) = first else {
        let status = child.wait().await.ok();
        bail!("the {variant} process exited before it started ({status:?}); see its stderr above");
    };
    let addr: SocketAddr = line
        .strip_prefix("listening ")
        .and_then(|a| a.trim().parse().ok())
        .with_context(|| {
            format!("the {variant} process said {line:?}, expected `listening ADDR`")
        })?;
    Ok(ChildVariant {
        name: variant.to_string(),
        addr,
        child,
    })
}

impl ChildVariant {
    /// Closes its stdin (a graceful stop) and waits up to 10 s before killing it.
    pub async fn stop(mut self) {
        drop(self.child.stdin.take());
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            // Past its grace period: the process holds nothing the cleanup needs.
            let _ = self.child.kill().await;
        }
    }
}

/// The child side: runs the tenant design until stdin closes. Prints `listening ADDR` first.
pub fn run_design(
    g: &ClusterArgs,
    variant: &str,
    namespaces: Vec<String>,
    selector: String,
    work: &str,
) -> Result<()> {
    let spec = catalog::variant(variant)
        .filter(|s| s.tenant_design)
        .with_context(|| format!("{variant:?} is not a tenant design"))?;
    let work = super::args::parse_duration("work", work)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async move {
        let config = g.config().await?;
        let rest = RestMetrics::default();
        let client = client::build(&config, &client::variant_user_agent(variant), &rest)?;
        let (ctx, mut stop) = VariantCtx::new(
            client,
            rest,
            VariantOptions {
                controller: variant.to_string(),
                work,
                streaming_lists: spec.streaming_lists,
                label_selector: Some(selector),
                process_metrics: true,
                workers: spec.workers,
            },
        );
        let render_ctx = ctx.clone();
        let (addr, server) =
            endpoint::serve(std::sync::Arc::new(move || render_ctx.encode())).await?;
        println!("listening {addr}");
        // Let the allocator and the runtime settle before the baseline.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let controllers = if spec.code == variants::Code::PerTenant {
            namespaces.len()
        } else {
            1
        };
        ctx.record_baseline(controllers);
        let design = tokio::spawn(variants::run(spec.code, namespaces, ctx.clone()));
        // Wait for the harness to close our stdin (or to die, which closes it too).
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 64];
        while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
        stop.stop();
        let _ = tokio::time::timeout(Duration::from_secs(8), design).await;
        server.abort();
        Ok::<(), anyhow::Error>(())
    })
}

/// `create-one`: what `kubectl apply -f widget.yaml` does for a new object, in a fresh process: load the
/// kubeconfig, connect, GET (404), POST with the last-applied-configuration annotation.
pub fn create_one(g: &ClusterArgs, name: &str, run_id: &str) -> Result<()> {
    let namespace = g
        .namespace
        .clone()
        .context("create-one needs -n NAMESPACE")?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async {
        let config = g.config().await?;
        let client = kube::Client::try_from(config).context("building the client")?;
        let api: Api<Widget> = Api::namespaced(client, &namespace);
        let mut w = cluster::widget(0, run_id, "speed-process-per-object");
        w.metadata.name = Some(name.to_string());
        let last_applied = serde_json::to_string(&w).context("serialising the widget")?;
        w.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(
                "kubectl.kubernetes.io/last-applied-configuration".into(),
                last_applied,
            );
        if api.get_opt(name).await.context("GET")?.is_none() {
            api.create(&PostParams::default(), &w)
                .await
                .context("POST")?;
        }
        Ok(())
    })
}

/// Runs `create-one` as a child process (the speed comparison's sequential loop).
pub async fn create_one_process(
    exe: &Path,
    g: &ClusterArgs,
    namespace: &str,
    name: &str,
    run_id: &str,
) -> Result<()> {
    let status = Command::new(exe)
        .args(cluster_flags(g))
        .args([
            "-n",
            namespace,
            "bench",
            "create-one",
            "--name",
            name,
            "--run",
            run_id,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .await
        .with_context(|| format!("starting {}", exe.display()))?;
    if !status.success() {
        bail!("create-one {name} exited with {status}");
    }
    Ok(())
}

/// A kubectl binary for the speed comparison: `CTRLAUDIT_KUBECTL`, else `kubectl` on PATH.
pub fn find_kubectl() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CTRLAUDIT_KUBECTL").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
}

/// One iteration of the seed's loop: `kubectl apply -f -` with one Widget manifest on stdin.
pub async fn kubectl_apply(
    kubectl: &Path,
    g: &ClusterArgs,
    namespace: &str,
    name: &str,
    run_id: &str,
) -> Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut w = cluster::widget(0, run_id, "speed-kubectl-apply");
    w.metadata.name = Some(name.to_string());
    let manifest = serde_json::to_vec(&w).context("serialising the widget")?;
    let mut child = Command::new(kubectl)
        .args(cluster_flags(g))
        .args(["apply", "-n", namespace, "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {}", kubectl.display()))?;
    let mut stdin = child.stdin.take().context("kubectl's stdin is not piped")?;
    stdin
        .write_all(&manifest)
        .await
        .context("writing the manifest to kubectl")?;
    drop(stdin);
    let status = child.wait().await.context("waiting for kubectl")?;
    if !status.success() {
        bail!("kubectl apply {name} exited with {status}");
    }
    Ok(())
}
