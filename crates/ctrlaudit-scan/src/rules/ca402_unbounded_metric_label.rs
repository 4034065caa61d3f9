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
    for (fi, file) in cx.unit.files.iter().enumerate() {
        for l in &file.metric_label_values {
            // The Debug text of an enum the function matches on is one of its variants' names: bounded.
            if l.formats_enum {
                continue;
            }
            let helper = if is_unbounded_label(&l.text)
                || l.bound_to.as_deref().is_some_and(is_unbounded_label)
            {
                None
            } else {
                match text_helper(cx, fi, &l.text) {
                    Some(h) => Some(h),
                    None => continue,
                }
            };
            let via = helper
                .map(|(name, text)| format!(", which is `{text}` (`{name}`)"))
                .unwrap_or_default();
            out.push(finding(
                &crate::registry::CA402,
                l.span.clone(),
                format!(
                    "metric label value `{}`{via} grows with the number of objects or errors: one series per value",
                    l.text
                ),
                "use bounded labels (kind, controller, a static error enum); put object names in logs, events or exemplars",
            ));
        }
    }
}

/// A label value that is the text a crate helper returns (`e.metric_label()` returning `format!("{self:?}")`),
/// when that text grows with objects or errors: the helper's name and its returned text. The Debug text of the
/// receiver counts only for an error type's method (an error's fields carry free text; a plain enum's do not).
fn text_helper(cx: &Ctx<'_>, file: usize, text: &str) -> Option<(String, String)> {
    let call = syn::parse_str::<syn::Expr>(text).ok()?;
    if matches!(&call, syn::Expr::MethodCall(m) if !m.args.is_empty()) {
        return None;
    }
    let targets = cx.unit.resolve_call_expr(&call, file);
    let [target] = targets[..] else {
        return None;
    };
    let f = cx.unit.func(target);
    let returned = f.returned_text.as_deref()?;
    let debug_of_self = returned.contains("{self:?}") || returned.contains("{:?}\",self");
    let on_error = f.self_ty.as_deref().is_some_and(|t| t.ends_with("Error"));
    let unbounded = if debug_of_self {
        on_error
    } else {
        is_unbounded_label(returned)
    };
    unbounded.then(|| (f.name.clone(), returned.to_string()))
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
