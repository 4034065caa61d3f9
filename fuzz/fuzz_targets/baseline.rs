//! A baseline file (`--baseline`), applied to the findings of a small fixed source.
#![no_main]
use ctrlaudit::config::Config;
use libfuzzer_sys::fuzz_target;

const SOURCE: &str = "use kube::runtime::controller::Action; use std::time::Duration;\n\
    async fn reconcile(o: std::sync::Arc<Widget>, c: Ctx) -> Result<Action, E> { Ok(Action::requeue(Duration::from_secs(1))) }\n";

fuzz_target!(|text: &str| {
    let findings = ctrlaudit::scan::scan_source("src/reconcile.rs", SOURCE, &Config::default());
    let _ = ctrlaudit::scan::baseline::filter_text(
        text,
        std::path::Path::new("baseline.json"),
        findings,
    );
});
