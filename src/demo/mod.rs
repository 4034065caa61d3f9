//! `kubectl ctrlaudit demo`: the one-minute tour for someone without a cluster at hand. It starts the embedded
//! control plane (`control_plane`), runs bench's CA202 pair (a controller that writes a timestamp annotation on
//! every reconcile, and the good one), watches them with live (read-only, audit log on) while they run, and
//! prints what live found beside what bench measured (`side_by_side`), then stops everything it started.
//!
//! It sits above the lenses, like `cli`: it composes bench and live through their library entry points and
//! keeps their layers apart.

pub mod control_plane;
pub mod envtest;
pub mod side_by_side;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use clap::{Args, Parser};

use crate::bench::harness::{self, Started};
use crate::bench::report::BenchReport;
use crate::config::Config;
use crate::connect::ClusterArgs;
use crate::exit::{Failure, Outcome, Status};
use crate::finding::Finding;
use crate::live::{self, LiveArgs};
use crate::output;
use crate::policy::{Policy, PolicyArgs};
use crate::report::{Format, Note, OutputArgs};
use control_plane::ControlPlane;

/// The rule the demo shows: the loop that no other tool names, found live and priced by bench.
const RULE: &str = crate::rules::CA202.code;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Run on the cluster of the current kubeconfig context (or --kubeconfig/--context) instead of starting the
    /// embedded control plane; needs rights to create namespaces and Widgets (and the Widget CRD if absent).
    #[arg(long)]
    pub use_current_context: bool,
    /// How long the two controllers run while live watches them.
    #[arg(long, default_value = "30s", value_parser = crate::duration::parse_arg)]
    pub duration: Duration,
    /// Widgets per controller.
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub objects: u64,
    /// Where report.html (findings and costs side by side), the bench's CSVs and chart go (default:
    /// ./ctrlaudit-demo/<run id>).
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
}

/// What one tour produced.
#[derive(Debug, serde::Serialize)]
pub struct Tour {
    pub cluster: String,
    pub bench: BenchReport,
    pub findings: Vec<Finding>,
    pub notes: Vec<Note>,
    /// The live window, in seconds.
    pub live_window_s: f64,
    pub report_html: Option<String>,
}

/// Runs `kubectl ctrlaudit demo`.
pub fn run(g: &ClusterArgs, out: &OutputArgs, a: &DemoArgs) -> Outcome {
    let json = match out.format("demo") {
        Format::Table => false,
        Format::Json => true,
        other => {
            return Err(Failure::usage(anyhow!(
                "demo prints a table or JSON (-o json), not {other}"
            )));
        }
    };
    if a.duration < Duration::from_secs(10) {
        return Err(Failure::usage(anyhow!(
            "--duration {} is too short for a loop to show: at least 10s",
            crate::duration::format(a.duration)
        )));
    }
    if !(1..=2000).contains(&a.objects) {
        return Err(Failure::usage(anyhow!(
            "--objects {}: between 1 and 2000",
            a.objects
        )));
    }
    let plane = if a.use_current_context {
        None
    } else {
        Some(ControlPlane::start().map_err(Failure::no_evidence)?)
    };
    let cluster = match &plane {
        // The embedded plane's own admin: --as and --as-group are for the user's cluster.
        Some(p) => ClusterArgs {
            kubeconfig: Some(p.kubeconfig.clone()),
            context: None,
            namespace: None,
            as_user: None,
            as_groups: Vec::new(),
            ..g.clone()
        },
        None => g.clone(),
    };
    let label = match &plane {
        Some(p) => format!("the embedded control plane at {}", p.url),
        None => "the current context's cluster".to_string(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let audit_log = plane.as_ref().and_then(|p| p.audit_log.clone());
    let result = rt.block_on(tour(&cluster, audit_log, a, label));
    rt.shutdown_timeout(Duration::from_secs(2));
    // Stopped before the report is printed, so that "nothing left running" is true when it is read.
    let stopped = plane.map(ControlPlane::stop);
    let tour = result.map_err(harness::failure)?;
    if json {
        output::println(&serde_json::to_string_pretty(&tour).context("serialising")?)
            .context("writing to stdout")?;
    } else {
        output::print(&side_by_side::render(&tour)).context("writing to stdout")?;
    }
    match stopped {
        Some(Ok(())) => {
            eprintln!("demo: control plane stopped; nothing it started is left running")
        }
        Some(Err(e)) => eprintln!("demo: {e:#}"),
        None => {}
    }
    Ok(if tour.bench.complete {
        Status::Clean
    } else {
        Status::NoEvidence
    })
}

/// bench's argument parser, so that the demo's run is exactly a `bench` command line (validated the same way).
#[derive(Debug, Parser)]
struct BenchLine {
    #[command(flatten)]
    bench: crate::bench::BenchArgs,
}

#[derive(Debug, Parser)]
struct LiveLine {
    #[command(flatten)]
    live: LiveArgs,
}

/// The bench command line the demo runs.
fn bench_args(a: &DemoArgs, embedded: bool, output_dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = [
        "bench",
        "--rule",
        RULE,
        "--probe",
        "3s",
        "--objects",
        &a.objects.to_string(),
        "--duration",
        &format!("{}ms", a.duration.as_millis()),
        "--output-dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(output_dir.display().to_string());
    // The embedded control plane runs no namespace controller: deleted namespaces would stay Terminating.
    if embedded {
        v.push("--finalize-namespaces".into());
    }
    v
}

/// The live command line: the run's Widgets in every namespace, the variants' own /metrics, the audit log when
/// there is one, for `window`.
fn live_args(started: &Started, audit_log: Option<&PathBuf>, window: Duration) -> Vec<String> {
    let mut v: Vec<String> = [
        "live",
        "--resource",
        "widgets.bench.ctrlaudit.io",
        "--no-progress",
        "--duration",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(format!("{}ms", window.as_millis()));
    for variant in &started.variants {
        v.push("--metrics-url".into());
        v.push(variant.metrics_url.clone());
    }
    if let Some(p) = audit_log {
        v.push("--audit-log".into());
        v.push(p.display().to_string());
    }
    v
}

async fn tour(
    cluster: &ClusterArgs,
    audit_log: Option<PathBuf>,
    a: &DemoArgs,
    label: String,
) -> Result<Tour> {
    let output_dir = a
        .output_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("ctrlaudit-demo").join(harness::new_run_id()));
    let plan = BenchLine::try_parse_from(bench_args(a, audit_log.is_some(), &output_dir))
        .context("the demo's bench command line")?
        .bench
        .plan()?;
    // live starts when the controllers do and ends a little before their window, so that it never watches the
    // cleanup.
    let window = a.duration.saturating_sub(Duration::from_secs(3));
    let (tx, rx) = tokio::sync::oneshot::channel::<Started>();
    let live_cluster = cluster.clone();
    let live_task = tokio::spawn(async move {
        let started = rx.await.ok()?;
        Some(watch(&live_cluster, &started, audit_log.as_ref(), window).await)
    });
    let bench = harness::run_observed(cluster, &plan, Some(tx)).await;
    if bench.as_ref().map_or(true, |r| !r.complete) {
        live_task.abort();
    }
    let bench = bench?;
    let (findings, mut notes, live_window_s) = match live_task.await {
        Ok(Some(Ok(o))) => {
            let window = o.snapshot.window.secs();
            (o.findings, o.snapshot.notes, window)
        }
        Ok(Some(Err(e))) => (
            Vec::new(),
            vec![Note {
                subject: "live".into(),
                message: format!("{e:#}"),
            }],
            0.0,
        ),
        // Never started (the bench stopped before its controllers ran) or aborted with it.
        _ => (Vec::new(), Vec::new(), 0.0),
    };
    notes.sort_by(|x, y| x.subject.cmp(&y.subject));
    let mut tour = Tour {
        cluster: label,
        bench,
        findings,
        notes,
        live_window_s,
        report_html: None,
    };
    let path = output_dir.join("demo.html");
    let chart = tour
        .bench
        .files
        .iter()
        .find(|f| f.ends_with(".svg"))
        .and_then(|f| std::fs::read_to_string(output_dir.join(f)).ok());
    std::fs::write(&path, side_by_side::html(&tour, chart.as_deref()))
        .with_context(|| format!("writing {}", path.display()))?;
    tour.report_html = Some(path.display().to_string());
    Ok(tour)
}

/// live over the started run, as the read-only lens would run it from the command line.
async fn watch(
    cluster: &ClusterArgs,
    started: &Started,
    audit_log: Option<&PathBuf>,
    window: Duration,
) -> Result<live::Observed> {
    let args = LiveLine::try_parse_from(live_args(started, audit_log, window))
        .context("the demo's live command line")?
        .live;
    let cfg = Config::default();
    let policy = Policy::new(&cfg, &PolicyArgs::default())?;
    let client = cluster.client(live::USER_AGENT).await?;
    live::observe(Some(client), cluster, true, &args, &cfg, &policy).await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::bench::harness::StartedVariant;

    fn demo_args() -> DemoArgs {
        DemoArgs {
            use_current_context: false,
            duration: Duration::from_secs(30),
            objects: 30,
            output_dir: None,
        }
    }

    #[test]
    fn the_bench_line_is_a_valid_bench_command_for_the_rule() {
        let line = bench_args(&demo_args(), true, std::path::Path::new("/tmp/x"));
        let plan = BenchLine::try_parse_from(&line)
            .unwrap()
            .bench
            .plan()
            .unwrap();
        let names: Vec<&str> = plan.variants.iter().map(|v| v.name).collect();
        assert_eq!(names, ["bad-annotation-loop", "good"]);
        assert_eq!(plan.objects, 30);
        assert_eq!(plan.duration, Duration::from_secs(30));
        assert!(plan.finalize_namespaces);
        let line = bench_args(&demo_args(), false, std::path::Path::new("/tmp/x"));
        assert!(!line.iter().any(|a| a == "--finalize-namespaces"));
    }

    #[test]
    fn the_live_line_watches_the_widgets_with_the_variants_metrics_and_the_audit_log() {
        let started = Started {
            run_id: "abc123".into(),
            variants: vec![StartedVariant {
                name: "good".into(),
                namespaces: vec!["ctrlaudit-bench-abc123-good".into()],
                metrics_url: "http://127.0.0.1:4000/metrics".into(),
            }],
        };
        let audit = PathBuf::from("/tmp/audit.log");
        let line = live_args(&started, Some(&audit), Duration::from_secs(27));
        let args = LiveLine::try_parse_from(&line).unwrap().live;
        assert_eq!(args.resources, ["widgets.bench.ctrlaudit.io"]);
        assert_eq!(args.metrics_urls, ["http://127.0.0.1:4000/metrics"]);
        assert_eq!(args.audit_log, Some(audit));
        assert_eq!(args.duration, Duration::from_secs(27));
        assert!(args.no_progress);
    }
}
