//! The output flags every command shares (`-o`, `--output-file`, `--fail-on`, `--color`) and the one step
//! that renders a lens's findings to stdout and to each requested file.

use super::{Format, Note, Report, Sources};
use crate::exit::Status;
use crate::finding::{Finding, Severity, Suppressed};
use anyhow::{Context, Result};
use clap::ValueEnum;
use std::io::IsTerminal;

/// Output flags, accepted before or after the command.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Output format on stdout [default: full for scan, table for the other commands].
    #[arg(short = 'o', long = "output", global = true, value_enum)]
    pub output: Option<Format>,
    /// Also write FORMAT to PATH (repeatable), e.g. `--output-file sarif=ctrlaudit.sarif`; a bare PATH gets the
    /// `-o` format (or the command's default).
    #[arg(long = "output-file", global = true, value_name = "[FORMAT=]PATH")]
    pub output_files: Vec<String>,
    /// Exit 1 when a finding is at or above this severity.
    #[arg(long, global = true, value_enum, default_value_t = FailOn::Warning)]
    pub fail_on: FailOn,
    /// Colour in the table output.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
}

impl Default for OutputArgs {
    fn default() -> Self {
        Self {
            output: None,
            output_files: Vec::new(),
            fail_on: FailOn::Warning,
            color: Color::Auto,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
    Never,
}

impl FailOn {
    /// The flag's value as typed: `error`, `warning`, `info`, `never`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailOn::Error => "error",
            FailOn::Warning => "warning",
            FailOn::Info => "info",
            FailOn::Never => "never",
        }
    }

    pub fn trips(self, s: Severity) -> bool {
        match self {
            FailOn::Error => s >= Severity::Error,
            FailOn::Warning => s >= Severity::Warning,
            FailOn::Info => true,
            FailOn::Never => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

impl OutputArgs {
    fn use_color(&self) -> bool {
        match self.color {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => {
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        }
    }

    /// Clean, or Findings when one finding is at or above `--fail-on`.
    pub fn status(&self, findings: &[Finding]) -> Status {
        if findings.iter().any(|f| self.fail_on.trips(f.severity)) {
            Status::Findings
        } else {
            Status::Clean
        }
    }

    /// The `-o` format, or the command's default: rustc-style snippets for scan (as clippy and ruff print), a
    /// table for the commands whose findings are about a cluster.
    pub fn format(&self, command: &str) -> Format {
        self.output.unwrap_or(if command == "scan" {
            Format::Full
        } else {
            Format::Table
        })
    }

    /// Renders to stdout in `-o` and to each `--output-file` (parsed up front with
    /// [`super::output_files`], so that a bad spec fails before the work).
    pub fn emit(
        &self,
        command: &str,
        findings: &[Finding],
        notes: &[Note],
        stats: &[(String, String)],
        files: &[(Format, std::path::PathBuf)],
    ) -> Result<()> {
        self.emit_with_suppressed(command, findings, &[], notes, stats, files)
    }

    /// [`Self::emit`] with the findings inline allow comments suppressed, which SARIF lists as suppressed results.
    pub fn emit_with_suppressed(
        &self,
        command: &str,
        findings: &[Finding],
        suppressed: &[Suppressed],
        notes: &[Note],
        stats: &[(String, String)],
        files: &[(Format, std::path::PathBuf)],
    ) -> Result<()> {
        let format = self.format(command);
        let quotes_source = std::iter::once(format)
            .chain(files.iter().map(|(f, _)| *f))
            .any(|f| matches!(f, Format::Full | Format::Html));
        let sources = if quotes_source {
            read_sources(findings)
        } else {
            Sources::new()
        };
        let mut report = Report {
            command,
            findings,
            notes,
            stats,
            color: self.use_color(),
            sources: &sources,
            suppressed,
            fail_on: self.fail_on,
        };
        let text = super::render(format, &report)?;
        crate::output::print(&text).context("writing the report to stdout")?;
        report.color = false;
        for (format, path) in files {
            let text = super::render(*format, &report)?;
            std::fs::write(path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok(())
    }
}

/// Source files larger than this are not quoted (the scan's own default cap, `thresholds.max_file_bytes`).
const SNIPPET_MAX_BYTES: u64 = 2_000_000;

/// The files the findings point into (their spans and related places), read as they are now; a file that cannot
/// be read is left out and `full` prints its `path:line:col` instead.
fn read_sources(findings: &[Finding]) -> Sources {
    let mut sources = Sources::new();
    let spans = findings.iter().flat_map(|f| {
        f.subject
            .span()
            .into_iter()
            .chain(f.evidence.iter().filter_map(|e| match e {
                crate::finding::Evidence::Related { span, .. } => Some(span),
                _ => None,
            }))
    });
    for span in spans {
        // A regular file within the size a scan reads: the file may have been swapped for a FIFO or grown since.
        if !sources.contains_key(&span.file)
            && let Ok(text) = crate::regular_file::read_to_string(
                std::path::Path::new(&span.file),
                SNIPPET_MAX_BYTES,
            )
        {
            sources.insert(span.file.clone(), text);
        }
    }
    sources
}
