//! Two Rust files judged as one crate (a CRD type in one, the reconcile in the other): the input is split at its
//! first `\u{0}`.
#![no_main]
use ctrlaudit::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let (a, b) = text.split_once('\u{0}').unwrap_or((text, ""));
    let _ = ctrlaudit::scan::scan_sources(
        &[("src/lib.rs", a), ("src/controller.rs", b)],
        &Config::default(),
    );
});
