//! `kubectl ctrlaudit scan`: its flags, and the run from paths to a rendered report and an exit status.

use super::{ScanOptions, baseline, scan};
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
    let files = report::output_files(&out.output_files)?;
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
    // A CI step pointed at the wrong directory must not pass green: no finding because nothing was looked at
    // is an input error (exit 2) and, like every input error, gives no report to upload; the error says what
    // was passed over and why.
    if result.stats.units == 0 {
        let shown: Vec<String> = opts.paths.iter().map(|p| p.display().to_string()).collect();
        let found = match result.stats.rust_files {
            0 => "no Rust file".to_string(),
            1 => "1 Rust file, not in a crate or file that uses kube-rs".to_string(),
            n => format!("{n} Rust files, none in a crate or file that uses kube-rs"),
        };
        let mut message = format!("nothing analysed under {}: {found}", shown.join(", "));
        for n in &result.notes {
            message.push_str(&format!("\n  {}", report::note_line(n)));
        }
        return Err(Failure::usage(anyhow!(message)));
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
