//! `kubectl ctrlaudit scan`: its flags, and the run from paths to a rendered report and an exit status.

use super::{ScanOptions, baseline, changed, scan};
use crate::config::Config;
use crate::exit::{Failure, Outcome};
use crate::policy::{Policy, PolicyArgs};
use crate::report::{self, OutputArgs};
use anyhow::anyhow;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Files or directories to scan (default: the current directory).
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// `-A` is --all-namespaces, as in kubectl; kept only to point clippy habits at --allow.
    #[arg(short = 'A', value_name = "CODE", hide = true)]
    pub allow_short: Vec<String>,
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
    /// Do not read the source of the crate's kube-using dependencies (found through Cargo.lock in vendor/ or
    /// Cargo's registry cache; nothing is downloaded).
    #[arg(long)]
    pub no_deps: bool,
    /// Report only findings whose location is on lines changed since REV (working tree included): a big
    /// codebase gates what a change touches.
    #[arg(long, value_name = "REV", conflicts_with = "new_from_merge_base")]
    pub new_from_rev: Option<String>,
    /// Report only findings on lines changed since the merge base of HEAD and BRANCH (a pull request's
    /// changes).
    #[arg(long, value_name = "BRANCH")]
    pub new_from_merge_base: Option<String>,
    /// Print how many findings each rule has, instead of the findings (a table, or JSON with `-o json`).
    #[arg(long)]
    pub statistics: bool,
}

/// One line of `--statistics`: a rule's findings at one level.
#[derive(Debug, PartialEq, serde::Serialize)]
pub struct RuleCount {
    pub code: String,
    pub name: &'static str,
    pub severity: crate::finding::Severity,
    pub count: usize,
}

/// The findings counted per rule and level, the largest count first.
pub fn statistics(findings: &[crate::finding::Finding]) -> Vec<RuleCount> {
    let mut out: Vec<RuleCount> = report::counts_by_rule(findings)
        .into_iter()
        .map(|((code, severity), count)| RuleCount {
            code: code.to_string(),
            name: crate::rules::find(code).map_or("", |r| r.name),
            severity,
            count,
        })
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.code.cmp(&b.code)));
    out
}

/// `--statistics` as text: one aligned line per rule and level, as `ruff --statistics` prints.
fn statistics_text(counts: &[RuleCount]) -> String {
    let width = counts
        .iter()
        .map(|c| c.count.to_string().len())
        .max()
        .unwrap_or(1);
    let level = counts
        .iter()
        .map(|c| c.severity.as_str().len())
        .max()
        .unwrap_or(0);
    counts
        .iter()
        .map(|c| {
            format!(
                "{:>width$}  {}  {:<level$}  {}\n",
                c.count,
                c.code,
                c.severity.as_str(),
                c.name
            )
        })
        .collect()
}

/// Scans, applies the baseline, renders; Findings when one is at or above `--fail-on`.
pub fn run(out: &OutputArgs, a: &ScanArgs) -> Outcome {
    if let Some(code) = a.allow_short.first() {
        return Err(Failure::usage(anyhow!(
            "`-A` means --all-namespaces in kubectl ctrlaudit, as in kubectl; turn a rule off with --allow {code}"
        )));
    }
    let paths = if a.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        a.paths.clone()
    };
    let files = report::output_files(
        &out.output_files,
        out.output.unwrap_or(report::Format::Full),
    )?;
    if a.statistics && !out.output_files.is_empty() {
        return Err(Failure::usage(anyhow!(
            "--statistics prints counts to the terminal; --output-file writes findings: use one or the other"
        )));
    }
    if a.statistics
        && !matches!(
            out.output,
            None | Some(
                report::Format::Full
                    | report::Format::Concise
                    | report::Format::Table
                    | report::Format::Json
            )
        )
    {
        return Err(Failure::usage(anyhow!(
            "--statistics prints a table, or JSON with -o json; the other formats are for findings"
        )));
    }
    let config = match &a.config {
        Some(p) => Config::load(p)?,
        None => Config::discover(&paths[0])?,
    };
    let policy = Policy::new(&config, &a.policy).map_err(Failure::usage)?;
    let opts = ScanOptions {
        paths,
        config,
        policy,
        threads: a.threads,
        deps: !a.no_deps,
    };
    let mut result = scan(&opts)?;
    if let Some(path) = &a.write_baseline {
        baseline::write(path, &result.findings)?;
        eprintln!(
            "wrote {} findings to baseline {}",
            result.findings.len(),
            path.display()
        );
        return Ok(crate::exit::Status::Clean);
    }
    if let Some(path) = &a.baseline {
        let (kept, absorbed) = baseline::filter(path, std::mem::take(&mut result.findings))?;
        result.findings = kept;
        if absorbed > 0 {
            result.notes.push(report::Note {
                subject: path.display().to_string(),
                message: format!("{absorbed} findings already in the baseline were not reported"),
            });
        }
    }
    // The revision, and how the note names it.
    let since = match (&a.new_from_rev, &a.new_from_merge_base) {
        (Some(rev), _) => Some((rev.clone(), rev.clone())),
        (None, Some(branch)) => {
            let base = changed::merge_base(&opts.paths[0], branch).map_err(Failure::usage)?;
            let short: String = base.chars().take(12).collect();
            Some((base, format!("the merge base with {branch} ({short})")))
        }
        (None, None) => None,
    };
    if let Some((rev, named)) = since {
        let lines = changed::since(&opts.paths[0], &rev).map_err(Failure::usage)?;
        let (kept, old) = lines.filter(std::mem::take(&mut result.findings));
        result.findings = kept;
        if old > 0 {
            result.notes.push(report::Note {
                subject: format!("since {named}"),
                message: format!(
                    "{old} {} on lines not changed since {named} not reported",
                    if old == 1 { "finding" } else { "findings" }
                ),
            });
        }
    }
    // A CI step pointed at the wrong directory must not pass green: no finding because nothing was looked at
    // is an input error (exit 2) and, like every input error, gives no report to upload; the error says what
    // was passed over and why.
    if result.stats.units == 0 {
        let shown: Vec<String> = opts.paths.iter().map(|p| p.display().to_string()).collect();
        let rust = match result.stats.rust_files {
            0 => "no Rust file".to_string(),
            1 => "1 Rust file, not in a crate or file that uses kube-rs".to_string(),
            n => format!("{n} Rust files, none in a crate or file that uses kube-rs"),
        };
        let found = match result.stats.go_files {
            0 => rust,
            1 => format!(
                "{rust}; 1 Go file, not in a module or file that uses controller-runtime or client-go"
            ),
            n => format!(
                "{rust}; {n} Go files, none in a module or file that uses controller-runtime or client-go"
            ),
        };
        let mut message = format!("nothing analysed under {}: {found}", shown.join(", "));
        for n in &result.notes {
            message.push_str(&format!("\n  {}", report::note_line(n)));
        }
        return Err(Failure::usage(anyhow!(message)));
    }
    if a.statistics {
        let counts = statistics(&result.findings);
        let text = if out.output == Some(report::Format::Json) {
            serde_json::to_string_pretty(&counts)? + "\n"
        } else {
            statistics_text(&counts)
        };
        crate::output::print(&text)?;
        return Ok(out.status(&result.findings));
    }
    let stats = result.stats.as_pairs();
    out.emit_with_suppressed(
        "scan",
        &result.findings,
        &result.suppressed,
        &result.notes,
        &stats,
        &files,
    )?;
    Ok(out.status(&result.findings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Finding, Lens, Severity, Subject};

    fn finding(code: &str, severity: Severity) -> Finding {
        Finding {
            code: code.into(),
            severity,
            lens: Lens::Scan,
            message: String::new(),
            subject: Subject::Controller {
                manager: None,
                user: None,
                user_agent: None,
                actor: None,
            },
            evidence: Vec::new(),
            help: String::new(),
            objects: Vec::new(),
            when: None,
        }
    }

    #[test]
    fn statistics_count_per_rule_and_level_largest_first() {
        let findings = [
            finding("CA304", Severity::Info),
            finding("CA203", Severity::Warning),
            finding("CA203", Severity::Warning),
            finding("CA203", Severity::Error),
        ];
        let counts = statistics(&findings);
        let got: Vec<(&str, Severity, usize)> = counts
            .iter()
            .map(|c| (c.code.as_str(), c.severity, c.count))
            .collect();
        assert_eq!(
            got,
            [
                ("CA203", Severity::Warning, 2),
                ("CA203", Severity::Error, 1),
                ("CA304", Severity::Info, 1)
            ]
        );
        assert_eq!(counts[0].name, "polling-requeue");
        let text = statistics_text(&counts);
        assert_eq!(
            text.lines().next(),
            Some("2  CA203  warning  polling-requeue")
        );
        assert!(statistics(&[]).is_empty());
    }
}
