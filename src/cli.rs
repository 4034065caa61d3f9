//! Command-line definitions (clap) and the dispatch from a parsed command line to the command that runs it.

use crate::connect::ClusterArgs;
use crate::exit::{Outcome, Status};
use crate::output;
use crate::report::{Format, OutputArgs};
use crate::rules::{self, RULES};
use anyhow::Context;
use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "kubectl-ctrlaudit",
    bin_name = "kubectl ctrlaudit",
    version = concat!(
        env!("CARGO_PKG_VERSION"),
        " (",
        env!("CTRLAUDIT_COMMIT"),
        " ",
        env!("CTRLAUDIT_COMMIT_DATE"),
        ", Kubernetes API ",
        env!("CTRLAUDIT_K8S_API"),
        ")"
    ),
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

/// The flags every command accepts, before or after the command.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Static analysis of controller source, Rust (kube-rs) and Go (controller-runtime, client-go); no cluster
    /// needed.
    #[command(
        after_help = "Examples:\n  kubectl ctrlaudit scan ./src\n  kubectl ctrlaudit scan . -D CA201 --allow CA304\n  kubectl ctrlaudit scan . --write-baseline .ctrlaudit-baseline.json\n  kubectl ctrlaudit scan . --baseline .ctrlaudit-baseline.json -o github\n  kubectl ctrlaudit scan . -o sarif > ctrlaudit.sarif\n\nSuppress one finding with `// ctrlaudit: allow(CA203) reason: …` on its line or the line above."
    )]
    Scan(crate::scan::command::ScanArgs),
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
    /// The one-minute tour, no cluster needed: a looping controller beside a good one, found by live, priced by bench.
    #[command(
        after_help = "Examples:\n  kubectl ctrlaudit demo\n  kubectl ctrlaudit demo --duration 60s --objects 100\n  kubectl ctrlaudit demo --use-current-context\n\nStarts its own kube-apiserver and etcd on loopback ports (built from the Go module proxy on first use, a few\nminutes with Go >= 1.25, then cached in ~/.cache/kubectl-ctrlaudit/testenv), runs bench's CA202 pair for\n--duration while live watches them, prints what live found beside what bench measured, writes demo.html, and\nstops everything it started. Exit 0 when the run completed, 3 when it could not."
    )]
    Demo(crate::demo::DemoArgs),
    /// Print the shell completion script for SHELL (kubectl-ctrlaudit's own command name).
    #[command(
        after_help = "Examples:\n  kubectl-ctrlaudit completions bash > ~/.local/share/bash-completion/completions/kubectl-ctrlaudit\n  kubectl-ctrlaudit completions zsh > \"${fpath[1]}/_kubectl-ctrlaudit\"\n  kubectl-ctrlaudit completions fish > ~/.config/fish/completions/kubectl-ctrlaudit.fish"
    )]
    Completions(CompletionsArgs),
    /// Print a man page (roff): the command's, or a subcommand's (`man scan` is kubectl-ctrlaudit-scan(1)).
    #[command(
        after_help = "Examples:\n  kubectl-ctrlaudit man | man -l -\n  kubectl-ctrlaudit man scan > kubectl-ctrlaudit-scan.1"
    )]
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// A subcommand (scan, live, bench, rules, demo, completions); without it, the top page.
    pub subcommand: Option<String>,
}

#[derive(Debug, Args)]
pub struct RulesArgs {
    /// A rule code (CA202) or name; without it, the catalogue.
    pub code: Option<String>,
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Outcome {
    let Cli {
        global: GlobalArgs { cluster, output },
        all_namespaces,
        command,
    } = cli;
    match &command {
        Command::Scan(a) => crate::scan::command::run(&output, a),
        Command::Rules(a) => run_rules(&output, a),
        Command::Live(a) => crate::live::run(&cluster, &output, all_namespaces, a),
        Command::Bench(a) => crate::bench::run(&cluster, &output, a),
        Command::Demo(a) => crate::demo::run(&cluster, &output, a),
        Command::Completions(a) => {
            output::print(&completions(a.shell))?;
            Ok(Status::Clean)
        }
        Command::Man(a) => {
            output::print(&man_page(a.subcommand.as_deref())?)?;
            Ok(Status::Clean)
        }
    }
}

/// The completion script of `shell` for the `kubectl-ctrlaudit` command.
pub fn completions(shell: clap_complete::Shell) -> String {
    // `kubectl ctrlaudit` (the bin name kubectl users see in help) is two words: a completion script names the
    // one executable, whose subcommands it must name the same way.
    fn named(cmd: clap::Command, bin: String) -> clap::Command {
        cmd.bin_name(bin.clone()).mut_subcommands(|sc| {
            let name = format!("{bin} {}", sc.get_name());
            named(sc, name)
        })
    }
    let mut cmd = named(
        <Cli as clap::CommandFactory>::command(),
        "kubectl-ctrlaudit".into(),
    );
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "kubectl-ctrlaudit", &mut out);
    let script = String::from_utf8_lossy(&out).into_owned();
    match shell {
        // clap_complete's bash script names a subcommand's case by its bin name with `-` turned into its
        // separator (`kubectl__subcmd__ctrlaudit__subcmd__scan`) but walks the words into the function-name form
        // (`kubectl__ctrlaudit__subcmd__scan`): no flag of a subcommand would complete. One spelling for both.
        clap_complete::Shell::Bash => script.replace(
            "kubectl__subcmd__ctrlaudit__subcmd__",
            "kubectl__ctrlaudit__subcmd__",
        ),
        _ => script,
    }
}

/// The man page (roff) of the command, or of one subcommand.
pub fn man_page(subcommand: Option<&str>) -> anyhow::Result<String> {
    let mut cmd = <Cli as clap::CommandFactory>::command().name("kubectl-ctrlaudit");
    cmd.build();
    let page = match subcommand {
        None => cmd,
        Some(name) => {
            let names: Vec<String> = cmd
                .get_subcommands()
                .map(|s| s.get_name().to_string())
                .collect();
            cmd.find_subcommand(name)
                .cloned()
                .with_context(|| format!("no subcommand {name:?}; there are {}", names.join(", ")))?
                .name(format!("kubectl-ctrlaudit-{name}"))
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn run_rules(out: &OutputArgs, a: &RulesArgs) -> Outcome {
    // The catalogue is text or JSON: a findings format (SARIF, JUnit, …) would print something else than asked.
    if let Some(
        f @ (Format::Sarif | Format::Junit | Format::Github | Format::Gitlab | Format::Html),
    ) = out.output
    {
        return Err(crate::exit::Failure::usage(anyhow::anyhow!(
            "`rules` prints a table or a rule's documentation, or JSON with -o json; -o {f} is a findings format"
        )));
    }
    match &a.code {
        Some(code) => {
            let rule = rules::find(code).with_context(|| {
                format!(
                    "unknown rule {code:?}{} (see `kubectl ctrlaudit rules`)",
                    rules::did_you_mean(code)
                )
            })?;
            match out.output {
                Some(Format::Json) => {
                    output::println(&serde_json::to_string_pretty(&rule_json(rule))?)?;
                }
                _ => output::print(rule.doc())?,
            }
        }
        None => match out.output {
            Some(Format::Json) => {
                let all: Vec<_> = RULES.iter().copied().map(rule_json).collect();
                output::println(&serde_json::to_string_pretty(&all)?)?;
            }
            _ => output::print(&rules_table())?,
        },
    }
    Ok(Status::Clean)
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
