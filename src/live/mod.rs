//! `kubectl ctrlaudit live`: watch a namespace (or all) for a window and report controller anti-patterns with
//! evidence. `collect` does all I/O and yields a [`snapshot::Snapshot`]; `detectors` are pure functions of it.

pub mod actor;
pub mod audit;
pub mod collect;
pub mod detectors;
pub mod events;
pub mod exclude;
pub mod metrics;
pub mod record;
pub mod serve;
pub mod snapshot;
pub mod tracker;
pub mod volatile;

use crate::config::Config;
use crate::connect::ClusterArgs;
use crate::exit::{Failure, Outcome, Status};
use crate::finding::Finding;
use crate::policy::{Policy, PolicyArgs};
use crate::report::{self, Note, OutputArgs};
use anyhow::{Context, Result, anyhow};
use clap::Args;
use collect::{CollectOptions, MetricsTarget};
use snapshot::Snapshot;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// Beyond the window's closing grace, how long the whole run may take before it is cut short.
const RUN_SLACK: Duration = Duration::from_secs(4);

/// The User-Agent of every request `live` sends, so that audit logs (and its own detectors) can tell it apart.
pub const USER_AGENT: &str = concat!("kubectl-ctrlaudit/", env!("CARGO_PKG_VERSION"), " (live)");

/// `kubectl ctrlaudit live` arguments (the kubectl-style ones are global).
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    /// Watch every namespace (also accepted before the command).
    #[arg(short = 'A', long = "all-namespaces")]
    pub all_namespaces: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// How long to watch: 60s, 2m, 1m30s, 500ms.
    #[arg(long, default_value = "60s", value_parser = crate::duration::parse_arg)]
    pub duration: Duration,
    /// Only this resource type (plural, kind, short name or plural.group); repeatable. Built-in kinds
    /// (deployments, configmaps, …) are watched for metadata only. Default: every custom resource.
    #[arg(long = "resource", value_name = "TYPE")]
    pub resources: Vec<String>,
    /// Also watch the objects the watched types own (ownerReferences): the other custom resources and the
    /// built-in kinds operators create (Deployments, ConfigMaps, Services, Jobs, …), for metadata only.
    #[arg(long)]
    pub owned: bool,
    /// A controller's Prometheus endpoint (plain http://); repeatable.
    #[arg(long = "metrics-url", value_name = "URL")]
    pub metrics_urls: Vec<String>,
    /// A controller pod, scraped through the API server's pod proxy ([NAMESPACE/]NAME); repeatable.
    #[arg(long = "controller-pod", value_name = "[NS/]NAME")]
    pub controller_pods: Vec<String>,
    /// Controller pods by label selector (in -n), scraped through the pod proxy.
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// The controller pods' metrics port (default: a container port named like metrics, else the first).
    #[arg(long = "metrics-port", value_name = "PORT")]
    pub metrics_port: Option<u16>,
    /// Also read this API server audit log (JSON lines): exact attribution by user and user agent.
    #[arg(long = "audit-log", value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    /// Read only --audit-log; contact no cluster.
    #[arg(long, requires = "audit_log")]
    pub offline: bool,
    /// Save what was observed (snapshot + expectations) to DIR, in the fixtures layout.
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Run the detectors on a recording instead of a cluster.
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,
    /// Configuration file (default: ctrlaudit.toml found upward from the current directory).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The API server's write ceiling in writes/s, as measured by `kubectl ctrlaudit bench` (CA403).
    #[arg(long = "write-ceiling", value_name = "WRITES_PER_SEC")]
    pub write_ceiling: Option<f64>,
    /// How often the controllers' /metrics are scraped (1s at least).
    #[arg(long = "scrape-interval", default_value = "5s", value_parser = parse_scrape_interval)]
    pub scrape_interval: Duration,
    /// Do not scrape the API server's /metrics.
    #[arg(long = "no-apiserver-metrics")]
    pub no_apiserver_metrics: bool,
    /// Do not draw the progress bar (it is drawn only on a terminal anyway).
    #[arg(long = "no-progress")]
    pub no_progress: bool,
    /// Run until SIGTERM or Ctrl-C, one --duration window after another, and serve the last window's findings
    /// as Prometheus metrics at http://ADDR/metrics (e.g. :9464 or 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR", value_parser = parse_listen, conflicts_with_all = ["replay", "record", "offline"])]
    pub serve: Option<std::net::SocketAddr>,
    /// With --serve: post a Kubernetes Event (reason: the rule code) on each object a finding is newly seen on.
    /// The only write live ever makes; needs create on events (deploy/events-rbac.yaml).
    #[arg(long, requires = "serve")]
    pub events: bool,
}

/// A duration of at least [`collect::MIN_SCRAPE_INTERVAL`].
fn parse_scrape_interval(s: &str) -> std::result::Result<Duration, String> {
    let d = crate::duration::parse_arg(s)?;
    if d < collect::MIN_SCRAPE_INTERVAL {
        return Err(format!(
            "{s:?} is shorter than {}: each scrape of a large /metrics takes about that long, and the rules read \
             rates over the window",
            crate::duration::format(collect::MIN_SCRAPE_INTERVAL)
        ));
    }
    Ok(d)
}

/// `:9464` (every interface) or `HOST:PORT`.
fn parse_listen(s: &str) -> std::result::Result<std::net::SocketAddr, String> {
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_string()
    };
    full.parse()
        .map_err(|_| format!("{s:?} is not an address to listen on (:9464 or 127.0.0.1:9464)"))
}

/// `[NS/]NAME` → (namespace, name).
fn split_pod(spec: &str, default_ns: &str) -> (String, String) {
    match spec.split_once('/') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (default_ns.to_string(), spec.to_string()),
    }
}

/// Everything one run produced.
#[derive(Debug)]
pub struct Observed {
    pub snapshot: Snapshot,
    pub findings: Vec<Finding>,
}

/// Collects (or replays), detects with `cfg`'s thresholds and applies `policy`'s rule levels, without printing:
/// the library entry point the tests use. The policy is built by the caller, so that a mistyped rule code fails
/// before anything connects or watches.
pub async fn observe(
    client: Option<(kube::Client, String)>,
    g: &ClusterArgs,
    all_namespaces: bool,
    a: &LiveArgs,
    cfg: &Config,
    policy: &Policy,
) -> Result<Observed> {
    if let Some(dir) = &a.record {
        record::check_writable(dir)?;
    }
    let snapshot = match &a.replay {
        Some(dir) => record::read(dir)?,
        None => {
            let mut pre_notes = Vec::new();
            // Only to name the server in a note when it does not answer: reading the kubeconfig again is cheap.
            let server = match &client {
                Some(_) => g.config().await.ok().map(|c| c.cluster_url.to_string()),
                None => None,
            };
            let (client, default_ns) = match client {
                Some((c, ns)) => (Some(c), ns),
                None => (None, "default".to_string()),
            };
            let namespace = if all_namespaces || client.is_none() {
                // Offline (an audit log only), a namespace is a filter only when one was asked for.
                if all_namespaces {
                    None
                } else {
                    g.namespace.clone()
                }
            } else {
                Some(g.namespace.clone().unwrap_or_else(|| default_ns.clone()))
            };
            let target_ns = g.namespace.clone().unwrap_or(default_ns);
            let mut targets: Vec<MetricsTarget> = a
                .metrics_urls
                .iter()
                .cloned()
                .map(MetricsTarget::Url)
                .collect();
            for p in &a.controller_pods {
                let (namespace, name) = split_pod(p, &target_ns);
                targets.push(MetricsTarget::Pod {
                    namespace,
                    name,
                    port: a.metrics_port,
                });
            }
            if let Some(sel) = &a.selector {
                targets.push(MetricsTarget::Selector {
                    namespace: target_ns.clone(),
                    selector: sel.clone(),
                    port: a.metrics_port,
                });
            }
            if client.is_none() && !a.offline {
                pre_notes.push(Note {
                    subject: "cluster".into(),
                    message: "no usable kubeconfig: nothing was watched".into(),
                });
            }
            let opts = CollectOptions {
                namespace,
                duration: a.duration,
                resources: a.resources.clone(),
                owned: a.owned,
                targets,
                audit_log: a.audit_log.clone(),
                scrape_interval: a.scrape_interval,
                apiserver_metrics: !a.no_apiserver_metrics,
                write_ceiling: a.write_ceiling,
                progress: !a.no_progress && std::io::stderr().is_terminal(),
                request_timeout: g.request_timeout(),
                server,
            };
            let cluster = client.is_some();
            let mut s = guarded(collect::collect(client, &opts, cfg), &opts, cluster).await;
            pre_notes.append(&mut s.notes);
            s.notes = pre_notes;
            s
        }
    };
    let mut snapshot = snapshot;
    let actors = actor::Actors::of(&snapshot);
    let mut findings = detectors::run_all_with(&snapshot, &actors, cfg);
    policy.apply(&mut findings);
    let excluded = exclude::apply(&snapshot, &cfg.live, &mut findings);
    if let Some(dir) = &a.record {
        record::write(dir, &snapshot, &findings)?;
    }
    // After the recording: a replay of it applies the exclusions again and says so itself, and classifies the
    // actors again.
    snapshot.notes.extend(excluded);
    snapshot.notes.extend(actors.note());
    Ok(Observed { snapshot, findings })
}

/// The window and its closing grace bound every request already; this guards against what they do not (a
/// kubeconfig exec plugin that hangs, say): collecting from a cluster ends rather than never, with nothing kept
/// and a note saying so. Offline, reading a large log may rightly take longer than any window.
async fn guarded(
    collecting: impl Future<Output = Snapshot>,
    opts: &CollectOptions,
    cluster: bool,
) -> Snapshot {
    if !cluster {
        return collecting.await;
    }
    let limit = opts.duration.saturating_add(collect::CLOSING + RUN_SLACK);
    match tokio::time::timeout(limit, collecting).await {
        Ok(s) => s,
        Err(_) => Snapshot {
            format: snapshot::FORMAT_VERSION,
            notes: vec![Note {
                subject: "window".into(),
                message: format!(
                    "did not end within {} of its {}: something never answered (see --request-timeout); nothing \
                     was kept",
                    crate::duration::format(collect::CLOSING + RUN_SLACK),
                    crate::duration::format(opts.duration)
                ),
            }],
            ..Snapshot::default()
        },
    }
}

/// The `live` command: Findings when one is at or above `--fail-on`, NoEvidence when nothing at all could
/// be observed.
pub fn run(g: &ClusterArgs, out: &OutputArgs, all_namespaces: bool, a: &LiveArgs) -> Outcome {
    let all_namespaces = all_namespaces || a.all_namespaces;
    if all_namespaces && g.namespace.is_some() {
        return Err(Failure::usage(anyhow!(
            "-n/--namespace and -A/--all-namespaces exclude each other"
        )));
    }
    let files = report::output_files(
        &out.output_files,
        out.output.unwrap_or(report::Format::Table),
    )?;
    let cfg = match &a.config {
        Some(p) => Config::load(p)?,
        None => Config::discover(std::path::Path::new("."))?,
    };
    // Before connecting, so that a mistyped code costs no wait.
    let policy = Policy::new(&cfg, &a.policy).map_err(Failure::usage)?;
    // Before connecting too: a window watched and then not saved, or a FIFO read forever, is a wait for nothing.
    if let Some(dir) = &a.record {
        record::check_writable(dir).map_err(Failure::usage)?;
    }
    if let Some(log) = &a.audit_log
        && a.replay.is_none()
    {
        if !log.exists() {
            return Err(Failure::usage(anyhow!(
                "audit log {}: no such file",
                log.display()
            )));
        }
        collect::audit_file::check_regular(log).map_err(Failure::usage)?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    if let Some(addr) = a.serve {
        rt.block_on(serve_windows(addr, g, all_namespaces, a, &cfg, &policy))?;
        return Ok(Status::Clean);
    }
    let observed = rt.block_on(async {
        let client = if a.replay.is_some() || a.offline {
            None
        } else {
            match g.client(USER_AGENT).await {
                Ok(c) => Some(c),
                // A kubeconfig that is missing or broken, or a context it lacks, is the user's input: exit 2,
                // said once, before any wait.
                Err(e) if e.downcast_ref::<crate::connect::ConfigError>().is_some() => {
                    return Err(Failure::usage(e));
                }
                Err(e) => {
                    eprintln!("warning: {e:#}");
                    None
                }
            }
        };
        observe(client, g, all_namespaces, a, &cfg, &policy)
            .await
            .map_err(Failure::from)
    });
    // A blocking task stuck on a read must not keep the process from exiting once the window is over.
    rt.shutdown_timeout(Duration::from_secs(1));
    let observed = observed?;
    let Observed { snapshot, findings } = observed;
    let mut stats = stats(&snapshot);
    if a.replay.is_none()
        && let Some(kib) = peak_rss_kib()
    {
        // What watching cost this process, beside the requests: the figure a reader of a large cluster asks for.
        stats.push((
            "peak memory".to_string(),
            format!("{:.1} MiB", kib as f64 / 1024.0),
        ));
    }
    out.emit("live", &findings, &snapshot.notes, &stats, &files)?;
    if !snapshot.has_evidence() {
        return Ok(Status::NoEvidence);
    }
    Ok(out.status(&findings))
}

/// `--serve`: windows until SIGTERM or Ctrl-C, each one's findings published at `addr`. A window in which
/// nothing could be observed (the API server restarting) is counted as such and the next one starts after the
/// rest of its time, so an outage neither stops the process nor spins it.
async fn serve_windows(
    addr: std::net::SocketAddr,
    g: &ClusterArgs,
    all_namespaces: bool,
    a: &LiveArgs,
    cfg: &Config,
    policy: &Policy,
) -> Result<()> {
    let metrics = std::sync::Arc::new(serve::ServeMetrics::new());
    let render = metrics.clone();
    let (bound, server) =
        crate::endpoint::serve_on(addr, std::sync::Arc::new(move || render.render())).await?;
    eprintln!(
        "serving the findings of each {} window at http://{bound}/metrics until SIGTERM or Ctrl-C",
        crate::duration::format(a.duration)
    );
    let client = g.client(USER_AGENT).await.context(
        "--serve needs a cluster (a kubeconfig, or the pod's service account in a cluster)",
    )?;
    let mut window_args = a.clone();
    window_args.no_progress = true;
    let stop = shutdown()?;
    tokio::pin!(stop);
    let mut seen = events::Seen::new();
    loop {
        let started = tokio::time::Instant::now();
        let window = observe(
            Some(client.clone()),
            g,
            all_namespaces,
            &window_args,
            cfg,
            policy,
        );
        let observed = tokio::select! {
            o = window => o,
            () = &mut stop => break,
        };
        match observed {
            Ok(o) => {
                let report = serve::WindowReport::new(&o.snapshot, &o.findings);
                let mut posted = 0;
                if a.events {
                    let (plans, now_seen) = events::plan(&o.findings, &seen);
                    let mut notes = Vec::new();
                    posted =
                        events::post(&client.0, &o.snapshot.resources, &plans, &mut notes).await;
                    for n in notes {
                        eprintln!("warning: {}: {}", n.subject, n.message);
                    }
                    // An unobserved window says nothing about the findings: keep what was posted.
                    if report.observed {
                        seen = now_seen;
                    }
                }
                // After the Events: a scraper that sees the window sees its Events posted too.
                metrics.record(&report);
                eprintln!(
                    "window: {} findings, {} objects, {} notes, {posted} events",
                    o.findings.len(),
                    report.objects,
                    report.notes
                );
            }
            Err(e) => eprintln!("warning: window failed: {e:#}"),
        }
        // A window that ended early (nothing observable) waits out its time before the next attempt.
        let rest = tokio::time::sleep_until(
            started
                .checked_add(a.duration)
                .unwrap_or_else(|| collect::after(a.duration)),
        );
        tokio::select! {
            () = rest => {}
            () = &mut stop => break,
        }
    }
    server.abort();
    eprintln!("stopped");
    Ok(())
}

/// Resolves on SIGTERM (how Kubernetes stops a pod) or Ctrl-C.
#[cfg(unix)]
fn shutdown() -> Result<impl Future<Output = ()>> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("listening for SIGTERM")?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    })
}

/// Resolves on Ctrl-C (no SIGTERM off Unix).
#[cfg(not(unix))]
fn shutdown() -> Result<impl Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

/// This process's peak resident set in KiB (Linux: `VmHWM`), if the system says.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The stats line: what was watched and what it cost.
pub fn stats(s: &Snapshot) -> Vec<(String, String)> {
    let mut v = vec![
        ("scope".to_string(), s.scope.label()),
        ("window".to_string(), format!("{:.1}s", s.window.secs())),
        (
            "types watched".to_string(),
            s.resources.iter().filter(|r| r.watched).count().to_string(),
        ),
        ("objects".to_string(), s.objects.len().to_string()),
        (
            "writes seen".to_string(),
            s.objects
                .iter()
                .map(|o| u64::from(o.writes.total))
                .sum::<u64>()
                .to_string(),
        ),
        (
            "metrics sources".to_string(),
            s.metrics
                .iter()
                .filter(|m| m.scrape_count() > 0)
                .count()
                .to_string(),
        ),
    ];
    if let Some(a) = &s.audit {
        v.push(("audit requests".to_string(), a.requests.to_string()));
    }
    if let Some(ms) = s
        .resources
        .iter()
        .filter(|r| r.watched)
        .filter_map(|r| r.listed_after_ms)
        .max()
    {
        v.push((
            "listed in".to_string(),
            format!("{:.1}s", ms as f64 / 1000.0),
        ));
    }
    let own: u64 = s.requests.values().sum();
    if own > 0 {
        v.push(("API requests by this tool".to_string(), own.to_string()));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods() {
        assert_eq!(split_pod("ns/p", "d"), ("ns".into(), "p".into()));
        assert_eq!(split_pod("p", "d"), ("d".into(), "p".into()));
    }
}
