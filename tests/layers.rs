//! The module graph points down: `main` → `cli` → the lenses (`scan`, `live`, `bench`) → the shared leaves
//! (report, connect, exit, …) → ctrlaudit-core (rules, finding, config, policy, …). Read from the `crate::` paths
//! of every source file, so a lens that reaches back into `cli`, or into another lens, fails here rather than in
//! review. Between crates the compiler keeps the direction; what it cannot see, which third-party crates each
//! one pulls in, `cargo tree` shows and the last tests check.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module of the library and its layer; a module may use its own layer's leaves and any layer
/// below it, never one above. Lenses are the exception within their layer: they do not use each other.
const LAYERS: &[(&str, u8)] = &[
    ("cli", 1),
    // kubectl's plugin completion: answers from the clap command that cli defines.
    ("complete", 1),
    // The demo composes two lenses, as cli dispatches to them.
    ("demo", 1),
    ("scan", 2),
    ("live", 2),
    ("bench", 2),
    ("report", 3),
    ("connect", 3),
    ("fetch", 3),
    ("endpoint", 3),
    ("output", 3),
    ("exit", 4),
    // ctrlaudit-core's modules, re-exported at the root (`pub use ctrlaudit_core::…`): below everything.
    ("rules", 5),
    ("finding", 5),
    ("config", 5),
    ("policy", 5),
    ("duration", 5),
    ("regular_file", 5),
];
const LENSES: [&str; 3] = ["scan", "live", "bench"];

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

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

/// The top-level module a file belongs to (`live` for src/live/collect/mod.rs), `None` for lib.rs and main.rs.
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    match first.strip_suffix(".rs") {
        Some("lib" | "main") => None,
        Some(m) => Some(m.to_string()),
        None => Some(first),
    }
}

/// The top-level modules named by `crate::NAME` paths (in `use` lines and in expressions alike).
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `ctrlaudit_crate::`
        }
        let rest = &text[i + "crate::".len()..];
        match rest.strip_prefix('{') {
            // `crate::{a, b::c, d::{e, f}}`: the first name of each top-level item.
            Some(group) => {
                for item in top_level_items(group) {
                    let name = leading_ident(item.trim());
                    if !name.is_empty() && name != "self" {
                        out.insert(name);
                    }
                }
            }
            None => {
                let name = leading_ident(rest);
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
    out
}

fn leading_ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The comma-separated items of a `{…}` group up to its closing brace, nested groups kept whole.
fn top_level_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items
}

fn layer(module: &str) -> u8 {
    LAYERS
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, l)| *l)
        .unwrap_or_else(|| panic!("module `{module}` has no layer in tests/layers.rs: add it"))
}

#[test]
fn every_module_of_the_library_has_a_layer() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    for line in lib.lines() {
        if let Some(m) = line.trim().strip_prefix("pub mod ") {
            layer(m.trim_end_matches(';'));
        }
    }
}

#[test]
fn modules_only_use_what_lies_below_them() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut wrong: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = module_of(file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for used in crate_paths(&text) {
            if used == module || !LAYERS.iter().any(|(m, _)| *m == used) {
                continue;
            }
            let upward = layer(&used) < layer(&module);
            let across_lenses =
                LENSES.contains(&module.as_str()) && LENSES.contains(&used.as_str());
            if upward || across_lenses {
                wrong
                    .entry(file.strip_prefix(src()).unwrap().display().to_string())
                    .or_default()
                    .insert(used);
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "files using a module above them or another lens: {wrong:#?}"
    );
}

#[test]
fn only_main_exits_the_process() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let exits: Vec<String> = files
        .iter()
        .filter(|f| !f.ends_with("main.rs"))
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .contains("process::exit")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(exits.is_empty(), "process::exit outside main.rs: {exits:?}");
}

#[test]
fn the_checker_sees_a_path_up_and_across() {
    let uses = crate_paths(
        "use crate::cli::Cli;\nlet x = crate::live::observe();\nuse crate::{report::{self, emit}, self};",
    );
    assert_eq!(
        uses,
        ["cli", "live", "report"]
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>()
    );
    assert!(layer("cli") < layer("live") && layer("live") < layer("report"));
}

/// The crates `package` links: `cargo tree`'s normal dependencies without proc-macros (serde's derive runs syn
/// at build time; nothing of it is linked).
fn dependency_names(package: &str) -> BTreeSet<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal,no-proc-macro",
            "--prefix",
            "none",
            "--format",
            "{p}",
            "-p",
        ])
        .arg(package)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn scan_links_no_cluster_client_or_async_runtime() {
    let deps = dependency_names("ctrlaudit-scan");
    assert!(deps.contains("syn"), "the checker reads the tree: {deps:?}");
    for banned in [
        "tokio",
        "kube",
        "kube-client",
        "k8s-openapi",
        "hyper",
        "plotters",
        "maud",
    ] {
        assert!(!deps.contains(banned), "ctrlaudit-scan depends on {banned}");
    }
}

#[test]
fn core_links_no_parser_either() {
    let deps = dependency_names("ctrlaudit-core");
    assert!(
        deps.contains("serde"),
        "the checker reads the tree: {deps:?}"
    );
    for banned in [
        "tokio",
        "kube",
        "kube-client",
        "hyper",
        "syn",
        "proc-macro2",
        "clap",
    ] {
        assert!(!deps.contains(banned), "ctrlaudit-core depends on {banned}");
    }
}

/// A file a newcomer can read in one sitting: none in ctrlaudit-scan over 600 lines (tests live beside their
/// module, `depth/tests.rs`, when they would push it over).
#[test]
fn no_scan_source_file_over_600_lines() {
    let mut files = Vec::new();
    rust_files(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/ctrlaudit-scan/src"),
        &mut files,
    );
    assert!(files.len() > 20, "the checker reads the tree: {files:?}");
    let long: Vec<(String, usize)> = files
        .iter()
        .map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (f.display().to_string(), n)
        })
        .filter(|(_, n)| *n > 600)
        .collect();
    assert!(long.is_empty(), "split these: {long:?}");
}

/// The code of a scan source file outside its `#[cfg(test)]` module (tests sit at the end of a file).
fn non_test_code(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// `sema` is what every front end produces (Rust today, Go next): nothing in it may name a Rust parser's type.
#[test]
fn sema_names_no_front_end_type() {
    let mut files = Vec::new();
    rust_files(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/ctrlaudit-scan/src/sema"),
        &mut files,
    );
    assert!(!files.is_empty(), "the checker reads sema");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for banned in [
            "syn::",
            "proc_macro2",
            "quote::",
            "use syn",
            "ToTokens",
            "tree_sitter",
        ] {
            assert!(
                !text.contains(banned),
                "{} names `{banned}`: sema's facts are free of any front end's types",
                f.display()
            );
        }
    }
}

/// Stored text is never turned back into syntax: a fact the front end could not type stays unknown.
#[test]
fn no_code_text_is_parsed_again_outside_tests() {
    let mut files = Vec::new();
    rust_files(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/ctrlaudit-scan/src"),
        &mut files,
    );
    let parsing: Vec<String> = files
        .iter()
        .filter(|f| non_test_code(f).contains("parse_str"))
        .map(|f| f.display().to_string())
        .collect();
    assert!(parsing.is_empty(), "these parse text again: {parsing:?}");
}
