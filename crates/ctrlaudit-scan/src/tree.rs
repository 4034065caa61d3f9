//! Which files a scan sees and which crate each belongs to: the walk (ignore files, symlink loops, unreadable
//! entries as notes), the crate roots, and kube's own crates.

use super::ScanError;
use crate::Note;
use crate::config::PathGlobs;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub(super) struct Walked {
    pub(super) rust: Vec<PathBuf>,
    pub(super) go: Vec<PathBuf>,
    pub(super) yaml: Vec<PathBuf>,
    pub(super) notes: Vec<Note>,
    /// Files of integration tests (`tests/`), which are not judged (see [`unit_of`]).
    pub(super) tests: usize,
    pub(super) files_seen: usize,
    /// Paths `exclude` in `ctrlaudit.toml` left out (a directory counts once, whatever it holds).
    pub(super) excluded: Vec<String>,
}

pub(super) fn display(p: &Path) -> String {
    let s = p.to_string_lossy().replace('\\', "/");
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}

pub(super) fn walk(paths: &[PathBuf], exclude: &PathGlobs) -> Result<Walked, ScanError> {
    let mut w = Walked {
        rust: Vec::new(),
        go: Vec::new(),
        yaml: Vec::new(),
        notes: Vec::new(),
        tests: 0,
        files_seen: 0,
        excluded: Vec::new(),
    };
    let excluded = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    for p in paths {
        if std::fs::symlink_metadata(p).is_err() {
            return Err(ScanError::MissingPath(display(p)));
        }
    }
    for root in paths {
        let mut builder = ignore::WalkBuilder::new(root);
        builder.follow_links(true).hidden(true).git_ignore(true);
        if !exclude.is_empty() {
            // An excluded directory is not descended into: its files are neither read nor counted one by one.
            let abs_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
            let (root, globs, out) = (root.clone(), exclude.clone(), excluded.clone());
            builder.filter_entry(move |e| {
                let rel = e.path().strip_prefix(&root).unwrap_or(e.path());
                let out_of_scope =
                    !rel.as_os_str().is_empty() && globs.matches(&abs_root.join(rel));
                if out_of_scope && let Ok(mut out) = out.lock() {
                    out.push(display(e.path()));
                }
                !out_of_scope
            });
        }
        let walker = builder.build();
        for entry in walker {
            match entry {
                Ok(e) => {
                    if !e.file_type().is_some_and(|t| t.is_file()) {
                        // A FIFO, socket or device named like a source file (or a symlink to one) is never
                        // opened: reading it would block or never end.
                        let special = e
                            .file_type()
                            .is_some_and(|t| !t.is_dir() && !t.is_symlink());
                        let named = matches!(
                            e.path().extension().and_then(|x| x.to_str()),
                            Some("rs" | "go" | "yaml" | "yml")
                        );
                        if special && named {
                            w.notes.push(Note {
                                subject: display(e.path()),
                                message: "skipped: not a regular file (a FIFO, socket or device)"
                                    .into(),
                            });
                        }
                        continue;
                    }
                    w.files_seen += 1;
                    let path = e.into_path();
                    match path.extension().and_then(|x| x.to_str()) {
                        Some("rs") => w.rust.push(path),
                        Some("go") => w.go.push(path),
                        Some("yaml" | "yml") => w.yaml.push(path),
                        _ => {}
                    }
                }
                Err(err) => w.notes.push(Note {
                    subject: err_path(&err).unwrap_or_else(|| display(root)),
                    message: format!("skipped: {}", err_text(&err)),
                }),
            }
        }
    }
    if let Ok(mut out) = excluded.lock() {
        w.excluded = std::mem::take(&mut *out);
    }
    w.excluded.sort();
    w.excluded.dedup();
    w.rust.sort();
    w.rust.dedup();
    w.go.sort();
    w.go.dedup();
    w.yaml.sort();
    w.yaml.dedup();
    Ok(w)
}

pub(super) fn err_path(e: &ignore::Error) -> Option<String> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(display(path)),
        ignore::Error::WithDepth { err, .. } => err_path(err),
        ignore::Error::Loop { child, .. } => Some(display(child)),
        _ => None,
    }
}

pub(super) fn err_text(e: &ignore::Error) -> String {
    match e {
        ignore::Error::Loop { ancestor, .. } => {
            format!("symlink loop back to {}", display(ancestor))
        }
        ignore::Error::WithPath { err, .. } | ignore::Error::WithDepth { err, .. } => err_text(err),
        other => other.to_string(),
    }
}

/// The nearest directory at or above `dir` with a Cargo.toml.
pub(super) fn cargo_root(
    dir: &Path,
    cache: &mut HashMap<PathBuf, Option<PathBuf>>,
) -> Option<PathBuf> {
    if let Some(r) = cache.get(dir) {
        return r.clone();
    }
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut cur = Some(abs.as_path());
    let mut found = None;
    while let Some(d) = cur {
        if d.join("Cargo.toml").is_file() {
            found = Some(d.to_path_buf());
            break;
        }
        cur = d.parent();
    }
    cache.insert(dir.to_path_buf(), found.clone());
    found
}

/// The compilation unit a Rust file belongs to, as cargo builds it: `src/**` (and the crate root
/// directory) form the crate; each entry of `examples/` and `benches/` is a crate of its own; any
/// other file (fixtures, snippets) stands alone. Integration tests (`tests/`) are test code, like
/// `#[cfg(test)]`, and are not judged: `None`.
pub(super) fn unit_of(
    file: &Path,
    cache: &mut HashMap<PathBuf, Option<PathBuf>>,
) -> Option<PathBuf> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let abs_file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let Some(root) = cargo_root(dir, cache) else {
        return Some(abs_file);
    };
    let Ok(rel) = abs_file.strip_prefix(&root) else {
        return Some(abs_file);
    };
    let parts: Vec<_> = rel.components().collect();
    let unit = match parts
        .first()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .as_deref()
    {
        Some("tests") if parts.len() >= 2 => return None,
        Some("src" | "build.rs") => root,
        Some(_) if parts.len() == 1 => root,
        Some(d @ ("examples" | "benches")) if parts.len() >= 2 => {
            root.join(d).join(parts[1].as_os_str())
        }
        _ => abs_file,
    };
    Some(unit)
}
