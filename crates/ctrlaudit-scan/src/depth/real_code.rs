//! The budget against real code: every Rust file of the crates in Cargo's registry on this machine (the
//! dependencies of this project, 300-odd published crates, generated code included) and of this repository.

use super::*;

fn rust_files(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect()
}

#[test]
fn real_code_stays_under_the_budget() {
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")))
        .expect("a home");
    let mut files = rust_files(&home.join("registry").join("src"));
    // This workspace's own sources, every crate's.
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for dir in [
        "src",
        "crates/ctrlaudit-core/src",
        "crates/ctrlaudit-scan/src",
    ] {
        files.extend(rust_files(&workspace.join(dir)));
    }
    let (mut chain, mut brackets, mut over) = ((0, String::new()), (0, String::new()), Vec::new());
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let m = measure(&text);
        if m.max_chain > chain.0 {
            chain = (m.max_chain, f.display().to_string());
        }
        if m.max_brackets > brackets.0 {
            brackets = (m.max_brackets, f.display().to_string());
        }
        // Files syn cannot parse anyway (test inputs of parsers) do not count.
        if !m.too_deep.is_empty() && syn::parse_file(&text).is_ok() {
            over.push(format!("{}: {:?}", f.display(), m.too_deep[0].what));
        }
    }
    eprintln!(
        "{} files; deepest chain {chain:?}; deepest brackets {brackets:?}",
        files.len()
    );
    assert!(files.len() > 50, "{} files", files.len());
    assert!(over.is_empty(), "real files over the budget: {over:#?}");
}
