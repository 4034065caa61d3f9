//! What `cargo install kubectl-ctrlaudit` gets: the package holds the code, the rule docs and the control-plane
//! scripts it embeds (for `demo`), and none of the tests, fixtures, accuracy corpus, testenv caches or build
//! outputs.
#![allow(clippy::unwrap_used)]

use std::process::Command;

#[test]
fn the_package_holds_what_it_needs_and_nothing_else() {
    let out = Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["package", "--list", "--allow-dirty", "--offline"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
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
    // Every rule doc the binary embeds (`include_str!` in src/rules.rs).
    for rule in ctrlaudit::rules::RULES {
        let doc = format!("rules/{}", rule.doc_file());
        assert!(files.contains(&doc), "{doc} missing");
    }
    let allowed = |f: &str| {
        f.starts_with("src/")
            || f.starts_with("rules/")
            || ctrlaudit::demo::control_plane::FILES
                .iter()
                .any(|(p, _)| f.strip_prefix("testenv/") == Some(*p))
            || matches!(
                f,
                "Cargo.toml"
                    | "Cargo.toml.orig"
                    | "Cargo.lock"
                    | "README.md"
                    | "LICENSE"
                    | ".cargo_vcs_info.json"
            )
    };
    let extra: Vec<&String> = files.iter().filter(|f| !allowed(f)).collect();
    assert!(extra.is_empty(), "not part of the install: {extra:?}");
    // Nothing from a build, a test run or an editor, even under src/.
    for f in &files {
        for bad in ["target/", ".orig.rs", ".rs.bk", "~", ".swp"] {
            assert!(!f.contains(bad), "{f}");
        }
    }
}
