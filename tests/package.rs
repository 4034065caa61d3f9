//! What `cargo install kubectl-ctrlaudit` gets: the packages hold the code, the rule docs (in ctrlaudit-core,
//! which embeds them) and the control-plane scripts the binary embeds (for `demo`), and none of the tests,
//! fixtures, accuracy corpus, testenv caches or build outputs.
#![allow(clippy::unwrap_used)]

use std::process::Command;

/// `cargo package --list` of one workspace member.
fn package_list(package: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "package",
            "--list",
            "--allow-dirty",
            "--offline",
            "-p",
            package,
        ])
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
        .map(str::to_string)
        .collect()
}

/// Cargo's own files and the ones every package has.
fn common(f: &str) -> bool {
    matches!(
        f,
        "Cargo.toml"
            | "build.rs"
            | "Cargo.toml.orig"
            | "Cargo.lock"
            | "README.md"
            | "LICENSE"
            | ".cargo_vcs_info.json"
    )
}

/// Nothing from a build, a test run or an editor, even under src/.
fn no_build_or_editor_files(files: &[String]) {
    for f in files {
        for bad in ["target/", ".orig.rs", ".rs.bk", "~", ".swp"] {
            assert!(!f.contains(bad), "{f}");
        }
    }
}

#[test]
fn the_core_package_holds_every_rule_doc() {
    let files = package_list("ctrlaudit-core");
    // Every rule doc the registry embeds (`include_str!` in crates/ctrlaudit-core/src/rules.rs).
    for rule in ctrlaudit::rules::RULES {
        let doc = format!("rules/{}", rule.doc_file());
        assert!(files.contains(&doc), "{doc} missing: {files:?}");
    }
    let extra: Vec<&String> = files
        .iter()
        .filter(|f| !(f.starts_with("src/") || f.starts_with("rules/") || common(f)))
        .collect();
    assert!(extra.is_empty(), "not part of the install: {extra:?}");
    no_build_or_editor_files(&files);
}

#[test]
fn the_scan_package_holds_its_code_only() {
    let files = package_list("ctrlaudit-scan");
    assert!(files.iter().any(|f| f == "src/lib.rs"), "{files:?}");
    let extra: Vec<&String> = files
        .iter()
        .filter(|f| !(f.starts_with("src/") || common(f)))
        .collect();
    assert!(extra.is_empty(), "not part of the install: {extra:?}");
    no_build_or_editor_files(&files);
}

#[test]
fn the_package_holds_what_it_needs_and_nothing_else() {
    let files = package_list("kubectl-ctrlaudit");
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "README.md",
        "LICENSE",
        "src/main.rs",
        "src/lib.rs",
        "src/bench/variants/good.rs",
    ] {
        assert!(
            files.iter().any(|f| f == needed),
            "{needed} missing: {files:?}"
        );
    }
    // What `demo` embeds to build and start its control plane (src/demo/control_plane.rs).
    for (path, _) in ctrlaudit::demo::control_plane::FILES {
        let path = format!("testenv/{path}");
        assert!(files.contains(&path), "{path} missing");
    }
    let allowed = |f: &str| {
        f.starts_with("src/")
            || ctrlaudit::demo::control_plane::FILES
                .iter()
                .any(|(p, _)| f.strip_prefix("testenv/") == Some(*p))
            || common(f)
    };
    let extra: Vec<&String> = files.iter().filter(|f| !allowed(f)).collect();
    assert!(extra.is_empty(), "not part of the install: {extra:?}");
    no_build_or_editor_files(&files);
}
