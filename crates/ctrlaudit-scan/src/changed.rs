//! `--new-from-rev` and `--new-from-merge-base` (golangci-lint's names): the lines changed since a git
//! revision, and the findings on them, so that a big codebase adopts the gate on what a change touches. Git is
//! asked at the edge (`git diff` of the working tree against the revision, and the untracked files); pure code
//! parses what it prints and judges each finding by its location (its other evidence may lie anywhere).

use crate::finding::Finding;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Git could not say what changed.
#[derive(Debug, thiserror::Error)]
pub enum ChangedError {
    #[error("cannot run git (needed by --new-from-rev): {0}")]
    Spawn(std::io::Error),
    #[error("`git {args}` failed: {stderr}")]
    Git { args: String, stderr: String },
}

/// The lines of each file that are new since a revision: changed or added lines of tracked files, and every
/// line of untracked ones.
#[derive(Debug, Default)]
pub struct ChangedLines {
    /// The repository's top directory, without symlinks.
    root: PathBuf,
    /// Path relative to `root` → inclusive line ranges.
    lines: HashMap<PathBuf, Vec<(usize, usize)>>,
    /// Paths relative to `root` that are new as a whole.
    untracked: Vec<PathBuf>,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, ChangedError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(ChangedError::Spawn)?;
    if !out.status.success() {
        return Err(ChangedError::Git {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The directory git is asked from: `path` itself, or the directory that holds it.
fn dir_of(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.to_path_buf()
    } else {
        match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }
}

/// The common ancestor of `HEAD` and `branch`, as `--new-from-merge-base` starts from it.
pub fn merge_base(path: &Path, branch: &str) -> Result<String, ChangedError> {
    Ok(git(&dir_of(path), &["merge-base", "HEAD", branch])?
        .trim()
        .to_string())
}

/// What changed in the repository holding `path` since `rev`, working tree included (as golangci-lint counts
/// it: what is not committed yet is new too).
pub fn since(path: &Path, rev: &str) -> Result<ChangedLines, ChangedError> {
    let dir = dir_of(path);
    let top = git(&dir, &["rev-parse", "--show-toplevel"])?;
    let root = PathBuf::from(top.trim());
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    // Prefixes and quoting fixed here, whatever the user's git configuration says (`diff.noprefix`,
    // `core.quotepath`); `--` keeps a revision from being read as a path.
    let diff = git(
        &root,
        &[
            "-c",
            "core.quotepath=off",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--unified=0",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            rev,
            "--",
        ],
    )?;
    let untracked = git(&root, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    Ok(ChangedLines {
        root,
        lines: parse_diff(&diff),
        untracked: untracked
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .collect(),
    })
}

/// The new-side line ranges of a `git diff --unified=0`, per file (deleted files have none). A hunk's lines
/// are counted off by its header, so that an added line that reads like a header (`+++ x`) stays content.
pub fn parse_diff(diff: &str) -> HashMap<PathBuf, Vec<(usize, usize)>> {
    let mut out: HashMap<PathBuf, Vec<(usize, usize)>> = HashMap::new();
    let mut current: Option<PathBuf> = None;
    // Content lines of the current hunk still to come.
    let mut pending = 0usize;
    for line in diff.lines() {
        if pending > 0 {
            // `\ No newline at end of file` follows a content line and is not one.
            if !line.starts_with('\\') {
                pending -= 1;
            }
            continue;
        }
        if let Some(target) = line.strip_prefix("+++ ") {
            let target = target.trim_end();
            // A path with a tab, newline, quote or backslash is quoted even with quotepath off.
            let target = target
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .map_or_else(|| target.to_string(), unquote);
            current = target.strip_prefix("b/").map(PathBuf::from);
        } else if let Some(hunk) = line.strip_prefix("@@ ")
            && let Some((old, new)) = hunk_counts(hunk)
        {
            pending = old.1 + new.1;
            if let Some(path) = &current
                && new.1 > 0
            {
                out.entry(path.clone())
                    .or_default()
                    .push((new.0, new.0 + new.1 - 1));
            }
        }
    }
    out
}

/// `-a,b +c,d @@ …` → `((a, b), (c, d))`, a count of 1 where it is left out.
fn hunk_counts(hunk: &str) -> Option<((usize, usize), (usize, usize))> {
    let side = |sign: char| -> Option<(usize, usize)> {
        let w = hunk.split_whitespace().find(|w| w.starts_with(sign))?;
        let mut parts = w[1..].splitn(2, ',');
        let start = parts.next()?.parse().ok()?;
        let count = match parts.next() {
            Some(c) => c.parse().ok()?,
            None => 1,
        };
        Some((start, count))
    };
    Some((side('-')?, side('+')?))
}

/// Undoes git's C-style quoting of a path (`\t`, `\n`, `\"`, `\\`, octal bytes).
fn unquote(s: &str) -> String {
    let mut bytes = Vec::with_capacity(s.len());
    let mut it = s.bytes().peekable();
    while let Some(b) = it.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match it.next() {
            Some(b't') => bytes.push(b'\t'),
            Some(b'n') => bytes.push(b'\n'),
            Some(d @ b'0'..=b'7') => {
                let mut v = u32::from(d - b'0');
                for _ in 0..2 {
                    if let Some(n @ b'0'..=b'7') = it.peek().copied() {
                        v = v * 8 + u32::from(n - b'0');
                        it.next();
                    }
                }
                bytes.push(u8::try_from(v).unwrap_or(b'?'));
            }
            Some(other) => bytes.push(other),
            None => bytes.push(b'\\'),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

impl ChangedLines {
    /// Whether the finding's location (any line of it) is new. A finding with no place in a file, or in a
    /// file outside the repository, is kept: this filter cannot say it is old.
    pub fn is_new(&self, f: &Finding, cwd: &Path) -> bool {
        let Some(span) = f.subject.span() else {
            return true;
        };
        let path = cwd.join(&span.file);
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        let Ok(rel) = path.strip_prefix(&self.root) else {
            return true;
        };
        if self.untracked.iter().any(|u| u == rel) {
            return true;
        }
        let (first, last) = (span.line, span.end_line.max(span.line));
        self.lines
            .get(rel)
            .is_some_and(|ranges| ranges.iter().any(|(a, b)| *a <= last && first <= *b))
    }

    /// The findings on new lines, and how many were on old ones.
    pub fn filter(&self, findings: Vec<Finding>) -> (Vec<Finding>, usize) {
        let cwd = std::env::current_dir()
            .and_then(std::fs::canonicalize)
            .unwrap_or_default();
        let before = findings.len();
        let kept: Vec<Finding> = findings
            .into_iter()
            .filter(|f| self.is_new(f, &cwd))
            .collect();
        let old = before - kept.len();
        (kept, old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_side_ranges_of_a_zero_context_diff() {
        let diff = "diff --git a/src/main.rs b/src/main.rs\n\
            index 1..2 100644\n\
            --- a/src/main.rs\n\
            +++ b/src/main.rs\n\
            @@ -10 +10 @@ fn f() {\n\
            -old\n\
            +new\n\
            @@ -20,0 +21,3 @@\n\
            +a\n+b\n+c\n\
            @@ -40,2 +43,0 @@\n\
            -gone\n-gone\n\
            diff --git a/old.rs b/old.rs\n\
            deleted file mode 100644\n\
            --- a/old.rs\n\
            +++ /dev/null\n\
            @@ -1,3 +0,0 @@\n\
            -x\n\
            diff --git \"a/sp ace\\tx.rs\" \"b/sp ace\\tx.rs\"\n\
            --- \"a/sp ace\\tx.rs\"\n\
            +++ \"b/sp ace\\tx.rs\"\n\
            @@ -1 +1,2 @@\n\
            -y\n\
            \\ No newline at end of file\n\
            +y\n\
            ++++ b/not-a-header.rs\n\
            diff --git a/z.rs b/z.rs\n\
            --- a/z.rs\n\
            +++ b/z.rs\n\
            @@ -5 +5 @@\n\
            -a\n\
            +b\n";
        let got = parse_diff(diff);
        assert_eq!(got[Path::new("src/main.rs")], [(10, 10), (21, 23)]);
        assert!(!got.contains_key(Path::new("old.rs")));
        assert_eq!(got[Path::new("sp ace\tx.rs")], [(1, 2)]);
        assert!(!got.contains_key(Path::new("not-a-header.rs")));
        assert_eq!(got[Path::new("z.rs")], [(5, 5)]);
        assert_eq!(unquote("caf\\303\\251.rs"), "café.rs");
    }
}
