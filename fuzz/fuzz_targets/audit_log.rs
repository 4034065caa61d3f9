//! An API server audit log (JSON lines), folded into live's summary, then judged by every detector.
#![no_main]
use ctrlaudit::config::Config;
use ctrlaudit::live::snapshot::Snapshot;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let mut snap = Snapshot::default();
    snap.attach_audit(ctrlaudit::live::audit::summarise(
        "fuzz",
        text,
        Some("default"),
    ));
    let _ = ctrlaudit::live::detectors::run_all(&snap, &Config::default());
});
