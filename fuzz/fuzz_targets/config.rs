//! `ctrlaudit.toml`: rule levels, thresholds, metric names, aliases.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = ctrlaudit::config::Config::parse(text, std::path::Path::new("ctrlaudit.toml"));
});
