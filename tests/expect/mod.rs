//! The `//~ CODE` inline expectations shared by every fixture test (`mod expect;`), in the style of rustc's
//! UI tests and clippy: `//~ CA203` expects a finding of CA203 on its own line, `//~^ CA203` one line up (one
//! caret per line), several codes may follow one marker. [`check`] compares both ways: every marker must be
//! hit, and every finding must have a marker.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses a different subset of these helpers

use ctrlaudit::finding::Finding;
use std::collections::BTreeMap;
use std::path::Path;

/// (file, line, code)
pub type Key = (String, usize, String);

/// Adds the markers in `text` to `out`, keyed by `file`.
pub fn markers_in(file: &str, text: &str, out: &mut BTreeMap<Key, usize>) {
    parse(file, text, &mut |key, _| *out.entry(key).or_default() += 1);
}

/// Calls `each` with every marker of `text`: its key and the path in brackets after the code, if any
/// (`//~ CA303[spec-change]` expects the finding's `when.path` to be `spec-change`).
fn parse(file: &str, text: &str, each: &mut dyn FnMut(Key, Option<&str>)) {
    for (i, line) in text.lines().enumerate() {
        let Some(pos) = line.find("//~") else {
            continue;
        };
        let rest = &line[pos + 3..];
        let carets = rest.chars().take_while(|c| *c == '^').count();
        assert!(
            carets <= i,
            "{file}:{}: `//~{}` points above the file",
            i + 1,
            "^".repeat(carets)
        );
        for word in rest[carets..]
            .split_whitespace()
            .take_while(|w| w.starts_with("CA"))
        {
            let (code, path) = match word.split_once('[') {
                Some((code, path)) => (code, path.strip_suffix(']')),
                None => (word, None),
            };
            each((file.to_string(), i + 1 - carets, code.to_string()), path);
        }
    }
}

/// The paths the markers of every source file (`.rs`, `.go`) under `root` name in brackets, keyed like [`markers_under`].
pub fn paths_under(root: &Path, label: &dyn Fn(&Path) -> String) -> BTreeMap<Key, String> {
    let mut out = BTreeMap::new();
    for (p, text) in rs_files(root) {
        parse(&label(&p), &text, &mut |key, path| {
            if let Some(path) = path {
                out.insert(key, path.to_string());
            }
        });
    }
    out
}

/// Every source file (`.rs`, `.go`) under `root` (or `root` itself) with its text.
fn rs_files(root: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else if p.extension().is_some_and(|x| x == "rs" || x == "go") {
            let bytes = std::fs::read(&p).unwrap();
            out.push((p, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

/// The markers of every source file (`.rs`, `.go`) under `root` (or of `root` itself), keyed by `label(path)`.
pub fn markers_under(root: &Path, label: &dyn Fn(&Path) -> String) -> BTreeMap<Key, usize> {
    let mut out = BTreeMap::new();
    for (p, text) in rs_files(root) {
        markers_in(&label(&p), &text, &mut out);
    }
    out
}

/// Both ways: markers without a finding ("missing") and findings without a marker ("unexpected"), one line
/// each, with the finding's message. `key` gives a finding's (file, line, code) in the markers' labels.
pub fn check(
    expected: &BTreeMap<Key, usize>,
    findings: &[Finding],
    key: &dyn Fn(&Finding) -> Key,
) -> Vec<String> {
    let mut actual: BTreeMap<Key, (usize, &str)> = BTreeMap::new();
    for f in findings {
        actual.entry(key(f)).or_insert((0, &f.message)).0 += 1;
    }
    let mut problems = Vec::new();
    for (k, n) in expected {
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
    problems
}

/// Panics with every problem [`check`] found.
pub fn assert_matches(
    expected: &BTreeMap<Key, usize>,
    findings: &[Finding],
    key: &dyn Fn(&Finding) -> Key,
) {
    let problems = check(expected, findings, key);
    assert!(
        problems.is_empty(),
        "{} mismatches:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn markers_point_at_their_line_or_above() {
    let mut m = BTreeMap::new();
    markers_in(
        "f.rs",
        "a\nb //~ CA203 CA304 because\n//~^^ CA101\nc // not a marker CA999\n",
        &mut m,
    );
    let keys: Vec<(usize, &str)> = m.keys().map(|k| (k.1, k.2.as_str())).collect();
    assert_eq!(keys, [(1, "CA101"), (2, "CA203"), (2, "CA304")]);
}
