//! bench: built-in good/bad controller variants run against a cluster, and what each anti-pattern costs there.
//!
//! `args` validates the command line into a plan; `harness` runs it (with `cluster` for everything outside
//! the variants, `book` for scraping and bookkeeping, `probe` for the write ceiling, `child` for the
//! processes it starts); `variants` are the controllers, `instrument`, `client` and `endpoint` their
//! metrics; `scrape`, `summary`, `stats`, `csv`, `chart` and `report` turn scrapes into results.

pub mod args;
pub mod book;
pub mod catalog;
pub mod chart;
pub mod child;
pub mod churn;
pub mod client;
pub mod cluster;
pub mod csv;
pub mod endpoint;
pub mod harness;
pub mod instrument;
pub mod probe;
pub mod report;
pub mod scrape;
pub mod stats;
pub mod summary;
pub mod sysinfo;
pub mod variants;
pub mod widget;

pub use args::BenchArgs;

use anyhow::{Context, Result};

use crate::cli::{GlobalArgs, exit};
use crate::output;
use crate::report::Format;
use args::{Internal, UsageError};

/// Runs `kubectl ctrlaudit bench`; returns the exit code (0 a complete run, 2 a usage error, 3 the cluster
/// could not be measured or the run was cut short).
pub fn run(g: &GlobalArgs, a: &BenchArgs) -> Result<u8> {
    match &a.internal {
        Some(Internal::CreateOne { name, run }) => return child::create_one(g, name, run),
        Some(Internal::Child {
            variant,
            namespaces,
            selector,
            work,
        }) => return child::run_design(g, variant, namespaces.clone(), selector.clone(), work),
        None => {}
    }
    if a.list {
        output::print(&catalog::listing())?;
        return Ok(exit::CLEAN);
    }
    let json = match g.output {
        Format::Table => false,
        Format::Json => true,
        other => {
            eprintln!("error: bench prints a table or JSON (-o json), not {other:?}");
            return Ok(exit::USAGE);
        }
    };
    if !g.output_files.is_empty() {
        eprintln!(
            "error: bench writes its files to --output-dir; --output-file is not supported here"
        );
        return Ok(exit::USAGE);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    if let Some(run_id) = &a.cleanup {
        return Ok(
            match rt.block_on(harness::cleanup_only(g, run_id, a.finalize_namespaces)) {
                Ok(r) => {
                    if json {
                        output::println(&serde_json::to_string_pretty(&r)?)?;
                    } else {
                        output::println(&format!(
                            "run {run_id}: deleted {} namespaces{}{}",
                            r.namespaces_deleted.len(),
                            if r.crd_deleted {
                                " and the CRD it installed"
                            } else {
                                ""
                            },
                            if r.terminating.is_empty() {
                                String::new()
                            } else {
                                format!("; still Terminating: {}", r.terminating.join(", "))
                            }
                        ))?;
                        for e in &r.errors {
                            eprintln!("cleanup: {e}");
                        }
                    }
                    if r.complete() {
                        exit::CLEAN
                    } else {
                        exit::NO_EVIDENCE
                    }
                }
                Err(e) => {
                    eprintln!("error: {e:#}");
                    harness::exit_code(&e)
                }
            },
        );
    }
    let plan = match a.plan() {
        Ok(p) => p,
        Err(UsageError(msg)) => {
            eprintln!("error: {msg}");
            return Ok(exit::USAGE);
        }
    };
    let result = rt.block_on(harness::run(g, &plan));
    // Children and stray tasks must not keep the process alive once the report is out.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    match result {
        Ok(report) => {
            if json {
                output::println(&serde_json::to_string_pretty(&report)?)?;
            } else {
                output::print(&report.render_table())?;
            }
            if !report.complete {
                eprintln!(
                    "the run is incomplete: {}",
                    report
                        .incomplete_reason
                        .as_deref()
                        .unwrap_or("stopped early")
                );
            }
            Ok(if report.complete {
                exit::CLEAN
            } else {
                exit::NO_EVIDENCE
            })
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            Ok(harness::exit_code(&e))
        }
    }
}
