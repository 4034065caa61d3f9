//! Hand-written CRD YAML in the scanned tree, Helm chart templates of CRDs included: which kinds have
//! `subresources: status: {}`. A file is read only when it is a regular file within the size cap, and parsed
//! only when it nests less than [`MAX_DEPTH`] deep: the YAML parser's time grows with the square of the depth.

use super::file::ca001;
use crate::Note;
use crate::finding::Finding;
use crate::regular_file::ReadError;
use std::path::Path;

/// Flow collections (`[`, `{`) and indentation levels open at once beyond this are not parsed. The deepest real
/// CRD schemas (openAPIV3Schema with nested objects) stay under 100.
pub const MAX_DEPTH: usize = 256;

/// What one YAML file of the tree gave.
#[derive(Debug)]
pub enum YamlFile {
    Kinds(Vec<(String, bool)>),
    /// A CRD file that was not parsed (CA001).
    Rejected(Box<Finding>),
    /// A file that was not read, which need not be a CRD at all (a note).
    Skipped(Note),
}

/// Reads the YAML file at `path` (`name` in messages): the kinds of its CRDs, or why it was not read.
pub fn read(path: &Path, name: &str, max_bytes: u64) -> YamlFile {
    let text = match crate::regular_file::read_to_string(path, max_bytes) {
        Ok(t) => t,
        // A YAML file that is not text or cannot be read says nothing about CRDs, as before.
        Err(ReadError::Io(_)) => return YamlFile::Kinds(Vec::new()),
        Err(e) => {
            return YamlFile::Skipped(Note {
                subject: name.to_string(),
                message: format!("skipped: {e} (CRD kinds in it are not known)"),
            });
        }
    };
    if !text.contains("CustomResourceDefinition") {
        return YamlFile::Kinds(Vec::new());
    }
    match kinds_checked(&text) {
        Ok(k) => YamlFile::Kinds(k),
        Err(TooDeep { depth, line }) => YamlFile::Rejected(Box::new(ca001(
            name,
            line,
            1,
            format!(
                "YAML nests {depth} deep (limit {MAX_DEPTH}): not parsed, so its CRD kinds are not known"
            ),
        ))),
    }
}

/// Where a YAML text goes over [`MAX_DEPTH`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep {
    pub depth: usize,
    pub line: usize,
}

/// The deepest nesting of a YAML text: indentation levels open plus flow brackets open, outside quotes and
/// comments. Linear, and an upper bound of what the parser recurses through.
pub fn depth(text: &str) -> Result<usize, TooDeep> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    let mut max = 0usize;
    for (n, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start_matches([' ', '-']).len();
        let body = line.trim_start();
        if flow == 0 && !body.is_empty() && !body.starts_with('#') {
            while indents.last().is_some_and(|i| *i >= indent) {
                indents.pop();
            }
            indents.push(indent);
        }
        let mut quote: Option<char> = None;
        let mut prev = ' ';
        for c in body.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '#') if prev == ' ' || prev == '\t' => break,
                (None, '[' | '{') => flow += 1,
                (None, ']' | '}') => flow = flow.saturating_sub(1),
                _ => {}
            }
            prev = c;
            let d = indents.len() + flow;
            if d > max {
                max = d;
                if max > MAX_DEPTH {
                    return Err(TooDeep {
                        depth: max,
                        line: n + 1,
                    });
                }
            }
        }
    }
    Ok(max)
}

/// Kinds declared by the CRDs in one YAML text (multi-document), with whether they have the
/// status subresource. Documents that are not CRDs, and invalid YAML, contribute nothing.
///
/// Each document is parsed on its own: serde_yaml's multi-document iterator (the code yaml_serde forked) returned
/// the same error forever after a document it could not parse (a Helm template's `{{- if … -}}` line did that,
/// and scan spun at 100% CPU), so one bad document must not be able to stop, or stall, the others.
pub fn kinds(text: &str) -> Vec<(String, bool)> {
    kinds_checked(text).unwrap_or_default()
}

/// [`kinds`], or where the text nests too deep to be parsed.
pub fn kinds_checked(text: &str) -> Result<Vec<(String, bool)>, TooDeep> {
    depth(text)?;
    let mut out = Vec::new();
    for doc in documents(text) {
        let doc = without_template_actions(doc);
        let Ok(v) = yaml_serde::from_str::<yaml_serde::Value>(&doc) else {
            continue;
        };
        if v.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition") {
            continue;
        }
        let Some(spec) = v.get("spec") else { continue };
        let Some(kind) = spec
            .get("names")
            .and_then(|n| n.get("kind"))
            .and_then(|k| k.as_str())
        else {
            continue;
        };
        // apiextensions v1: per version; v1beta1: spec.subresources.
        let per_version = spec
            .get("versions")
            .and_then(|vs| vs.as_sequence())
            .is_some_and(|vs| {
                vs.iter().any(|ver| {
                    ver.get("subresources")
                        .and_then(|s| s.get("status"))
                        .is_some()
                })
            });
        let top = spec
            .get("subresources")
            .and_then(|s| s.get("status"))
            .is_some();
        out.push((kind.to_string(), per_version || top));
    }
    Ok(out)
}

/// The documents of a YAML stream: split at `---` lines (a document start marker at column 0, optionally
/// followed by a space and more) and at `...` end markers.
fn documents(text: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        let marker =
            bare == "---" || bare.starts_with("--- ") || bare.starts_with("---\t") || bare == "...";
        if marker {
            docs.push(&text[start..pos]);
            // `--- value` starts a document on the marker line itself.
            start = if bare.starts_with("--- ") || bare.starts_with("---\t") {
                pos + 4
            } else {
                pos + line.len()
            };
        }
        pos += line.len();
    }
    docs.push(&text[start..]);
    docs.retain(|d| !d.trim().is_empty());
    docs
}

/// A Helm chart template made parseable: lines that hold only template actions (`{{- if … }}`, `{{ end }}`,
/// `{{ include … | nindent 4 }}`) are dropped, and actions inside a line become a placeholder scalar, so that
/// the CRD around them can be read. A text without `{{` is returned as it is.
fn without_template_actions(doc: &str) -> std::borrow::Cow<'_, str> {
    if !doc.contains("{{") {
        return std::borrow::Cow::Borrowed(doc);
    }
    let mut out = String::with_capacity(doc.len());
    for line in doc.lines() {
        let mut kept = String::with_capacity(line.len());
        let mut rest = line;
        let mut had_action = false;
        while let Some(open) = rest.find("{{") {
            kept.push_str(&rest[..open]);
            had_action = true;
            match rest[open..].find("}}") {
                Some(close) => {
                    kept.push_str("templated");
                    rest = &rest[open + close + 2..];
                }
                // An action that spans lines: drop the rest of this line.
                None => rest = "",
            }
        }
        kept.push_str(rest);
        if had_action && kept.replace("templated", "").trim().is_empty() {
            continue;
        }
        out.push_str(&kept);
        out.push('\n');
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDGET: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  names:\n    kind: Widget\n  versions:\n  - name: v1\n    subresources:\n      status: {}\n";

    #[test]
    fn finds_status_subresource() {
        let y = format!("{WIDGET}---\nkind: ConfigMap\n");
        assert_eq!(kinds(&y), vec![("Widget".to_string(), true)]);
    }

    /// Runs `kinds` on another thread and fails, instead of hanging the test run, if it does not return.
    fn kinds_within_10s(text: &str) -> Vec<(String, bool)> {
        let (tx, rx) = std::sync::mpsc::channel();
        let text = text.to_string();
        std::thread::spawn(move || {
            let _ = tx.send(kinds(&text));
        });
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("crd_yaml::kinds did not return within 10 s")
    }

    /// The shape that made scan spin forever: a Helm chart's CRD template.
    #[test]
    fn a_helm_crd_template_ends_and_is_read() {
        let helm = "{{- if .Values.crds.create -}}\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n  labels:\n    {{- include \"chart.labels\" . | nindent 4 }}\n  annotations:\n    helm.sh/resource-policy: {{ .Values.crds.keep | ternary \"keep\" \"delete\" }}\nspec:\n  group: example.com\n  names:\n    kind: Widget\n    plural: widgets\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    subresources:\n      status: {}\n{{- end }}\n";
        assert_eq!(kinds_within_10s(helm), vec![("Widget".to_string(), true)]);
    }

    #[test]
    fn one_unparsable_document_does_not_hide_the_others() {
        let y = format!("key: [unclosed\n---\n{WIDGET}---\n: : :\n---\n{WIDGET}");
        assert_eq!(kinds_within_10s(&y).len(), 2);
        let garbage = "{{{{ }}}} {{ {{\n---\n\t- [\n...\n--- {a: [\n";
        assert!(kinds_within_10s(garbage).is_empty());
    }

    #[test]
    fn documents_split_at_markers_only_at_column_0() {
        assert_eq!(documents("a: 1\n---\nb: 2\n"), vec!["a: 1\n", "b: 2\n"]);
        assert_eq!(documents("a: |\n  ---\n  x\n"), vec!["a: |\n  ---\n  x\n"]);
        assert_eq!(documents("--- {a: 1}\n...\n"), vec!["{a: 1}\n"]);
        assert_eq!(documents("---\n---\n"), Vec::<&str>::new());
    }
}
