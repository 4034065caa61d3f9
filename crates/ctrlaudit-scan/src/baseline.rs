//! Baselines: a saved set of findings, so that a codebase can adopt scan in CI today and fail
//! only on findings that are new. Matched by fingerprint (code, file, message), not line.

use crate::finding::{Finding, Subject};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    fingerprint: String,
    code: String,
    location: String,
    message: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct File {
    version: u32,
    findings: Vec<Entry>,
}

/// Writes every finding to `path`.
pub fn write(path: &Path, findings: &[Finding]) -> Result<()> {
    let file = File {
        version: 1,
        findings: findings
            .iter()
            .map(|f| Entry {
                fingerprint: f.fingerprint(),
                code: f.code.clone(),
                location: match &f.subject {
                    Subject::Source(s) => s.file.clone(),
                    other => other.label(),
                },
                message: f.message.clone(),
            })
            .collect(),
    };
    let text = serde_json::to_string_pretty(&file)?;
    std::fs::write(path, text + "\n")
        .with_context(|| format!("cannot write baseline {}", path.display()))
}

/// Drops the findings present in the baseline at `path` (each baseline entry absorbs one finding).
pub fn filter(path: &Path, findings: Vec<Finding>) -> Result<(Vec<Finding>, usize)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read baseline {}", path.display()))?;
    filter_text(&text, path, findings)
}

/// [`filter`] on the baseline's text; `path` names it in errors.
pub fn filter_text(
    text: &str,
    path: &Path,
    findings: Vec<Finding>,
) -> Result<(Vec<Finding>, usize)> {
    let file: File = serde_json::from_str(text).with_context(|| {
        format!(
            "{} is not a ctrlaudit baseline (write one with --write-baseline)",
            path.display()
        )
    })?;
    let mut budget: HashMap<String, usize> = HashMap::new();
    for e in file.findings {
        *budget.entry(e.fingerprint).or_default() += 1;
    }
    let mut kept = Vec::new();
    let mut absorbed = 0;
    for f in findings {
        match budget.get_mut(&f.fingerprint()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                absorbed += 1;
            }
            _ => kept.push(f),
        }
    }
    Ok((kept, absorbed))
}
