//! Command-line definitions (clap) and the glue that runs a command and maps it to an exit code.

use crate::config::Config;
use crate::finding::Severity;
use crate::output;
use crate::report::{self, Format, Report};
use crate::rules::{self, RULES};
use crate::scan::{self, ScanOptions};
use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;

/// Exit codes, as documented: 0 clean, 1 findings at or above --fail-on, 2 usage or input
/// error, 3 evidence could not be gathered.
pub mod exit {
    pub const CLEAN: u8 = 0;
    pub const FINDINGS: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const NO_EVIDENCE: u8 = 3;
}

#[derive(Debug, Parser)]
#[command(
    name = "kubectl-ctrlaudit",
    bin_name = "kubectl ctrlaudit",
    version,
    about = "Find Kubernetes controller anti-patterns: in source (scan), on a cluster (live), and what they cost (bench)",
    after_help = "Examples:\n  kubectl ctrlaudit scan ./src\n  kubectl ctrlaudit scan . -o sarif --output-file junit=ctrlaudit.xml\n  kubectl ctrlaudit rules\n  kubectl ctrlaudit rules CA202\n\nExit codes: 0 nothing at or above --fail-on, 1 findings, 2 usage or input error, 3 evidence unavailable."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// List all namespaces (kubectl style; for commands that talk to a cluster).
    #[arg(short = 'A', long = "all-namespaces")]
    pub all_namespaces: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// kubectl-style flags, accepted before or after the command.
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// Namespace (for commands that talk to a cluster).
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Path to the kubeconfig file.
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Output format on stdout.
    #[arg(short = 'o', long = "output", global = true, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Also write FORMAT to PATH (repeatable), e.g. `--output-file sarif=ctrlaudit.sarif`.
    #[arg(long = "output-file", global = true, value_name = "FORMAT=PATH")]
    pub output_files: Vec<String>,
    /// Exit 1 when a finding is at or above this severity.
    #[arg(long, global = true, value_enum, default_value_t = FailOn::Warning)]
    pub fail_on: FailOn,
    /// Colour in the table output.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
    Never,
}

impl FailOn {
    pub fn trips(self, s: Severity) -> bool {
        match self {
            FailOn::Error => s >= Severity::Error,
            FailOn::Warning => s >= Severity::Warning,
            FailOn::Info => true,
            FailOn::Never => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Static analysis of Rust (kube-rs) controller source; no cluster needed.
    #[command(
        after_help = "Examples:\n  kubectl ctrlaudit scan ./src\n  kubectl ctrlaudit scan . -D CA201 -A CA304\n  kubectl ctrlaudit scan . --write-baseline .ctrlaudit-baseline.json\n  kubectl ctrlaudit scan . --baseline .ctrlaudit-baseline.json -o github\n  kubectl ctrlaudit scan . -o sarif > ctrlaudit.sarif\n\nSuppress one finding with `// ctrlaudit: allow(CA203) reason: …` on its line or the line above."
    )]
    Scan(ScanArgs),
    /// The rule catalogue, or one rule's documentation.
    #[command(
        after_help = "Examples:\n  kubectl ctrlaudit rules\n  kubectl ctrlaudit rules CA202\n  kubectl ctrlaudit rules volatile-value-written-every-reconcile"
    )]
    Rules(RulesArgs),
    /// Watch a running cluster (read-only) for a window and report anti-patterns with evidence, naming the controller.
    #[command(
        after_help = "Examples:\n  kubectl ctrlaudit live -n shop --duration 2m\n  kubectl ctrlaudit live -A --resource widgets.bench.ctrlaudit.io\n  kubectl ctrlaudit live -n shop --controller-pod shop/widget-operator-7d9f --metrics-port 8080\n  kubectl ctrlaudit live -n shop -l app=widget-operator -o json\n  kubectl ctrlaudit live -n shop --metrics-url http://127.0.0.1:8080/metrics --record ./incident-42\n  kubectl ctrlaudit live --replay ./incident-42\n  kubectl ctrlaudit live --offline --audit-log /var/log/kubernetes/audit.log\n\nRead-only: list, watch and get, plus GET /metrics; never a write, never a Secret. What could not be observed\nis printed as notes; exit 3 when nothing at all could be observed."
    )]
    Live(crate::live::LiveArgs),
    /// Run built-in good/bad controllers against the cluster side by side and measure what each anti-pattern costs.
    #[command(
        about = "Run built-in good/bad controllers against the cluster side by side and measure what each anti-pattern costs",
        after_help = "Examples:\n  kubectl ctrlaudit bench --list\n  kubectl ctrlaudit bench --rule CA202\n  kubectl ctrlaudit bench --experiment 1 --objects 200 --duration 60s\n  kubectl ctrlaudit bench --variants good,bad-poll --work 20ms -o json --output-dir ./bench-out\n  kubectl ctrlaudit bench --experiment tenants --tenants 50\n  kubectl ctrlaudit bench --experiment speed --objects 1000\n  kubectl ctrlaudit bench --cleanup 3f9a1c\n\nWrites only to namespaces it creates (labelled app.kubernetes.io/managed-by=kubectl-ctrlaudit) and the Widget\nCRD if absent; deletes them at the end, on Ctrl-C and on errors. CSVs, an SVG chart and report.json go to\n--output-dir. Exit 0 a complete run, 2 bad arguments, 3 the cluster could not be measured or the run was cut short."
    )]
    Bench(crate::bench::BenchArgs),
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Files or directories to scan (default: the current directory).
    pub paths: Vec<PathBuf>,
    /// Treat CODE as an error (repeatable, or comma-separated).
    #[arg(short = 'D', long = "deny", value_name = "CODE", value_delimiter = ',')]
    pub deny: Vec<String>,
    /// Treat CODE as a warning.
    #[arg(short = 'W', long = "warn", value_name = "CODE", value_delimiter = ',')]
    pub warn: Vec<String>,
    /// Turn CODE off.
    #[arg(
        short = 'A',
        long = "allow",
        value_name = "CODE",
        value_delimiter = ','
    )]
    pub allow: Vec<String>,
    /// Configuration file (default: ctrlaudit.toml found upward from the first path).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Report only findings that are not in this baseline.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write the current findings as a baseline to FILE and exit 0.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
}

#[derive(Debug, Args)]
pub struct RulesArgs {
    /// A rule code (CA202) or name; without it, the catalogue.
    pub code: Option<String>,
}

/// Runs the parsed command line; returns the exit code.
pub fn run(cli: Cli) -> Result<u8> {
    match &cli.command {
        Command::Scan(a) => run_scan(&cli.global, a),
        Command::Rules(a) => run_rules(&cli.global, a),
        Command::Live(a) => crate::live::run(&cli.global, cli.all_namespaces, a),
        Command::Bench(a) => crate::bench::run(&cli.global, a),
    }
}

fn overrides(a: &ScanArgs) -> Result<BTreeMap<String, Option<Severity>>> {
    let mut out = BTreeMap::new();
    for (codes, sev) in [
        (&a.deny, Some(Severity::Error)),
        (&a.warn, Some(Severity::Warning)),
        (&a.allow, None),
    ] {
        for c in codes {
            let rule = rules::find(c.trim())
                .with_context(|| format!("unknown rule {c:?} (see `kubectl ctrlaudit rules`)"))?;
            out.insert(rule.code.to_string(), sev);
        }
    }
    Ok(out)
}

fn use_color(c: Color) -> bool {
    match c {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    }
}

fn run_scan(g: &GlobalArgs, a: &ScanArgs) -> Result<u8> {
    let paths = if a.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        a.paths.clone()
    };
    let outputs = report::output_files(&g.output_files)?;
    let overrides = overrides(a)?;
    let config = match &a.config {
        Some(p) => Config::load(p)?,
        None => Config::discover(&paths[0])?,
    };
    let opts = ScanOptions {
        paths,
        config,
        overrides,
        threads: a.threads,
    };
    let mut result = scan::scan(&opts)?;
    if let Some(path) = &a.write_baseline {
        scan::baseline::write(path, &result.findings)?;
        eprintln!(
            "wrote {} findings to baseline {}",
            result.findings.len(),
            path.display()
        );
        return Ok(exit::CLEAN);
    }
    if let Some(path) = &a.baseline {
        let (kept, absorbed) = scan::baseline::filter(path, std::mem::take(&mut result.findings))?;
        result.findings = kept;
        if absorbed > 0 {
            result.notes.push(report::Note {
                subject: path.display().to_string(),
                message: format!("{absorbed} findings already in the baseline were not reported"),
            });
        }
    }
    let stats = result.stats.as_pairs();
    emit(g, "scan", &result.findings, &result.notes, &stats, &outputs)?;
    let trips = result.findings.iter().any(|f| g.fail_on.trips(f.severity));
    Ok(if trips { exit::FINDINGS } else { exit::CLEAN })
}

/// Renders to stdout in `-o` and to each `--output-file`.
pub fn emit(
    g: &GlobalArgs,
    command: &str,
    findings: &[crate::finding::Finding],
    notes: &[report::Note],
    stats: &[(String, String)],
    outputs: &[(Format, PathBuf)],
) -> Result<()> {
    let mut report = Report {
        command,
        findings,
        notes,
        stats,
        color: use_color(g.color),
    };
    let text = report::render(g.output, &report)?;
    output::print(&text).context("writing the report to stdout")?;
    report.color = false;
    for (format, path) in outputs {
        let text = report::render(*format, &report)?;
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

fn run_rules(g: &GlobalArgs, a: &RulesArgs) -> Result<u8> {
    match &a.code {
        Some(code) => {
            let rule = rules::find(code).with_context(|| {
                format!("unknown rule {code:?} (see `kubectl ctrlaudit rules`)")
            })?;
            match g.output {
                Format::Json => {
                    output::println(&serde_json::to_string_pretty(&rule_json(rule))?)?;
                }
                _ => output::print(rule.doc())?,
            }
        }
        None => match g.output {
            Format::Json => {
                let all: Vec<_> = RULES.iter().map(rule_json).collect();
                output::println(&serde_json::to_string_pretty(&all)?)?;
            }
            _ => output::print(&rules_table())?,
        },
    }
    Ok(exit::CLEAN)
}

fn rule_json(r: &rules::Rule) -> serde_json::Value {
    serde_json::json!({
        "code": r.code,
        "name": r.name,
        "summary": r.summary,
        "severity": r.default_severity,
        "lenses": r.lenses,
        "bench_pair": r.bench_pair,
        "origin": r.origin,
        "doc": r.doc(),
    })
}

/// The catalogue as a table.
pub fn rules_table() -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(140)
        .set_header([
            "code", "name", "severity", "scan", "live", "bench", "summary",
        ]);
    for r in RULES {
        let mark = |l| if r.has_lens(l) { "✔" } else { "" };
        t.add_row([
            r.code,
            r.name,
            r.default_severity.as_str(),
            mark(crate::finding::Lens::Scan),
            mark(crate::finding::Lens::Live),
            r.bench_pair.map_or("", |_| "✔"),
            r.summary,
        ]);
    }
    format!("{t}\nShow one rule: kubectl ctrlaudit rules CODE\n")
}
