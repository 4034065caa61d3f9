//! One Rust file through the whole per-file pipeline: parse, model, every rule, suppressions.
#![no_main]
use ctrlaudit::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = ctrlaudit::scan::scan_source("fuzz.rs", text, &Config::default());
});
