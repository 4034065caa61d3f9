//! Fixtures with inline expectations, checked both ways: every `//~ CODE` marker must be hit by a
//! finding on that line, and every finding must have a marker. `//~^ CODE` points one line up
//! (one caret per line).
#![allow(clippy::unwrap_used)]

use ctrlaudit::config::Config;
use ctrlaudit::scan::{ScanOptions, scan};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// (file, line, code) → count, from the markers.
fn expectations(root: &Path) -> BTreeMap<(String, usize, String), usize> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut exp = BTreeMap::new();
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let name = f.to_string_lossy().replace('\\', "/");
        for (i, line) in text.lines().enumerate() {
            let Some(pos) = line.find("//~") else {
                continue;
            };
            let rest = &line[pos + 3..];
            let carets = rest.chars().take_while(|c| *c == '^').count();
            for code in rest[carets..]
                .split_whitespace()
                .take_while(|w| w.starts_with("CA"))
            {
                let target = i + 1 - carets;
                *exp.entry((name.clone(), target, code.to_string()))
                    .or_default() += 1;
            }
        }
    }
    exp
}

#[test]
fn scan_fixtures_match_inline_expectations() {
    let root = PathBuf::from("fixtures/scan");
    let opts = ScanOptions {
        paths: vec![root.clone()],
        config: Config::default(),
        overrides: BTreeMap::new(),
        threads: None,
    };
    let result = scan(&opts).unwrap();
    let mut actual: BTreeMap<(String, usize, String), usize> = BTreeMap::new();
    for f in &result.findings {
        let s = f.subject.span().unwrap();
        *actual
            .entry((s.file.clone(), s.line, f.code.clone()))
            .or_default() += 1;
    }
    let expected = expectations(&root);
    let mut problems = Vec::new();
    for (k, n) in &expected {
        let got = actual.get(k).copied().unwrap_or(0);
        if got < *n {
            problems.push(format!(
                "missing   {}:{} {} (expected {n}, got {got})",
                k.0, k.1, k.2
            ));
        }
    }
    for (k, n) in &actual {
        let want = expected.get(k).copied().unwrap_or(0);
        if *n > want {
            let msg = result
                .findings
                .iter()
                .find(|f| {
                    f.code == k.2
                        && f.subject
                            .span()
                            .is_some_and(|s| s.file == k.0 && s.line == k.1)
                })
                .map(|f| f.message.clone())
                .unwrap_or_default();
            problems.push(format!("unexpected {}:{} {} — {msg}", k.0, k.1, k.2));
        }
    }
    assert!(
        problems.is_empty(),
        "{} mismatches:\n{}",
        problems.len(),
        problems.join("\n")
    );
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
