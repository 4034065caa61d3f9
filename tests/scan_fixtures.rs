//! Fixtures with inline expectations, checked both ways: every `//~ CODE` marker must be hit by a
//! finding on that line, and every finding must have a marker. `//~^ CODE` points one line up
//! (one caret per line).
#![allow(clippy::unwrap_used)]

mod expect;

use ctrlaudit::config::Config;
use ctrlaudit::policy::Policy;
use ctrlaudit::scan::{ScanOptions, scan};
use std::path::PathBuf;

#[test]
fn scan_fixtures_match_inline_expectations() {
    let root = PathBuf::from("fixtures/scan");
    let opts = ScanOptions {
        paths: vec![root.clone()],
        config: Config::default(),
        policy: Policy::default(),
        threads: None,
        deps: true,
    };
    let result = scan(&opts).unwrap();
    let expected = expect::markers_under(&root, &|p| p.to_string_lossy().replace('\\', "/"));
    expect::assert_matches(&expected, &result.findings, &|f| {
        let s = f.subject.span().unwrap();
        (s.file.clone(), s.line, f.code.clone())
    });
    assert!(
        expected.len() > 50,
        "too few expectations: {}",
        expected.len()
    );
}

#[test]
fn every_scan_rule_has_bad_and_good_fixtures() {
    for rule in ctrlaudit::rules::RULES
        .iter()
        .filter(|r| r.has_lens(ctrlaudit::finding::Lens::Scan))
    {
        let dir = PathBuf::from("fixtures/scan").join(format!("{}-{}", rule.code, rule.name));
        assert!(dir.is_dir(), "no fixture folder {}", dir.display());
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().any(|n| n.starts_with("bad_")),
            "{}: no bad_ fixture",
            rule.code
        );
        if rule.code != "CA001" {
            assert!(
                names.iter().any(|n| n.starts_with("good_")),
                "{}: no good_ fixture",
                rule.code
            );
        }
    }
}
