//! Prometheus exposition text as the API server and a controller serve it on /metrics.
#![no_main]
use ctrlaudit::config::MetricNames;
use ctrlaudit::live::snapshot::SourceKind;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let names = MetricNames::default();
    let _ = ctrlaudit::live::metrics::parse(text, 0, SourceKind::Apiserver, &names);
    let _ = ctrlaudit::live::metrics::parse(text, 0, SourceKind::Controller, &names);
});
