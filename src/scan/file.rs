//! One file from path to model: read, checked (size, encoding, nesting), parsed, reduced to a `FileModel`, or
//! turned into a CA001 finding or a note. Never panics on bad input.

use super::tree::display;
use super::{extract, imports, model, rules, suppress};
use crate::config::Config;
use crate::finding::{Finding, Span};
use crate::report::Note;
use aho_corasick::AhoCorasick;
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// Nesting deeper than this is reported instead of parsed (syn recurses per level).
pub(super) const MAX_NESTING: usize = 256;

/// How a single file ended up.
pub(super) enum FileOutcome {
    Model(Box<model::FileModel>, Vec<suppress::Suppression>),
    Finding(Finding),
    Note(Note),
    Skipped,
}

pub(super) fn whole_file_span(file: &str, line: usize, column: usize) -> Span {
    Span {
        file: file.to_string(),
        line,
        column,
        end_line: line,
        end_column: column,
    }
}

pub(super) fn ca001(file: &str, line: usize, column: usize, message: String) -> Finding {
    rules::finding(
        "CA001",
        whole_file_span(file, line, column),
        message,
        "fix the file or exclude it (.gitignore / an ignore file); the rest of the tree was scanned",
    )
}

/// CA001 for a syn error, naming an unresolved merge conflict when that is the cause.
pub(super) fn parse_error(name: &str, text: &str, e: &syn::Error) -> Finding {
    let conflict = text
        .lines()
        .position(|l| l.starts_with("<<<<<<< ") || l == "<<<<<<<");
    if let Some(i) = conflict {
        return ca001(
            name,
            i + 1,
            1,
            "unresolved merge conflict marker `<<<<<<<`: the file cannot be parsed".into(),
        );
    }
    let s = e.span().start();
    ca001(
        name,
        s.line.max(1),
        s.column + 1,
        format!("syn cannot parse this file: {e}"),
    )
}

/// Deepest bracket nesting, ignoring string and char literals and comments only roughly:
/// enough to keep syn's recursion in bounds.
pub(super) fn max_nesting(text: &str) -> usize {
    let mut depth: usize = 0;
    let mut max = 0;
    for b in text.bytes() {
        match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Reads, checks, parses and models one file. Never panics on bad input.
pub(super) fn process_file(path: &Path, config: &Config, needles: &AhoCorasick) -> FileOutcome {
    let name = display(path);
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            return FileOutcome::Finding(ca001(&name, 1, 1, format!("cannot read file: {e}")));
        }
    };
    if meta.len() == 0 {
        return FileOutcome::Note(Note {
            subject: name,
            message: "skipped: empty file".into(),
        });
    }
    if meta.len() > config.thresholds.max_file_bytes {
        return FileOutcome::Finding(ca001(
            &name,
            1,
            1,
            format!(
                "file is {} bytes, over the {}-byte limit (thresholds.max_file_bytes): not scanned",
                meta.len(),
                config.thresholds.max_file_bytes
            ),
        ));
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            return FileOutcome::Finding(ca001(&name, 1, 1, format!("cannot read file: {e}")));
        }
    };
    if !needles.is_match(&bytes) {
        return FileOutcome::Skipped;
    }
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return FileOutcome::Note(Note {
            subject: name,
            message: "skipped: binary file".into(),
        });
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let valid = &e.as_bytes()[..at];
            let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
            return FileOutcome::Finding(ca001(
                &name,
                line,
                1,
                format!("file is not valid UTF-8 (byte {at}): not scanned"),
            ));
        }
    };
    let depth = max_nesting(&text);
    if depth > MAX_NESTING {
        return FileOutcome::Finding(ca001(
            &name,
            1,
            1,
            format!("brackets nest {depth} deep, over the limit of {MAX_NESTING}: not parsed"),
        ));
    }
    let parsed = syn::parse_file(&text);
    let outcome = match parsed {
        Err(e) => FileOutcome::Finding(parse_error(&name, &text, &e)),
        Ok(file) => {
            let imports = imports::Imports::from_file(&file);
            let mut m = extract::Extractor::new(&name, &imports, &config.aliases).run(&file);
            extract::mark_namespaced_builders(&mut m, &file, &name);
            FileOutcome::Model(Box::new(m), suppress::parse(&text))
        }
    };
    // Spans were turned into line/column numbers: free this thread's copy of the source text.
    proc_macro2::extra::invalidate_current_thread_spans();
    outcome
}

/// The file models of a dependency's `src/`, marked as library code. Files that do not parse are skipped: a
/// dependency's problems are not this scan's.
pub(super) fn library_models(
    root: &Path,
    config: &Config,
    needles: &AhoCorasick,
) -> Vec<model::FileModel> {
    let files: Vec<PathBuf> = ignore::WalkBuilder::new(root.join("src"))
        .build()
        .flatten()
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files
        .par_iter()
        .filter_map(|p| match process_file(p, config, needles) {
            FileOutcome::Model(m, _) => Some(model::FileModel {
                library: true,
                ..*m
            }),
            _ => None,
        })
        .collect()
}
