//! The bench variants are scanned like any controller source: every bad variant raises its rule where its
//! `//~ CODE` marker says, and the good ones raise nothing. Scanned together with the Widget type (same crate,
//! as cargo builds it), which is where the scanner learns that Widget has the status subresource.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use ctrlaudit::config::Config;
use ctrlaudit::scan::{ScanOptions, scan};

const VARIANTS: &str = "src/bench/variants";

/// file name → the rule the variant exists to show (None for the good ones).
const EXPECTED_RULE: &[(&str, Option<&str>)] = &[
    ("good.rs", None),
    ("good_update.rs", None),
    ("shared.rs", None),
    ("mod.rs", None),
    ("bad_no_predicate.rs", Some("CA201")),
    ("bad_annotation_loop.rs", Some("CA202")),
    ("bad_status_on_main.rs", Some("CA101")),
    ("bad_poll.rs", Some("CA203")),
    ("bad_uncached.rs", Some("CA303")),
    ("unbounded.rs", Some("CA302")),
    ("per_tenant.rs", Some("CA401")),
    ("bad_cardinality.rs", Some("CA402")),
];

/// (file name, line, code) → count, from the `//~ CODE` markers (`//~^` points one line up).
fn markers() -> BTreeMap<(String, usize, String), usize> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(VARIANTS).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
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
                *out.entry((name.clone(), i + 1 - carets, code.to_string()))
                    .or_default() += 1;
            }
        }
    }
    out
}

fn findings() -> BTreeMap<(String, usize, String), (usize, String)> {
    let opts = ScanOptions {
        paths: vec![
            PathBuf::from(VARIANTS),
            PathBuf::from("src/bench/widget.rs"),
        ],
        config: Config::default(),
        overrides: BTreeMap::new(),
        threads: None,
    };
    let result = scan(&opts).unwrap();
    let mut out: BTreeMap<(String, usize, String), (usize, String)> = BTreeMap::new();
    for f in &result.findings {
        let span = f.subject.span().unwrap();
        let name = span.file.rsplit('/').next().unwrap().to_string();
        let e = out
            .entry((name, span.line, f.code.clone()))
            .or_insert((0, f.message.clone()));
        e.0 += 1;
    }
    out
}

#[test]
fn variants_raise_exactly_their_markers() {
    let expected = markers();
    let actual = findings();
    let mut problems = Vec::new();
    for (k, n) in &expected {
        let got = actual.get(k).map_or(0, |v| v.0);
        if got < *n {
            problems.push(format!(
                "missing    {}:{} {} (expected {n}, got {got})",
                k.0, k.1, k.2
            ));
        }
    }
    for (k, (n, msg)) in &actual {
        let want = expected.get(k).copied().unwrap_or(0);
        if *n > want {
            problems.push(format!("unexpected {}:{} {} — {msg}", k.0, k.1, k.2));
        }
    }
    assert!(
        problems.is_empty(),
        "{} mismatches:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn each_bad_variant_raises_its_rule_and_the_good_ones_nothing() {
    let actual = findings();
    let on_disk: Vec<String> = std::fs::read_dir(VARIANTS)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".rs"))
        .collect();
    for name in &on_disk {
        assert!(
            EXPECTED_RULE.iter().any(|(f, _)| f == name),
            "{name}: a new variant file needs an entry in EXPECTED_RULE"
        );
    }
    for (file, rule) in EXPECTED_RULE {
        let codes: Vec<&str> = actual
            .keys()
            .filter(|(f, _, _)| f == file)
            .map(|(_, _, c)| c.as_str())
            .collect();
        match rule {
            None => assert!(codes.is_empty(), "good variant {file} raised {codes:?}"),
            Some(code) => assert!(
                codes.contains(code),
                "bad variant {file} did not raise {code} (raised {codes:?})"
            ),
        }
    }
}
