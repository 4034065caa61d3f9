//! The bench variants are scanned like any controller source: every file that shows a rule raises it where its
//! `//~ CODE` marker says, and the good ones raise nothing. Scanned together with the Widget type (same crate,
//! as cargo builds it), which is where the scanner learns that Widget has the status subresource. And each
//! rule's file is a copy of its good twin that differs only in the hunks it marks, so the deliberate copies
//! cannot drift apart.
#![allow(clippy::unwrap_used)]

mod expect;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ctrlaudit::bench::catalog::{self, VARIANTS};
use ctrlaudit::config::Config;
use ctrlaudit::policy::Policy;
use ctrlaudit::scan::{ScanOptions, scan};

const DIR: &str = "src/bench/variants";

/// Rules whose bench pair shows the cost of the handled form, which scan rightly accepts: `good-update`
/// retries its 409s (what CA301 asks for) and the pair measures what the conflicts cost against a patch.
const HANDLED_IN_SOURCE: &[&str] = &["CA301"];

/// Rules whose bench variant shows a form scan does not judge: `bad-fight`'s two writers force `spec.count` of a
/// Widget, and scan reports a fight only where the source shows an HPA and the replicas it scales.
const RUNTIME_ONLY: &[&str] = &["CA206"];

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn findings() -> Vec<ctrlaudit::finding::Finding> {
    let opts = ScanOptions {
        paths: vec![PathBuf::from(DIR), PathBuf::from("src/bench/widget.rs")],
        config: Config::default(),
        policy: Policy::default(),
        threads: None,
        deps: true,
    };
    scan(&opts).unwrap().findings
}

fn finding_key(f: &ctrlaudit::finding::Finding) -> expect::Key {
    let s = f.subject.span().unwrap();
    (
        s.file.rsplit('/').next().unwrap().to_string(),
        s.line,
        f.code.clone(),
    )
}

/// Variant file → the rules of the variants that run it (empty for the good ones), from the catalogue.
fn rule_of_file() -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    let mut out: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for v in VARIANTS {
        out.entry(v.code.file()).or_default().extend(v.rule);
    }
    out
}

#[test]
fn variants_raise_exactly_their_markers() {
    let expected = expect::markers_under(Path::new(DIR), &|p| file_name(p));
    expect::assert_matches(&expected, &findings(), &finding_key);
}

#[test]
fn files_are_named_by_the_rule_they_show_and_the_good_ones_raise_nothing() {
    let rules = rule_of_file();
    let on_disk: BTreeSet<String> = std::fs::read_dir(DIR)
        .unwrap()
        .map(|e| file_name(&e.unwrap().path()))
        .filter(|n| n.ends_with(".rs") && n != "mod.rs")
        .collect();
    let in_catalogue: BTreeSet<String> = rules.keys().map(|f| f.to_string()).collect();
    assert_eq!(on_disk, in_catalogue, "variant files vs the catalogue's");
    let found = findings();
    for (file, codes) in &rules {
        let raised: BTreeSet<String> = found
            .iter()
            .map(finding_key)
            .filter(|k| k.0 == *file)
            .map(|k| k.2)
            .collect();
        match codes.iter().collect::<Vec<_>>()[..] {
            [] => {
                assert!(!file.starts_with("ca"), "{file}: runs no rule's variant");
                assert!(raised.is_empty(), "good variant {file} raised {raised:?}");
            }
            [code] => {
                let rule = ctrlaudit::rules::find(code).unwrap();
                let stem = format!("{}_", rule.code.to_ascii_lowercase());
                assert!(
                    file.starts_with(&stem),
                    "{file} runs {code}: name it {stem}…"
                );
                if !HANDLED_IN_SOURCE.contains(code) && !RUNTIME_ONLY.contains(code) {
                    assert!(
                        raised.contains(*code),
                        "{file} did not raise {code} (raised {raised:?})"
                    );
                }
            }
            _ => panic!("{file} runs variants of several rules: {codes:?}"),
        }
    }
}

/// The lines after the module docs and imports, numbered from 1.
fn body(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut start = 0;
    let mut in_use = false;
    while start < lines.len() {
        let t = lines[start].trim();
        if in_use || t.starts_with("use ") || t.starts_with("pub use ") {
            in_use = !t.ends_with(';');
        } else if !(t.is_empty() || t.starts_with("//!")) {
            break;
        }
        start += 1;
    }
    lines
        .iter()
        .copied()
        .enumerate()
        .skip(start)
        .map(|(i, l)| (i + 1, l))
        .collect()
}

fn marked(line: &str) -> bool {
    line.contains("//~") || line.contains("// twin:")
}

/// Hunks of `bad` (against `good`) that carry no `//~` or `// twin:` line, as "file:line-range".
fn unmarked_hunks(file: &str, good: &str, bad: &str) -> Vec<String> {
    let g = body(good);
    let b = body(bad);
    let g_lines: Vec<&str> = g.iter().map(|(_, l)| *l).collect();
    let b_lines: Vec<&str> = b.iter().map(|(_, l)| *l).collect();
    let diff = similar::TextDiff::from_slices(&g_lines, &b_lines);
    let mut out = Vec::new();
    for op in diff.ops() {
        if matches!(op, similar::DiffOp::Equal { .. }) {
            continue;
        }
        let new = op.new_range();
        let ok = b_lines[new.clone()].iter().any(|l| marked(l));
        if !ok {
            let at = b.get(new.start).or(b.last()).map_or(0, |(n, _)| *n);
            let what = if new.is_empty() {
                let old = op.old_range();
                format!(
                    "{} line(s) of the twin left out, e.g. `{}`",
                    old.len(),
                    g_lines[old.start].trim()
                )
            } else {
                format!("`{}`", b_lines[new.start].trim())
            };
            out.push(format!("{file}:{at}: an unmarked difference: {what}"));
        }
    }
    out
}

#[test]
fn each_rule_file_differs_from_its_good_twin_only_where_it_says() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for rule in ctrlaudit::rules::RULES {
        let Some(pair) = rule.bench_pair else {
            continue;
        };
        let (Some(bad), Some(good)) = (pair.bad.first(), pair.good.last()) else {
            continue;
        };
        let bad_file = catalog::variant(bad).unwrap().code.file();
        let good_file = catalog::variant(good).unwrap().code.file();
        let read = |f: &str| std::fs::read_to_string(Path::new(DIR).join(f)).unwrap();
        problems.extend(unmarked_hunks(bad_file, &read(good_file), &read(bad_file)));
        checked += 1;
    }
    assert_eq!(checked, 10, "one twin check per rule with bench variants");
    assert!(
        problems.is_empty(),
        "{} unmarked differences (mark each with `//~ CODE` or `// twin: why`):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn an_unmarked_difference_is_reported() {
    let good = "//! g\nuse a;\n\nfn f() {\n    one();\n    two();\n}\n";
    let ok =
        "//! b\nuse a;\nuse b;\n\nfn f() {\n    one(); //~ CA203\n    // twin: no second call\n}\n";
    assert!(unmarked_hunks("x.rs", good, ok).is_empty());
    let bad = "//! b\nuse a;\n\nfn f() {\n    one();\n}\n";
    let p = unmarked_hunks("x.rs", good, bad);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].contains("left out, e.g. `two();`"), "{p:?}");
}
