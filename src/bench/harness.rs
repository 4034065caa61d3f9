//! The harness: checks the cluster, installs the CRD if absent, creates one namespace per variant and N
//! Widgets in each, runs the variants side by side (in-process; the tenant designs in processes of their
//! own) for the window while the bookkeeper scrapes and watches, then stops everything and deletes what it
//! created, on Ctrl-C and errors too.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use futures::StreamExt;
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::args::{Plan, PlanKind};
use super::book::{Book, BookConfig, BookEvent, Watched};
use super::catalog::VariantSpec;
use super::child::{self, ChildVariant};
use super::client::{self, RestMetrics};
use super::cluster::{self, CrdOrigin, RUN_LABEL, Target};
use super::instrument::{StopHandle, VariantCtx, VariantOptions};
use super::report::{ApiServer, BenchReport, Bookkeeping, Method, Speed};
use super::summary::{self, Meta};
use super::widget::Widget;
use super::{chart, churn, probe, variants};
use crate::connect::ClusterArgs;
use crate::duration;
use crate::endpoint;
use crate::exit::Failure;

/// Requests in flight while creating objects: enough to keep one API server busy, not to drown it.
pub const CREATE_PARALLELISM: usize = 32;

/// The longest the final cleanup may take before the harness gives up and prints the cleanup command.
pub const CLEANUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Ctrl-C arrived.
#[derive(Debug, thiserror::Error)]
#[error("interrupted (Ctrl-C)")]
pub struct Interrupted;

/// A second Ctrl-C: the run was dropped without cleaning up (the cleanup command was printed).
#[derive(Debug, thiserror::Error)]
#[error("quit at a second Ctrl-C without cleaning up")]
pub struct QuitWithoutCleanup;

/// A variant running in this process.
struct InProcess {
    stop: StopHandle,
    task: JoinHandle<Result<()>>,
    server: JoinHandle<()>,
}

/// Where one variant runs and how many objects it gets.
#[derive(Debug, Clone)]
struct Layout {
    spec: &'static VariantSpec,
    namespaces: Vec<String>,
    per_namespace: u64,
}

impl Layout {
    fn expected(&self) -> u64 {
        self.per_namespace * self.namespaces.len() as u64
    }
}

/// Everything the run created or started, so that it can all be undone whatever happens.
struct State {
    run_id: String,
    namespaces: Vec<String>,
    crd: Option<CrdOrigin>,
    in_process: Vec<InProcess>,
    children: Vec<ChildVariant>,
    book: Option<Book>,
    churn: Option<churn::Churn>,
    report: BenchReport,
    /// The chart as written to the output directory, for report.html to inline.
    chart_svg: Option<String>,
    on_start: Option<tokio::sync::oneshot::Sender<Started>>,
}

/// A short run id: 6 hex digits from the clock and the process id.
pub fn new_run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 20) ^ ((nanos >> 64) as u64);
    format!("{:06x}", (mixed ^ (mixed >> 24)) & 0xff_ffff)
}

fn namespace_name(run_id: &str, suffix: &str) -> String {
    format!("ctrlaudit-bench-{run_id}-{suffix}")
}

async fn interruptible<T>(
    int: &mut watch::Receiver<bool>,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    if *int.borrow() {
        return Err(Interrupted.into());
    }
    tokio::select! {
        r = fut => r,
        _ = int.wait_for(|v| *v) => Err(Interrupted.into()),
    }
}

/// Ctrl-C (SIGINT) and, on Unix, SIGTERM (what `kill`, a CI runner's timeout or Kubernetes send): both stop a
/// run the same way, so that nothing it created is left behind.
struct Interrupts {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Interrupts {
    fn new() -> Self {
        Self {
            // Without a SIGTERM handler (it could not be installed), SIGTERM ends the process as before.
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
        }
    }

    /// The next interrupt's name, or `None` when no signal can be received any more.
    async fn next(&mut self) -> Option<&'static str> {
        #[cfg(unix)]
        if let Some(term) = &mut self.term {
            return tokio::select! {
                r = tokio::signal::ctrl_c() => r.ok().map(|()| "interrupted"),
                s = term.recv() => s.map(|()| "terminated (SIGTERM)"),
            };
        }
        tokio::signal::ctrl_c().await.ok().map(|()| "interrupted")
    }
}

/// What a run tells an observer once its variants are running (`demo` starts `live` on it then).
#[derive(Debug, Clone)]
pub struct Started {
    pub run_id: String,
    pub variants: Vec<StartedVariant>,
}

/// One running variant: where its objects are and where its controller serves /metrics.
#[derive(Debug, Clone)]
pub struct StartedVariant {
    pub name: String,
    pub namespaces: Vec<String>,
    pub metrics_url: String,
}

/// Runs a plan end to end and returns its report (complete or not). Errors only when nothing could be
/// measured (unreachable cluster, missing permissions, a conflicting CRD).
pub async fn run(g: &ClusterArgs, plan: &Plan) -> Result<BenchReport> {
    run_observed(g, plan, None).await
}

/// [`run`], sending [`Started`] on `on_start` when the variants have started and the window begins.
pub async fn run_observed(
    g: &ClusterArgs,
    plan: &Plan,
    on_start: Option<tokio::sync::oneshot::Sender<Started>>,
) -> Result<BenchReport> {
    let config = g.config().await?;
    let url = config.cluster_url.to_string();
    let admin = client::build(&config, "kubectl-ctrlaudit/bench", &RestMetrics::default())?;
    let version = cluster::version(&admin, &url).await?;
    let crd_exists = cluster::crd_exists(&admin).await?;
    cluster::check_permissions(&admin, !crd_exists, plan.finalize_namespaces).await?;
    let run_id = new_run_id();
    let output_dir = plan
        .output_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("ctrlaudit-bench").join(&run_id));
    std::fs::create_dir_all(&output_dir)
        .with_context(|| format!("creating the output directory {}", output_dir.display()))?;
    let feature_gates = cluster::feature_gates(&admin)
        .await
        .into_iter()
        .filter(|(k, _)| k.contains("Watch") || k.contains("ConsistentList"))
        .collect();
    let mut st = State {
        run_id: run_id.clone(),
        namespaces: Vec::new(),
        crd: None,
        in_process: Vec::new(),
        children: Vec::new(),
        book: None,
        churn: None,
        chart_svg: None,
        on_start,
        report: BenchReport {
            run_id: run_id.clone(),
            title: plan.title.clone(),
            complete: true,
            started_at: jiff::Timestamp::now().to_string(),
            apiserver: ApiServer {
                url,
                version,
                feature_gates,
            },
            objects_per_variant: plan.objects,
            duration_s: plan.duration.as_secs_f64(),
            settle_s: plan.settle.as_secs_f64(),
            work_ms: plan.work.as_secs_f64() * 1000.0,
            churn_per_s: plan.churn,
            tenants: plan
                .variants
                .iter()
                .any(|v| v.tenant_design)
                .then_some(plan.tenants),
            output_dir: output_dir.display().to_string(),
            ..BenchReport::default()
        },
    };
    eprintln!(
        "run {run_id}: {} on {} ({}); output in {}",
        plan.title,
        st.report.apiserver.url,
        st.report.apiserver.version,
        output_dir.display()
    );
    let (int_tx, int_rx) = watch::channel(false);
    let (quit_tx, quit_rx) = tokio::sync::oneshot::channel::<()>();
    let cleanup_hint = cluster::cleanup_commands(&run_id);
    // Installed before the task starts, so that no signal falls between the two.
    let mut signals = Interrupts::new();
    let ctrlc = tokio::spawn(async move {
        if let Some(name) = signals.next().await {
            eprintln!(
                "\n{name}: stopping the variants and cleaning up (Ctrl-C again to quit at once)"
            );
            // The harness may already be finishing: then no one listens.
            let _ = int_tx.send(true);
            if signals.next().await.is_some() {
                eprintln!("quit without cleaning up; to remove what is left: {cleanup_hint}");
                let _ = quit_tx.send(());
            }
        }
    });
    let result = tokio::select! {
        r = measure_and_clean_up(&mut st, Setup { cluster: g, plan, config: &config, admin: &admin, output_dir: &output_dir }, int_rx) => r,
        // A second Ctrl-C drops the run where it stands; the binary exits right after.
        Ok(()) = quit_rx => Err(QuitWithoutCleanup.into()),
    };
    ctrlc.abort();
    result
}

/// What a run is given and does not change: its plan, where it connects and where it writes.
#[derive(Clone, Copy)]
struct Setup<'a> {
    cluster: &'a ClusterArgs,
    plan: &'a Plan,
    config: &'a kube::Config,
    admin: &'a Client,
    output_dir: &'a std::path::Path,
}

/// Measures, then removes what the run created (unless `--keep`), and writes report.json and report.html.
async fn measure_and_clean_up(
    st: &mut State,
    setup: Setup<'_>,
    int_rx: watch::Receiver<bool>,
) -> Result<BenchReport> {
    let Setup {
        plan,
        admin,
        output_dir,
        ..
    } = setup;
    let run_id = st.run_id.clone();
    let outcome = execute(st, setup, int_rx).await;
    let measured =
        !st.report.variants.is_empty() || st.report.ceiling.is_some() || st.report.speed.is_some();
    if let Err(e) = &outcome {
        st.report.complete = false;
        st.report.incomplete_reason = Some(format!("{e:#}"));
    }
    stop_all(st).await;
    let lost = st
        .report
        .incomplete_reason
        .as_deref()
        .is_some_and(|r| r.contains("API server"));
    let keep = plan.keep && outcome.is_ok() && st.report.complete;
    if keep && !st.namespaces.is_empty() {
        st.report.notes.push(format!(
            "--keep: the run's {} namespaces and their Widgets were left in place",
            st.namespaces.len()
        ));
        st.report.cleanup_command = Some(cluster::cleanup_commands(&run_id));
    } else if !st.namespaces.is_empty() || st.crd == Some(CrdOrigin::InstalledByRun) {
        eprintln!("cleaning up run {run_id}…");
        if lost {
            wait_for_apiserver(admin, Duration::from_secs(30)).await;
        }
        // A request to an API server that accepts connections but never answers would wait for the client's
        // read timeout (minutes): bound the whole cleanup instead.
        let report = tokio::time::timeout(
            CLEANUP_TIMEOUT,
            cluster::cleanup(
                admin,
                &st.namespaces,
                &run_id,
                st.crd,
                plan.finalize_namespaces,
                Duration::from_secs(15),
            ),
        )
        .await
        .unwrap_or_else(|_| cluster::CleanupReport {
            errors: vec![format!(
                "the API server did not let the cleanup finish within {}",
                duration::format(CLEANUP_TIMEOUT)
            )],
            ..cluster::CleanupReport::default()
        });
        if !report.errors.is_empty() {
            st.report.cleanup_command = Some(cluster::cleanup_commands(&run_id));
        }
        st.report.cleanup = Some(report);
    }
    let json = serde_json::to_string_pretty(&st.report).context("serialising the report")?;
    let path = output_dir.join("report.json");
    std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
    let path = output_dir.join("report.html");
    std::fs::write(&path, st.report.render_html(st.chart_svg.as_deref()))
        .with_context(|| format!("writing {}", path.display()))?;
    match outcome {
        Err(e) if !measured => Err(e),
        _ => Ok(std::mem::take(&mut st.report)),
    }
}

async fn wait_for_apiserver(client: &Client, patience: Duration) {
    let deadline = Instant::now() + patience;
    eprintln!(
        "waiting up to {} for the API server to come back…",
        duration::format(patience)
    );
    while Instant::now() < deadline {
        if tokio::time::timeout(Duration::from_secs(2), client.apiserver_version())
            .await
            .is_ok_and(|r| r.is_ok())
        {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn layout(plan: &Plan, run_id: &str) -> Vec<Layout> {
    plan.variants
        .iter()
        .map(|spec| {
            if spec.tenant_design {
                let t = u64::from(plan.tenants);
                Layout {
                    spec,
                    namespaces: (0..plan.tenants)
                        .map(|i| namespace_name(run_id, &format!("{}-{i}", spec.name)))
                        .collect(),
                    per_namespace: plan.objects.div_ceil(t).max(1),
                }
            } else {
                Layout {
                    spec,
                    namespaces: vec![namespace_name(run_id, spec.name)],
                    per_namespace: plan.objects,
                }
            }
        })
        .collect()
}

async fn create_namespaces(
    client: &Client,
    st: &mut State,
    names: &[(String, String)],
) -> Result<()> {
    // Recorded before they exist, so that a failure half way still cleans up the ones that do.
    st.namespaces.extend(names.iter().map(|(n, _)| n.clone()));
    let run_id = st.run_id.clone();
    futures::stream::iter(names.iter().map(|(ns, variant)| {
        let run_id = run_id.clone();
        async move { cluster::create_namespace(client, ns, &run_id, variant).await }
    }))
    .buffer_unordered(16)
    .collect::<Vec<_>>()
    .await
    .into_iter()
    .collect::<Result<Vec<()>>>()?;
    Ok(())
}

async fn execute(st: &mut State, setup: Setup<'_>, mut int: watch::Receiver<bool>) -> Result<()> {
    let Setup {
        cluster: g,
        plan,
        config,
        admin,
        output_dir,
    } = setup;
    let run_id = st.run_id.clone();
    st.crd = Some(interruptible(&mut int, cluster::ensure_crd(admin, &run_id)).await?);
    if !plan.probe.is_zero() {
        let ns = namespace_name(&run_id, "probe");
        interruptible(
            &mut int,
            create_namespaces(admin, st, &[(ns.clone(), "probe".into())]),
        )
        .await?;
        eprintln!(
            "probing the API server's write ceiling for {}…",
            duration::format(plan.probe)
        );
        let ceiling = interruptible(&mut int, probe::run(admin, &ns, &run_id, plan.probe)).await?;
        eprintln!("write ceiling: {:.0} writes/s", ceiling.per_second);
        st.report.ceiling = Some(ceiling);
    }
    st.report
        .files
        .extend(["report.json".into(), "report.html".into()]);
    match plan.kind {
        PlanKind::ProbeOnly => return Ok(()),
        PlanKind::Speed => return speed(st, g, plan, admin, &mut int).await,
        PlanKind::Variants => {}
    }
    let layouts = layout(plan, &run_id);
    let names: Vec<(String, String)> = layouts
        .iter()
        .flat_map(|l| {
            l.namespaces
                .iter()
                .map(|n| (n.clone(), l.spec.name.to_string()))
        })
        .collect();
    interruptible(&mut int, create_namespaces(admin, st, &names)).await?;
    if let Some((ns, _)) = names.first() {
        interruptible(&mut int, warm_up(admin, ns, &run_id)).await?;
    }
    let targets: Vec<Target> = layouts
        .iter()
        .flat_map(|l| {
            l.namespaces.iter().map(|n| Target {
                namespace: n.clone(),
                variant: l.spec.name.to_string(),
                count: l.per_namespace,
            })
        })
        .collect();
    let total: u64 = targets.iter().map(|t| t.count).sum();
    eprintln!(
        "creating {total} Widgets in {} namespaces ({CREATE_PARALLELISM} in flight)…",
        targets.len()
    );
    let creation = interruptible(
        &mut int,
        cluster::create_widgets(admin, &targets, &run_id, CREATE_PARALLELISM, |_| {}),
    )
    .await?;
    eprintln!(
        "created {} Widgets in {:.2}s ({:.0} objects/s)",
        creation.objects, creation.seconds, creation.per_second
    );
    st.report.creation = Some(creation);

    let t0 = Instant::now();
    let exe = child::exe()?;
    let mut watched = Vec::new();
    for l in &layouts {
        let addr = if l.spec.tenant_design {
            let selector = format!(
                "{RUN_LABEL}={run_id},{}={}",
                cluster::VARIANT_LABEL,
                l.spec.name
            );
            let c = interruptible(
                &mut int,
                child::spawn_design(&exe, g, l.spec.name, &l.namespaces, &selector, plan.work),
            )
            .await?;
            let addr = c.addr;
            st.children.push(c);
            addr
        } else {
            let (addr, v) = start_in_process(config, l, plan).await?;
            st.in_process.push(v);
            addr
        };
        watched.push(Watched {
            name: l.spec.name.to_string(),
            addr,
            namespaces: l.namespaces.clone(),
            expected: l.expected(),
        });
    }
    if let Some(tx) = st.on_start.take() {
        // An observer that went away is no reason to stop measuring.
        let _ = tx.send(Started {
            run_id: run_id.clone(),
            variants: watched
                .iter()
                .map(|w| StartedVariant {
                    name: w.name.clone(),
                    namespaces: w.namespaces.clone(),
                    metrics_url: format!("http://{}/metrics", w.addr),
                })
                .collect(),
        });
    }
    st.book = Some(Book::start(BookConfig {
        kube: config.clone(),
        run_id: run_id.clone(),
        variants: watched,
        output_dir: output_dir.to_path_buf(),
        duration: plan.duration,
        t0,
        settle_after: (!plan.settle.is_zero()).then_some(plan.duration),
    })?);
    if plan.churn > 0.0 {
        let namespaces: Vec<String> = layouts
            .iter()
            .filter(|l| !l.spec.tenant_design)
            .flat_map(|l| l.namespaces.clone())
            .collect();
        let hot = plan.objects.min(3);
        st.churn = Some(churn::start(
            admin.clone(),
            namespaces,
            hot,
            plan.churn,
            plan.duration.mul_f64(0.75),
        ));
    }
    let cpu0 = super::sysinfo::process_cpu();
    let mut settled_at = None;
    let stopped_early = {
        let book = st.book.as_mut().context("the bookkeeper is not running")?;
        tokio::select! {
            // With --settle the bookkeeper ends the run earlier, as soon as everything is at rest.
            _ = tokio::time::sleep(plan.duration + plan.settle) => None,
            _ = int.wait_for(|v| *v) => Some(format!(
                "interrupted (Ctrl-C) after {:.0}s of the {}s window",
                t0.elapsed().as_secs_f64(),
                plan.duration.as_secs()
            )),
            ev = book.events.recv() => match ev {
                Some(BookEvent::ApiServerLost(why)) => Some(format!(
                    "the API server went away after {:.0}s ({why}); figures cover the time before",
                    t0.elapsed().as_secs_f64()
                )),
                Some(BookEvent::AllSettled) => {
                    settled_at = Some(t0.elapsed());
                    None
                }
                None => Some("the bookkeeper stopped early".to_string()),
            },
        }
    };
    st.report.ended_s = t0.elapsed().as_secs_f64();
    if !plan.settle.is_zero() && stopped_early.is_none() {
        st.report.notes.push(match settled_at {
            Some(t) => format!(
                "every variant settled {:.1}s after the {} window (--settle {})",
                t.saturating_sub(plan.duration).as_secs_f64(),
                duration::format(plan.duration),
                duration::format(plan.settle)
            ),
            None => format!(
                "not every variant settled within --settle {} after the window",
                duration::format(plan.settle)
            ),
        });
    }
    if let Some((stop, task)) = st.churn.take() {
        let _ = stop.send(true);
        if let Ok(Ok(c)) = tokio::time::timeout(Duration::from_secs(5), task).await {
            st.report.notes.push(format!(
                "another writer (the harness) merge-patched spec.count of 3 objects per namespace during the first 3/4 of the window: {} writes accepted of {} sent, at most one in flight per object ({} arrivals skipped while that object's previous write had not returned)",
                c.accepted, c.sent, c.skipped
            ));
            st.report.churn = Some(c);
        }
    }
    // The bookkeeper's last scrape sees the variants still running: stop it first.
    let book = st.book.take().context("the bookkeeper is not running")?;
    let result = tokio::task::spawn_blocking(move || book.finish())
        .await
        .context("joining the bookkeeper")??;
    let process_cpu = match (cpu0, super::sysinfo::process_cpu()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a).as_secs_f64()),
        _ => None,
    };
    stop_all(st).await;
    // Ready at the end is what a LIST shows once the variants have stopped (what `kubectl get widgets` would
    // show): the watch behind the per-second series may still be catching up on a loaded machine.
    let listed = match cluster::ready_by_namespace(admin, &run_id).await {
        Ok(l) => Some(l),
        Err(e) => {
            st.report.notes.push(format!(
                "Ready at the end is the watch's last count: listing the Widgets failed ({e:#})"
            ));
            None
        }
    };

    let ceiling = st.report.ceiling.as_ref().map(|c| c.per_second);
    for l in &layouts {
        let rows = result
            .rows
            .get(l.spec.name)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let meta = Meta {
            name: l.spec.name.to_string(),
            rule: l.spec.rule.map(str::to_string),
            workers: match l.spec.workers {
                0 => "unbounded".into(),
                n if l.spec.tenant_design => format!("{n} per controller"),
                n => n.to_string(),
            },
            expected: l.expected(),
            tenants: l.spec.tenant_design.then_some(u64::from(plan.tenants)),
            ceiling_per_s: ceiling,
            scrape_errors: result.scrape_errors.get(l.spec.name).copied().unwrap_or(0),
        };
        let mut s = summary::summarise(&meta, rows);
        if let Some(listed) = &listed {
            let ready: u64 = l
                .namespaces
                .iter()
                .filter_map(|ns| listed.get(ns))
                .map(|(ready, _)| ready)
                .sum();
            if ready != s.ready {
                st.report.notes.push(format!(
                    "{}: {ready} Ready by a LIST after the variants stopped, {} by the watch's last count",
                    s.name, s.ready
                ));
            }
            s.ready = ready;
        }
        st.report.variants.push(s);
    }
    let scrapes: u64 = result.rows.values().map(|r| r.len() as u64).sum();
    let cpu_s = result.cpu.map_or(0.0, |c| c.as_secs_f64());
    let wall_s = result.wall.as_secs_f64();
    st.report.bookkeeping = Some(Bookkeeping {
        cpu_s,
        wall_s,
        cpu_percent_of_one_core: if wall_s > 0.0 {
            100.0 * cpu_s / wall_s
        } else {
            0.0
        },
        process_cpu_s: process_cpu,
        scrapes,
    });
    st.report.files.extend(
        result
            .csv_files
            .iter()
            .filter_map(|p| p.file_name().map(|f| f.to_string_lossy().into_owned())),
    );
    let chart_name = format!("{}.svg", plan.slug);
    let lines: Vec<chart::Line<'_>> = layouts
        .iter()
        .filter_map(|l| {
            result.rows.get(l.spec.name).map(|rows| chart::Line {
                name: l.spec.name,
                rows,
                anti_pattern: l.spec.rule.is_some(),
            })
        })
        .collect();
    let title = format!(
        "kubectl ctrlaudit bench: {} (N={})",
        plan.title, plan.objects
    );
    match chart::write(&output_dir.join(&chart_name), &title, &lines) {
        Ok(svg) => {
            st.report.files.push(chart_name);
            st.chart_svg = Some(svg);
        }
        Err(e) => st.report.notes.push(format!("no chart: {e:#}")),
    }
    if let Some(reason) = stopped_early {
        st.report.complete = false;
        st.report.incomplete_reason = Some(reason);
    }
    Ok(())
}

/// A dry-run create, so that the creation rate is not charged with the API server's first use of a newly
/// installed CRD (about 2 s on testenv).
async fn warm_up(client: &Client, namespace: &str, run_id: &str) -> Result<()> {
    let api: Api<Widget> = Api::namespaced(client.clone(), namespace);
    let pp = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let start = Instant::now();
    api.create(&pp, &cluster::widget(0, run_id, "warm-up"))
        .await
        .map_err(|e| cluster::explain(e, "create", "widgets"))?;
    let took = start.elapsed();
    if took > Duration::from_millis(500) {
        eprintln!(
            "the API server took {} to serve its first Widget create (a newly installed CRD); not counted",
            duration::format(took)
        );
    }
    Ok(())
}

async fn start_in_process(
    config: &kube::Config,
    l: &Layout,
    plan: &Plan,
) -> Result<(std::net::SocketAddr, InProcess)> {
    let rest = RestMetrics::default();
    let client = client::build(config, &client::variant_user_agent(l.spec.name), &rest)?;
    let (ctx, stop) = VariantCtx::new(
        client,
        rest,
        VariantOptions {
            controller: l.spec.name.to_string(),
            work: plan.work,
            streaming_lists: l.spec.streaming_lists,
            label_selector: None,
            process_metrics: false,
            workers: l.spec.workers,
        },
    );
    let render_ctx = ctx.clone();
    let (addr, server) = endpoint::serve(Arc::new(move || render_ctx.encode())).await?;
    let task = tokio::spawn(variants::run(l.spec.code, l.namespaces.clone(), ctx));
    Ok((addr, InProcess { stop, task, server }))
}

/// Stops whatever still runs: churn, bookkeeper, in-process variants (gracefully, then aborted), children.
async fn stop_all(st: &mut State) {
    if let Some((stop, task)) = st.churn.take() {
        let _ = stop.send(true);
        task.abort();
    }
    if let Some(book) = st.book.take() {
        // Dropping the bookkeeper's stop sender ends its loop; its figures are not needed any more.
        let _ = tokio::task::spawn_blocking(move || book.finish()).await;
    }
    for v in &mut st.in_process {
        v.stop.stop();
    }
    for v in std::mem::take(&mut st.in_process) {
        let abort = v.task.abort_handle();
        if tokio::time::timeout(Duration::from_secs(10), v.task)
            .await
            .is_err()
        {
            abort.abort();
        }
        v.server.abort();
    }
    let children = std::mem::take(&mut st.children);
    futures::future::join_all(children.into_iter().map(ChildVariant::stop)).await;
}

/// `--experiment speed`: N Widgets three ways, side by side on the same API server.
async fn speed(
    st: &mut State,
    g: &ClusterArgs,
    plan: &Plan,
    admin: &Client,
    int: &mut watch::Receiver<bool>,
) -> Result<()> {
    let run_id = st.run_id.clone();
    let n = plan.objects;
    let kubectl = child::find_kubectl();
    let mut suffixes = vec!["speed-harness", "speed-sequential", "speed-process"];
    if kubectl.is_some() {
        suffixes.push("speed-kubectl");
    }
    let names: Vec<(String, String)> = suffixes
        .iter()
        .map(|s| (namespace_name(&run_id, s), (*s).to_string()))
        .collect();
    interruptible(int, create_namespaces(admin, st, &names)).await?;
    interruptible(int, warm_up(admin, &names[0].0, &run_id)).await?;
    eprintln!("speed 1: {n} Widgets with the harness ({CREATE_PARALLELISM} in flight)…");
    let target = Target {
        namespace: names[0].0.clone(),
        variant: names[0].1.clone(),
        count: n,
    };
    let h = interruptible(
        int,
        cluster::create_widgets(admin, &[target], &run_id, CREATE_PARALLELISM, |_| {}),
    )
    .await?;
    eprintln!("speed 2: {n} Widgets one after another in this process…");
    let seq_ns = names[1].0.clone();
    let seq = interruptible(int, async {
        let api: Api<Widget> = Api::namespaced(admin.clone(), &seq_ns);
        let start = Instant::now();
        for i in 0..n {
            let w = cluster::widget(i, &run_id, "speed-sequential");
            // ctrlaudit: allow(CA304) reason: the sequential loop is the baseline this experiment measures
            api.create(&PostParams::default(), &w)
                .await
                .map_err(|e| cluster::explain(e, "create", "widgets"))?;
        }
        Ok(start.elapsed().as_secs_f64())
    })
    .await?;
    eprintln!(
        "speed 3: {n} Widgets with one process each (GET + POST, like `kubectl apply` in a loop)…"
    );
    let exe = child::exe()?;
    let proc_ns = names[2].0.clone();
    let per_process = interruptible(int, async {
        let start = Instant::now();
        for i in 0..n {
            child::create_one_process(&exe, g, &proc_ns, &format!("w-{i:05}"), &run_id).await?;
            if (i + 1) % 100 == 0 {
                eprintln!("  {} / {n}", i + 1);
            }
        }
        Ok(start.elapsed().as_secs_f64())
    })
    .await?;
    let kubectl_seconds = match &kubectl {
        Some(k) => {
            eprintln!(
                "speed 4: {n} Widgets with `{} apply -f -`, one invocation each (the seed's loop)…",
                k.display()
            );
            let ns = names[3].0.clone();
            Some(
                interruptible(int, async {
                    let start = Instant::now();
                    for i in 0..n {
                        child::kubectl_apply(k, g, &ns, &format!("w-{i:05}"), &run_id).await?;
                        if (i + 1) % 100 == 0 {
                            eprintln!("  {} / {n}", i + 1);
                        }
                    }
                    Ok(start.elapsed().as_secs_f64())
                })
                .await?,
            )
        }
        None => {
            st.report.notes.push(
                "no kubectl found (PATH or CTRLAUDIT_KUBECTL): the seed's loop is emulated by one create-one process per object"
                    .into(),
            );
            None
        }
    };
    let method = |description: &str, seconds: f64| Method {
        description: description.to_string(),
        objects: n,
        seconds,
        per_second: n as f64 / seconds.max(1e-9),
    };
    let harness = method(
        &format!("harness: bounded parallel creates ({CREATE_PARALLELISM} in flight)"),
        h.seconds,
    );
    let process = method(
        "create-one: one process per object, GET + POST (a lower bound of a kubectl loop)",
        per_process,
    );
    let kubectl_apply = kubectl_seconds.map(|s| {
        method(
            "kubectl apply -f -, one process per object (the seed's loop)",
            s,
        )
    });
    let (against, slowest) = match &kubectl_apply {
        Some(k) => ("the kubectl apply loop", k.per_second),
        None => ("one process per object", process.per_second),
    };
    st.report.speed = Some(Speed {
        objects: n,
        ratio: harness.per_second / slowest.max(1e-9),
        ratio_against: against.to_string(),
        sequential_in_process: method("sequential creates in one process", seq),
        harness,
        process_per_object: process,
        kubectl_apply,
    });
    st.report.creation = Some(h);
    Ok(())
}

/// A run's error as a failure: a usage error exits 2, anything about the cluster 3.
pub fn failure(e: anyhow::Error) -> Failure {
    // A missing or broken kubeconfig, or a context it lacks, is the user's input, as in live.
    if e.downcast_ref::<super::args::UsageError>().is_some()
        || e.downcast_ref::<crate::connect::ConfigError>().is_some()
    {
        Failure::usage(e)
    } else {
        Failure::no_evidence(e)
    }
}

/// Used by `--cleanup`: connects and removes a run's leftovers.
pub async fn cleanup_only(
    g: &ClusterArgs,
    run_id: &str,
    finalize: bool,
) -> Result<cluster::CleanupReport> {
    if run_id.is_empty() || !run_id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(anyhow!(super::args::UsageError(format!(
            "--cleanup {run_id:?}: expected a run id such as 3f9a1c (printed at the start of each run)"
        ))));
    }
    let config = g.config().await?;
    let url = config.cluster_url.to_string();
    let admin = client::build(&config, "kubectl-ctrlaudit/bench", &RestMetrics::default())?;
    cluster::version(&admin, &url).await?;
    cluster::cleanup_run(&admin, run_id, finalize).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_short_hex() {
        let id = new_run_id();
        assert_eq!(id.len(), 6);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(namespace_name(&id, "bad-annotation-loop-single").len() <= 63);
        assert!(namespace_name(&id, "per-tenant-1999").len() <= 63);
    }
}
