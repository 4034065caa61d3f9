//! CRD YAML (and Helm templates of it) under a scanned tree: which kinds have the status subresource.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = ctrlaudit::scan::crd_yaml::kinds(text);
});
