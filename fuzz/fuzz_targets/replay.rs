//! A recorded `--replay` folder's files: the snapshot (judged by every detector) and the expected findings.
#![no_main]
use ctrlaudit::config::Config;
use ctrlaudit::live::record::Expectation;
use ctrlaudit::live::snapshot::Snapshot;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(snap) = serde_json::from_str::<Snapshot>(text) {
        let _ = ctrlaudit::live::detectors::run_all(&snap, &Config::default());
    }
    let _ = serde_json::from_str::<Vec<Expectation>>(text);
});
