//! Temporary profiling driver (not committed).
use ctrlaudit_core::config::Config;
use ctrlaudit_core::policy::{Policy, PolicyArgs};
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
fn main() {
    let paths: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let deps = std::env::var("DEPS").is_ok_and(|v| v == "1");
    let config = Config::default();
    for _ in 0..reps {
        let opts = ctrlaudit_scan::ScanOptions {
            paths: paths.clone(),
            policy: Policy::new(&config, &PolicyArgs::default()).expect("policy"),
            config: config.clone(),
            threads: None,
            deps,
        };
        let r = ctrlaudit_scan::scan(&opts).expect("scan");
        eprintln!("{} findings", r.findings.len());
    }
}
