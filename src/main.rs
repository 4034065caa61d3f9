//! The `kubectl-ctrlaudit` binary: parse args, run, print the error if there is one, map the outcome to an
//! exit code. The only place that ends the process.

use clap::Parser;
use ctrlaudit::cli::{Cli, run};
use ctrlaudit::exit::Status;
use std::process::ExitCode;

// Why mimalloc: see its line in Cargo.toml (a multi-threaded scan of many small allocations).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
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
