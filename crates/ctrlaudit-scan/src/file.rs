//! One file from path to model: read (a regular file within the size cap), checked (encoding, nesting depth of
//! every kind), parsed, reduced to a `FileModel` within the time budget, or turned into CA001 findings or a note.
//! An item that is too deep or that syn rejects is set aside and the rest of the file is still analysed, so that
//! one bad item (or text crafted to look like one) hides no finding elsewhere. Never panics on bad input.

use super::depth;
use super::tree::display;
use super::{extract, imports, rules, sema, suppress};
use crate::Note;
use crate::config::Config;
use crate::finding::{Finding, Span};
use crate::regular_file::{self, ReadError};
use aho_corasick::AhoCorasick;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How many items of one file syn may reject before the file as a whole is reported instead.
const MAX_REJECTED_ITEMS: usize = 8;

/// How a single file ended up.
pub(super) enum FileOutcome {
    Analyzed(Box<Analyzed>),
    Finding(Box<Finding>),
    Note(Note),
    Skipped,
}

/// What one file's text gave: its model when any of it parsed, the CA001 findings of what did not, and its
/// suppression comments.
pub(super) struct Analyzed {
    pub(super) model: Option<sema::FileModel>,
    pub(super) ca001: Vec<Finding>,
    pub(super) suppressions: Vec<suppress::Suppression>,
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
    rules::about_source(
        &crate::registry::CA001,
        whole_file_span(file, line, column),
        message,
        "fix the file or exclude it (.gitignore / an ignore file); the rest of the tree was scanned",
    )
}

/// CA001 for a syn error that ends the analysis of the whole file.
fn parse_error(name: &str, e: &syn::Error) -> Finding {
    let s = e.span().start();
    ca001(
        name,
        s.line.max(1),
        s.column + 1,
        format!("syn cannot parse this file: {e}"),
    )
}

fn merge_conflict(text: &str) -> Option<usize> {
    text.lines()
        .position(|l| l.starts_with("<<<<<<< ") || l == "<<<<<<<")
}

/// The lines of an item, for a message.
fn lines_of(text: &str, item: &std::ops::Range<usize>) -> String {
    let (a, b) = (
        depth::line_of(text, item.start + leading_space(&text[item.clone()])),
        depth::line_of(text, item.end.saturating_sub(1).max(item.start)),
    );
    if a >= b {
        format!("line {a}")
    } else {
        format!("lines {a}-{b}")
    }
}

fn leading_space(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

/// The deadline of one file's analysis (`thresholds.max_file_seconds`; none when it is not a finite number).
pub(super) fn deadline(config: &Config) -> Option<Instant> {
    let secs = config.thresholds.max_file_seconds.max(0.0);
    Duration::try_from_secs_f64(secs)
        .ok()
        .and_then(|d| Instant::now().checked_add(d))
}

/// Analyses one file's text: the single pipeline of files on disk, in-memory sources and CRD context.
pub(super) fn analyze_text(
    name: &str,
    text: &str,
    aliases: &BTreeMap<String, String>,
    deadline: Option<Instant>,
    needles: Option<&AhoCorasick>,
) -> Analyzed {
    let suppressions = suppress::parse(text);
    let mut ca001s = Vec::new();
    // Items syn rejected: reported only when the rest of the file could be analysed.
    let mut rejected = Vec::new();
    let measured = depth::measure(text);
    // The prefilter again, on the code alone: a file that names a needle only in its docs or its tests (a
    // dependency's generated types, documented at length) has no fact to give.
    if let Some(needles) = needles
        && measured.too_deep.is_empty()
        && !code_matches(text, &measured, needles)
    {
        return Analyzed {
            model: None,
            ca001: Vec::new(),
            suppressions,
        };
    }
    let mut set_aside: Vec<std::ops::Range<usize>> = Vec::new();
    for t in &measured.too_deep {
        ca001s.push(ca001(
            name,
            depth::line_of(text, t.at),
            1,
            format!(
                "{}: {} not parsed; the rest of the file was analysed",
                t.what,
                lines_of(text, &t.item)
            ),
        ));
        set_aside.push(t.item.clone());
    }
    let model = loop {
        // Test modules are not analysed (`is_test_code`) and doc comments hold no fact: not parsing them is
        // about two fifths less to parse in a published operator.
        let source = if set_aside.is_empty()
            && measured.test_modules.is_empty()
            && measured.doc_comments.is_empty()
        {
            std::borrow::Cow::Borrowed(text)
        } else {
            let blanked: Vec<_> = set_aside
                .iter()
                .chain(&measured.test_modules)
                .chain(&measured.doc_comments)
                .cloned()
                .collect();
            std::borrow::Cow::Owned(depth::blank(text, &blanked))
        };
        match syn::parse_file(&source) {
            Ok(file) => {
                let imports = imports::Imports::from_file(&file);
                let run = extract::Extractor::new(name, &imports, aliases)
                    .with_source(&source)
                    .with_deadline(deadline)
                    .run_within(&file);
                match run {
                    Ok(m) => break Some(m),
                    Err(extract::OverBudget) => {
                        ca001s.push(ca001(
                            name,
                            1,
                            1,
                            "over budget: analysis of this file did not finish within \
                             thresholds.max_file_seconds and was stopped; no finding is reported from it"
                                .into(),
                        ));
                        break None;
                    }
                }
            }
            Err(e) => {
                // A merge conflict spoils the whole file, whichever item syn tripped on first.
                if let Some(i) = merge_conflict(text) {
                    rejected.clear();
                    ca001s.push(ca001(
                        name,
                        i + 1,
                        1,
                        "unresolved merge conflict marker `<<<<<<<`: the file cannot be parsed"
                            .into(),
                    ));
                    break None;
                }
                let s = e.span().start();
                let at = depth::offset_of(text, s.line.max(1), s.column);
                // syn rejects one item: set it aside and parse the rest, up to a few items.
                let item = measured
                    .item_at(at)
                    .filter(|r| !set_aside.contains(r) && set_aside.len() < MAX_REJECTED_ITEMS);
                match item {
                    Some(r) if measured.items.len() > 1 => {
                        rejected.push(ca001(
                            name,
                            s.line.max(1),
                            s.column + 1,
                            format!(
                                "syn cannot parse this item ({}): {e}; the rest of the file was analysed",
                                lines_of(text, &r)
                            ),
                        ));
                        set_aside.push(r);
                    }
                    _ => {
                        // Nothing of the file could be analysed: one finding for the file, none per item.
                        rejected.clear();
                        ca001s.push(parse_error(name, &e));
                        break None;
                    }
                }
            }
        }
    };
    // Spans were turned into line/column numbers: free this thread's copy of the source text.
    proc_macro2::extra::invalidate_current_thread_spans();
    ca001s.append(&mut rejected);
    Analyzed {
        model,
        ca001: ca001s,
        suppressions,
    }
}

/// Analyses one Go file's text (see `golang`): its model, or CA001 where it cannot be parsed or is nested too
/// deep to walk.
pub(super) fn analyze_go_text(name: &str, text: &str) -> Analyzed {
    let suppressions = suppress::parse(text);
    match super::golang::analyze(name, text) {
        Ok(m) => Analyzed {
            model: Some(m),
            ca001: Vec::new(),
            suppressions,
        },
        Err(e) => {
            let (line, column) = e.at();
            Analyzed {
                model: None,
                ca001: vec![ca001(
                    name,
                    line,
                    column,
                    format!("{e}; the rest of the tree was analysed"),
                )],
                suppressions,
            }
        }
    }
}

/// Does the text outside the file's test modules and doc comments hold one of the needles? A needle split by a
/// doc comment or a test module is no name in code.
fn code_matches(text: &str, measured: &depth::Measured, needles: &AhoCorasick) -> bool {
    let mut skipped: Vec<&std::ops::Range<usize>> = measured
        .test_modules
        .iter()
        .chain(&measured.doc_comments)
        .collect();
    skipped.sort_unstable_by_key(|r| r.start);
    let bytes = text.as_bytes();
    let mut from = 0usize;
    for r in skipped {
        if r.start > from && needles.is_match(&bytes[from..r.start.min(bytes.len())]) {
            return true;
        }
        from = from.max(r.end);
    }
    from < bytes.len() && needles.is_match(&bytes[from..])
}

/// Reads, checks, parses and models one file. Never panics on bad input. `read` sees the bytes of a file that
/// could be read (the scan counts lines there, so that no file is read twice for its statistics).
pub(super) fn process_file(
    path: &Path,
    config: &Config,
    needles: &AhoCorasick,
    read: &(dyn Fn(&[u8]) + Sync),
) -> FileOutcome {
    let name = display(path);
    let bytes = match regular_file::read(path, config.thresholds.max_file_bytes) {
        Ok(b) => {
            read(&b);
            b
        }
        Err(ReadError::TooLarge { size, max }) => {
            return FileOutcome::Finding(Box::new(ca001(
                &name,
                1,
                1,
                format!(
                    "file is {size} bytes, over the {max}-byte limit (thresholds.max_file_bytes): not scanned"
                ),
            )));
        }
        Err(e) => return FileOutcome::Finding(Box::new(ca001(&name, 1, 1, e.to_string()))),
    };
    if bytes.is_empty() {
        return FileOutcome::Note(Note {
            subject: name,
            message: "skipped: empty file".into(),
        });
    }
    let go = path.extension().is_some_and(|e| e == "go");
    // The needles are Rust's: a Go file is in a module that requires a controller library, and tree-sitter
    // reads it in a few milliseconds.
    if !go && !needles.is_match(&bytes) {
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
            return FileOutcome::Finding(Box::new(ca001(
                &name,
                line,
                1,
                format!("file is not valid UTF-8 (byte {at}): not scanned"),
            )));
        }
    };
    if go {
        return FileOutcome::Analyzed(Box::new(analyze_go_text(&name, &text)));
    }
    FileOutcome::Analyzed(Box::new(analyze_text(
        &name,
        &text,
        &config.aliases,
        deadline(config),
        Some(needles),
    )))
}

/// The file models of a dependency's `src/`, marked as library code. Files that do not parse are skipped: a
/// dependency's problems are not this scan's.
pub(super) fn library_models(
    root: &Path,
    config: &Config,
    needles: &AhoCorasick,
) -> Vec<sema::FileModel> {
    let files: Vec<PathBuf> = ignore::WalkBuilder::new(root.join("src"))
        .build()
        .flatten()
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files
        .par_iter()
        .filter_map(|p| match process_file(p, config, needles, &|_| {}) {
            FileOutcome::Analyzed(a) => a.model.map(|m| sema::FileModel { library: true, ..m }),
            _ => None,
        })
        .collect()
}
