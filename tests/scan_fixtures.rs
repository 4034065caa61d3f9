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
    // Every finding about a controller says on which path it happens; `//~ CODE[path]` pins which.
    let mut problems = Vec::new();
    for f in &result.findings {
        let s = f.subject.span().unwrap();
        if f.when.is_none() && !["CA001", "CA002"].contains(&f.code.as_str()) {
            problems.push(format!("no path: {}:{} {}", s.file, s.line, f.code));
        }
    }
    let paths = expect::paths_under(&root, &|p| p.to_string_lossy().replace('\\', "/"));
    for ((file, line, code), want) in &paths {
        let got: Vec<&str> = result
            .findings
            .iter()
            .filter(|f| {
                let s = f.subject.span().unwrap();
                (&s.file, s.line, &f.code) == (file, *line, code)
            })
            .filter_map(|f| f.when.as_ref().map(|w| w.path.as_str()))
            .collect();
        if got.is_empty() || got.iter().any(|g| g != want) {
            problems.push(format!(
                "{file}:{line} {code}: path {got:?}, expected {want}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    for kind in [
        "every-reconcile",
        "spec-change",
        "transition",
        "drift",
        "deletion",
        "startup",
        "error-retry",
        "branch",
    ] {
        assert!(
            paths.values().any(|p| p == kind),
            "no fixture pins the path {kind} (`//~ CODE[{kind}]`)"
        );
    }
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
