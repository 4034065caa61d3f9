//! CA402: a metric label fed by an object name, namespace, uid or error text. Every new value is
//! a new series, kept until restart (kcp dropped ~140,000 series at 10,000 workspaces).

use super::{Ctx, finding};
use crate::finding::Finding;

/// Label values that grow with the number of objects, namespaces or distinct errors.
const UNBOUNDED_LABEL: &[&str] = &[
    "name_any()",
    "name_unchecked()",
    ".namespace()",
    ".uid()",
    "metadata.name",
    "metadata.uid",
    "metadata.namespace",
    ":?}\"",
    "{:?}\",",
    "e.to_string()",
    "err.to_string()",
    "error.to_string()",
];
/// Does a label value's text contain one of [`UNBOUNDED_LABEL`] as whole tokens? `e.to_string()` is an error's
/// text; `phase.to_string()` only ends like it.
fn is_unbounded_label(text: &str) -> bool {
    UNBOUNDED_LABEL.iter().any(|p| {
        text.match_indices(p).any(|(i, _)| {
            let starts_ident = p.starts_with(|c: char| c.is_alphanumeric() || c == '_');
            let before = text[..i].chars().next_back();
            !starts_ident || !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for file in &cx.unit.files {
        // The Debug text of an enum the function matches on is one of its variants' names: bounded.
        let unbounded = file.metric_label_values.iter().filter(|l| {
            !l.formats_enum
                && (is_unbounded_label(&l.text)
                    || l.bound_to.as_deref().is_some_and(is_unbounded_label))
        });
        for l in unbounded {
            out.push(finding(
                "CA402",
                l.span.clone(),
                format!("metric label value `{}` grows with the number of objects or errors: one series per value", l.text),
                "use bounded labels (kind, controller, a static error enum); put object names in logs, events or exemplars",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_unbounded_label;

    #[test]
    fn patterns_match_whole_tokens() {
        assert!(is_unbounded_label("obj.name_any()"));
        assert!(is_unbounded_label("e.to_string()"));
        // Ends like an error's text but is a phase: bounded.
        assert!(!is_unbounded_label("phase.to_string()"));
        assert!(!is_unbounded_label("\"reconcile\""));
    }
}
