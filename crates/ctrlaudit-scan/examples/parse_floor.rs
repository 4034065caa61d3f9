//! The parse floor of `benches/scan_floor.sh`: what reading and parsing a tree costs with scan's own pieces and
//! nothing else — the same `ignore` walk, every `.rs` file read and handed to `syn::parse_file` on rayon's
//! threads, the syntax tree dropped. No crate selection, no prefilter, no model, no rule. The floor parses what
//! scan does not: test modules (`#[cfg(test)] mod`) and doc comments, both blanked by scan before it parses, and
//! `tests/` files, so part of scan's distance to it is the text it skips.
//!
//! Usage: cargo run --release -p ctrlaudit-scan --example parse_floor -- PATH...

use rayon::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

// The same allocator as the kubectl-ctrlaudit binary: the floor differs from scan only by the analysis.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        eprintln!("usage: parse_floor PATH...");
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
                .filter(|p| p.extension().is_some_and(|x| x == "rs")),
        );
    }
    let (lines, failed) = (AtomicUsize::new(0), AtomicUsize::new(0));
    // scan's threads get a large stack for deep files (its depth budget); the floor parses the same files.
    let pool = rayon::ThreadPoolBuilder::new().stack_size(64 << 20).build();
    let Ok(pool) = pool else {
        eprintln!("parse_floor: cannot start worker threads");
        std::process::exit(2);
    };
    pool.install(|| {
        files.par_iter().for_each(|p| {
            let Ok(text) = std::fs::read_to_string(p) else {
                failed.fetch_add(1, Ordering::Relaxed);
                return;
            };
            lines.fetch_add(text.lines().count(), Ordering::Relaxed);
            if syn::parse_file(&text).is_err() {
                failed.fetch_add(1, Ordering::Relaxed);
            }
        });
    });
    println!(
        "{} files, {} lines, {} not parsed",
        files.len(),
        lines.into_inner(),
        failed.into_inner()
    );
}
