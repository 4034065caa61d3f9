//! One Go file through the whole per-file pipeline: tree-sitter parse, the depth check, the Go front end's
//! model, every rule, suppressions.
#![no_main]
use ctrlaudit::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = ctrlaudit::scan::scan_source("fuzz.go", text, &Config::default());
});
