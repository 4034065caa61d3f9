//! bench: built-in good/bad controller variants run against a cluster, and what each anti-pattern costs there.
//!
//! `args` validates the command line into a plan; `harness` runs it (with `cluster` for everything outside
//! the variants, `book` for scraping and bookkeeping, `probe` for the write ceiling, `child` for the
//! processes it starts); `variants` are the controllers, `instrument` and `client` (and `crate::endpoint`) their
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

use anyhow::{Context, anyhow};

use crate::connect::ClusterArgs;
use crate::exit::{Failure, Outcome, Status};
use crate::output;
use crate::report::{Format, OutputArgs};
use args::Internal;

/// Runs `kubectl ctrlaudit bench`: Clean a complete run, a usage failure for bad arguments, NoEvidence when
/// the cluster could not be measured or the run was cut short.
pub fn run(g: &ClusterArgs, out: &OutputArgs, a: &BenchArgs) -> Outcome {
    match &a.internal {
        Some(Internal::CreateOne { name, run }) => {
            child::create_one(g, name, run)?;
            return Ok(Status::Clean);
        }
        Some(Internal::Child {
            variant,
            namespaces,
            selector,
            work,
        }) => {
            child::run_design(g, variant, namespaces.clone(), selector.clone(), work)?;
            return Ok(Status::Clean);
        }
        None => {}
    }
    if a.list {
        output::print(&catalog::listing()).context("writing to stdout")?;
        return Ok(Status::Clean);
    }
    let json = match out.format("bench") {
        Format::Table => false,
        Format::Json => true,
        other => {
            return Err(Failure::usage(anyhow!(
                "bench prints a table or JSON (-o json), not {other}"
            )));
        }
    };
    if !out.output_files.is_empty() {
        return Err(Failure::usage(anyhow!(
            "bench writes its files to --output-dir; --output-file is not supported here"
        )));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    if let Some(run_id) = &a.cleanup {
        let r = rt
            .block_on(harness::cleanup_only(g, run_id, a.finalize_namespaces))
            .map_err(harness::failure)?;
        if json {
            output::println(&serde_json::to_string_pretty(&r).context("serialising")?)
                .context("writing to stdout")?;
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
            ))
            .context("writing to stdout")?;
            for e in &r.errors {
                eprintln!("cleanup: {e}");
            }
        }
        return Ok(if r.complete() {
            Status::Clean
        } else {
            Status::NoEvidence
        });
    }
    let plan = a.plan().map_err(Failure::usage)?;
    let result = rt.block_on(harness::run(g, &plan));
    // Children and stray tasks must not keep the process alive once the report is out.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    let report = result.map_err(harness::failure)?;
    if json {
        output::println(&serde_json::to_string_pretty(&report).context("serialising")?)
            .context("writing to stdout")?;
    } else {
        output::print(&report.render_table()).context("writing to stdout")?;
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
        Status::Clean
    } else {
        Status::NoEvidence
    })
}
