//! The `kubectl-ctrlaudit` binary: parse args, run, print the error if there is one, map the outcome to an
//! exit code. The only place that ends the process.

use clap::Parser;
use ctrlaudit::cli::{Cli, run};
use ctrlaudit::complete;
use ctrlaudit::exit::Status;
use std::process::ExitCode;

// Why mimalloc: see its line in Cargo.toml (a multi-threaded scan of many small allocations).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // kubectl's plugin completion runs `kubectl_complete-ctrlaudit WORDS…` (a link to this binary), or
    // `kubectl-ctrlaudit __complete WORDS…`: see `complete`.
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_default();
    let as_completer = std::path::Path::new(&argv0)
        .file_stem()
        .is_some_and(|n| n == complete::EXECUTABLE);
    let rest: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    let words = match rest.split_first() {
        _ if as_completer => Some(&rest[..]),
        Some((first, words)) if first == "__complete" => Some(words),
        _ => None,
    };
    if let Some(words) = words {
        let text = complete::answer(&<Cli as clap::CommandFactory>::command(), words);
        return match ctrlaudit::output::print(&text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(Status::Usage.code()),
        };
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let status = if e.use_stderr() {
                Status::Usage
            } else {
                Status::Clean
            };
            let _ = e.print();
            return ExitCode::from(status.code());
        }
    };
    match run(cli) {
        Ok(status) => ExitCode::from(status.code()),
        Err(failure) => {
            eprintln!("error: {failure}");
            ExitCode::from(failure.status.code())
        }
    }
}
