//! `// ctrlaudit: allow(CODE) reason` comments, parsed and applied to a finding on every line.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let sups = ctrlaudit::scan::suppress::parse(text);
    let mut findings = Vec::new();
    let _ = ctrlaudit::scan::suppress::apply("fuzz.rs", &sups, &mut findings);
});
