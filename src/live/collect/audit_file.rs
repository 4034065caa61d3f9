//! Reads an audit log file (JSON lines) into an [`AuditSummary`], line by line, on a blocking thread.

use crate::live::audit::AuditFolder;
use crate::live::snapshot::AuditSummary;
use anyhow::Context;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Reads `path`; with `window`, only the events whose time falls in it (a little slack on both sides, as the
/// log's clock and ours are taken at different points of a request).
pub async fn read(
    path: &Path,
    namespace: Option<&str>,
    window: Option<(i64, i64)>,
) -> anyhow::Result<AuditSummary> {
    let path: PathBuf = path.to_path_buf();
    let namespace = namespace.map(str::to_string);
    tokio::task::spawn_blocking(move || read_blocking(&path, namespace.as_deref(), window))
        .await
        .context("the audit log reader panicked")?
}

fn read_blocking(
    path: &Path,
    namespace: Option<&str>,
    window: Option<(i64, i64)>,
) -> anyhow::Result<AuditSummary> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut folder = AuditFolder::new(&path.display().to_string(), namespace);
    if let Some((a, b)) = window {
        folder = folder.within(a - 1_000, b + 1_000);
    }
    let mut reader = std::io::BufReader::new(file);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        match std::str::from_utf8(&buf) {
            Ok(line) => folder.line(line),
            Err(_) => folder.malformed_line(),
        }
    }
    Ok(folder.finish())
}
