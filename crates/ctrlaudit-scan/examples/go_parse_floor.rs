//! The Go parse floor of `benches/scan_go_floor.sh`: what reading and parsing a tree of Go costs with scan's own
//! pieces and nothing else — the same `ignore` walk, every `.go` file read and parsed by tree-sitter-go on rayon's
//! threads, the tree dropped. No module selection, no model, no rule. The floor parses what scan does not judge
//! (`_test.go`, `zz_generated.*`, `vendor/`), so part of scan's distance to it is the text it skips.
//!
//! Usage: cargo run --release -p ctrlaudit-scan --example go_parse_floor -- PATH...

use rayon::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

// The same allocator as the kubectl-ctrlaudit binary: the floor differs from scan only by the analysis.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        eprintln!("usage: go_parse_floor PATH...");
        std::process::exit(2);
    }
    let mut files = Vec::new();
    for root in &paths {
        // As scan walks (tree.rs): ignore files honoured, hidden entries skipped, links followed.
        let walker = ignore::WalkBuilder::new(root)
            .follow_links(true)
            .hidden(true)
            .git_ignore(true)
            .build();
        files.extend(
            walker
                .flatten()
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .map(ignore::DirEntry::into_path)
                .filter(|p| p.extension().is_some_and(|x| x == "go")),
        );
    }
    let (lines, failed) = (AtomicUsize::new(0), AtomicUsize::new(0));
    files.par_iter().for_each_init(
        || {
            let mut p = tree_sitter::Parser::new();
            let loaded = p.set_language(&tree_sitter_go::LANGUAGE.into()).is_ok();
            (p, loaded)
        },
        |(parser, loaded), p| {
            let Ok(text) = std::fs::read_to_string(p) else {
                failed.fetch_add(1, Ordering::Relaxed);
                return;
            };
            lines.fetch_add(text.lines().count(), Ordering::Relaxed);
            if !*loaded
                || parser
                    .parse(&text, None)
                    .is_none_or(|t| t.root_node().has_error())
            {
                failed.fetch_add(1, Ordering::Relaxed);
            }
        },
    );
    println!(
        "{} files, {} lines, {} not parsed",
        files.len(),
        lines.into_inner(),
        failed.into_inner()
    );
}
