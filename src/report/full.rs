//! `-o full`: each finding as rustc and clippy print a diagnostic — the severity, code and message, the source lines
//! with the span underlined and the related places labelled, then the evidence, the help and the rule to read.
//! Findings about objects and controllers, and sources that could not be read, get a `-->` location line instead.

use super::{Report, Sources, evidence_lines, footer, normalize_path};
use crate::finding::{Evidence, Finding, Severity, Span, Subject};
use annotate_snippets::{AnnotationKind, Group, Level, Origin, Renderer, Snippet};
use std::ops::Range;

/// A span longer than this many lines is underlined on its first line only, so that a Controller's whole builder
/// chain does not fill the screen.
const MAX_SPAN_LINES: usize = 4;

/// Renders every finding as a diagnostic, then the notes, the summary line and the stats.
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let renderer = if report.color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let mut out = String::new();
    for f in report.findings {
        let related: Vec<(&Span, &str)> = f
            .evidence
            .iter()
            .filter_map(|e| match e {
                Evidence::Related { span, note } => Some((span, note.as_str())),
                _ => None,
            })
            .collect();
        // The related places are drawn in the snippets; the rest of the evidence becomes notes.
        let rest = Finding {
            evidence: f
                .evidence
                .iter()
                .filter(|e| !matches!(e, Evidence::Related { .. }))
                .cloned()
                .collect(),
            ..f.clone()
        };
        let notes = evidence_lines(&rest);
        let doc = format!("rule {}: kubectl ctrlaudit rules {}", f.code, f.code);
        let mut group = Group::with_title(level(f.severity).primary_title(&f.message).id(&f.code));
        match &f.subject {
            Subject::Source(span) => group = group.element(place(report.sources, span, &related)),
            other => group = group.element(Origin::path(other.label())),
        }
        // Related places in other files: one snippet each.
        for (span, note) in &related {
            if f.subject.span().is_some_and(|s| s.file == span.file) {
                continue;
            }
            group = group.element(related_place(report.sources, span, note));
        }
        for n in &notes {
            group = group.element(Level::NOTE.message(n.as_str()));
        }
        if !f.help.is_empty() {
            group = group.element(Level::HELP.message(f.help.as_str()));
        }
        group = group.element(Level::NOTE.message(doc.as_str()));
        out.push_str(&renderer.render(&[group]));
        out.push_str("\n\n");
    }
    out.push_str(&footer(report));
    Ok(out)
}

fn level(severity: Severity) -> Level<'static> {
    match severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Info => Level::INFO,
    }
}

/// The finding's own place: its source lines with the span underlined and the related places in the same file
/// labelled; `--> path:line:col` when the source is not at hand.
fn place<'a>(
    sources: &'a Sources,
    span: &Span,
    related: &[(&Span, &'a str)],
) -> annotate_snippets::Element<'a> {
    let path = normalize_path(&span.file);
    let Some((src, primary)) = sources
        .get(&span.file)
        .and_then(|src| Some((src, byte_range(src, span)?)))
    else {
        return origin(span, path).into();
    };
    let mut snippet = Snippet::source(src.as_str())
        .path(path)
        .fold(true)
        .annotation(AnnotationKind::Primary.span(primary));
    for (r, note) in related.iter().filter(|(r, _)| r.file == span.file) {
        if let Some(range) = byte_range(src, r) {
            snippet = snippet.annotation(AnnotationKind::Context.span(range).label(*note));
        }
    }
    snippet.into()
}

/// A related place in another file: its lines with the note as the label, or `path:line:col: note`.
fn related_place<'a>(
    sources: &'a Sources,
    span: &Span,
    note: &'a str,
) -> annotate_snippets::Element<'a> {
    let path = normalize_path(&span.file);
    match sources
        .get(&span.file)
        .and_then(|src| Some((src, byte_range(src, span)?)))
    {
        Some((src, range)) => Snippet::source(src.as_str())
            .path(path)
            .fold(true)
            .annotation(AnnotationKind::Context.span(range).label(note))
            .into(),
        None => Level::NOTE
            .message(format!("{path}:{}:{}: {note}", span.line, span.column))
            .into(),
    }
}

fn origin<'a>(span: &Span, path: String) -> Origin<'a> {
    let o = Origin::path(path);
    if span.line == 0 {
        return o;
    }
    o.line(span.line).char_column(span.column.saturating_sub(1))
}

/// The bytes a span covers in `src`: 1-based lines, 1-based character columns, the end exclusive. At least one
/// character; only the first line of a span longer than [`MAX_SPAN_LINES`]. `None` when the span is not in the text
/// (the file changed since the scan).
fn byte_range(src: &str, span: &Span) -> Option<Range<usize>> {
    if span.line == 0 {
        return None;
    }
    let starts: Vec<usize> = std::iter::once(0)
        .chain(src.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_text = |n: usize| -> Option<(usize, &str)> {
        let start = *starts.get(n.checked_sub(1)?)?;
        let end = starts.get(n).map_or(src.len(), |e| e - 1);
        Some((start, src.get(start..end)?))
    };
    let at = |n: usize, col: usize| -> Option<usize> {
        let (start, text) = line_text(n)?;
        let chars = col.saturating_sub(1);
        let offset = text
            .char_indices()
            .nth(chars)
            .map_or(text.len(), |(i, _)| i);
        Some(start + offset)
    };
    let start = at(span.line, span.column.max(1))?;
    let end = if span.end_line < span.line || span.end_line > span.line + MAX_SPAN_LINES {
        let (line_start, text) = line_text(span.line)?;
        line_start + text.trim_end().len()
    } else {
        at(span.end_line, span.end_column.max(1))?
    };
    if end > start {
        return Some(start..end);
    }
    // An empty span still points at its character.
    let next = src[start..].chars().next().map_or(0, char::len_utf8);
    Some(start..start + next.max(usize::from(start < src.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(line: usize, column: usize, end_line: usize, end_column: usize) -> Span {
        Span {
            file: "a.rs".into(),
            line,
            column,
            end_line,
            end_column,
        }
    }

    #[test]
    fn byte_ranges() {
        let src = "fn a() {\n    let x = é + 1;\n}\n";
        // `x` on line 2, columns 9..10.
        assert_eq!(
            byte_range(src, &span(2, 9, 2, 10)).map(|r| &src[r]),
            Some("x")
        );
        // After a two-byte character, columns still count characters.
        assert_eq!(
            byte_range(src, &span(2, 13, 2, 18)).map(|r| &src[r]),
            Some("é + 1")
        );
        // Empty: one character.
        assert_eq!(
            byte_range(src, &span(2, 5, 2, 5)).map(|r| &src[r]),
            Some("l")
        );
        // Past the end of the file or no line: none.
        assert_eq!(byte_range(src, &span(9, 1, 9, 2)), None);
        assert_eq!(byte_range(src, &span(0, 0, 0, 0)), None);
        // Multi-line within the limit: the whole span.
        assert_eq!(
            byte_range(src, &span(1, 1, 3, 2)).map(|r| &src[r]),
            Some("fn a() {\n    let x = é + 1;\n}")
        );
    }
}
