//! scan's text formats against golden files: `full` (rustc-style snippets, scan's default) and `concise` (one
//! clickable line per finding). `CTRLAUDIT_BLESS=1 cargo test --test scan_output` rewrites the golden files.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Fixtures with findings of several rules and severities, related places in the same file and in another file,
/// and crates of two files. Single fixtures, not folders, so that a new fixture does not change the golden files.
const TARGETS: [&str; 5] = [
    "fixtures/scan/CA202-volatile-value-written-every-reconcile/bad_annotation_timestamp.rs",
    "fixtures/scan/CA202-volatile-value-written-every-reconcile/bad_helper_in_other_file",
    "fixtures/scan/CA101-status-written-through-main-resource/bad_crd_in_other_file",
    "fixtures/scan/CA203-polling-requeue/bad_requeue_5s.rs",
    "fixtures/scan/CA203-polling-requeue/bad_not_ready_branch.rs",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs scan on [`TARGETS`] from the repository root (paths in the output stay relative) with `extra` flags.
fn scan(extra: &[&str]) -> (String, Option<i32>) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
        .current_dir(root())
        .arg("scan")
        .args(TARGETS)
        .args(extra)
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    (normalize(&text), out.status.code())
}

/// The stats line's wall time is the one thing that changes from run to run.
fn normalize(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("time: ") {
            Some(i) if l.starts_with("rust files: ") => format!("{}time: <elapsed>", &l[..i]),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn check_golden(name: &str, got: &str) {
    let path = root().join("tests/golden").join(name);
    if std::env::var_os("CTRLAUDIT_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (CTRLAUDIT_BLESS=1 writes it)", path.display()));
    if want != got {
        let diff = similar::TextDiff::from_lines(want.as_str(), got)
            .unified_diff()
            .header(&format!("{} (golden)", path.display()), "this run")
            .to_string();
        panic!("scan output differs from {}:\n{diff}", rel(&path));
    }
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

#[test]
fn full_matches_its_golden_file_and_is_the_default() {
    let (full, code) = scan(&["-o", "full"]);
    assert_eq!(code, Some(1), "findings at warning or above exit 1");
    check_golden("scan-full.txt", &full);
    let (default, _) = scan(&[]);
    assert_eq!(default, full, "scan's default format is full");
    // Every finding is a diagnostic with a location line, and the span is underlined in the source.
    let findings = full.matches("\n  --> ").count() + usize::from(full.starts_with("  --> "));
    assert!(findings >= 5, "{full}");
    assert!(full.contains("^^^"), "{full}");
    assert!(!full.contains('\x1b'), "no colour into a pipe");
}

#[test]
fn concise_matches_its_golden_file_one_line_per_finding() {
    let (concise, code) = scan(&["-o", "concise"]);
    assert_eq!(code, Some(1));
    check_golden("scan-concise.txt", &concise);
    let (full, _) = scan(&["-o", "full"]);
    let diagnostics = full.matches("  --> ").count();
    let lines: Vec<&str> = concise
        .lines()
        .take_while(|l| l.starts_with("fixtures/"))
        .collect();
    assert_eq!(lines.len(), diagnostics, "{concise}");
    for l in lines {
        // path:line:col: CODE message
        let mut parts = l.splitn(4, ':');
        let (path, line, col, rest) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        assert!(root().join(path).is_file(), "{l}");
        assert!(
            line.parse::<usize>().is_ok() && col.parse::<usize>().is_ok(),
            "{l}"
        );
        assert!(
            rest.starts_with(" CA") && rest[1..6].bytes().skip(2).all(|b| b.is_ascii_digit()),
            "{l}"
        );
    }
}

#[test]
fn colour_on_request_marks_the_code() {
    let (concise, _) = scan(&["-o", "concise", "--color", "always"]);
    assert!(concise.contains("\x1b[1m\x1b[31mCA202\x1b[0m"), "{concise}");
    let (full, _) = scan(&["-o", "full", "--color", "always"]);
    assert!(full.contains('\x1b'), "{full}");
}
