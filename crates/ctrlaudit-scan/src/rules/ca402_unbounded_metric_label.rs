//! CA402: a metric label fed by an object name, namespace, uid or error text. Every new value is
//! a new series, kept until restart (kcp dropped ~140,000 series at 10,000 workspaces).

use super::{Ctx, finding};
use crate::finding::{Finding, Severity};
use crate::sema::{LabelValue, TextExpr};
use crate::unit::FnId;
use std::collections::HashSet;

/// Text that grows with the number of objects, namespaces or distinct errors: an object's identity, an error's
/// message, or a Debug text (of anything but an enum the function matches on, see `LabelValue::formats_enum`).
fn is_unbounded(t: &TextExpr) -> bool {
    t.carries_identity_or_error() || t.has_debug()
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    // Metrics whose series the code deletes (with their object, or all before setting the live ones again): the
    // count follows the live objects, not every object seen since the start.
    let dropped: HashSet<&str> = cx
        .unit
        .files
        .iter()
        .flat_map(|f| f.dropped_series.iter().map(String::as_str))
        .collect();
    for (fi, file) in cx.unit.files.iter().enumerate() {
        for l in &file.metric_label_values {
            // The Debug text of an enum the function matches on is one of its variants' names: bounded.
            if l.formats_enum {
                continue;
            }
            let via = if is_unbounded(&l.value) || l.bound_to.as_ref().is_some_and(is_unbounded) {
                String::new()
            } else if let Some((name, text)) = text_helper(cx, fi, &l.value) {
                format!(", which is `{text}` (`{name}`)")
            } else if let Some((caller, arg)) = passed_by_callers(cx, fi, l) {
                format!(", which `{caller}` passes as `{arg}`")
            } else {
                continue;
            };
            // A series is created whichever path records it: the rule's cost is per occurrence.
            let when = cx.when_at(fi, l.span.line);
            let deleted = l.metric.as_deref().filter(|m| dropped.contains(m));
            let mut f = finding(
                &crate::registry::CA402,
                l.span.clone(),
                when.clone(),
                match deleted {
                    None => format!(
                        "metric label value `{}`{via}, recorded {}, grows with the number of objects or errors: one series per value",
                        l.value.display,
                        when.phrase()
                    ),
                    Some(m) => format!(
                        "metric label value `{}`{via}, recorded {}, gives one series per object; `{m}`'s series are deleted in this code, so their number follows the live objects",
                        l.value.display,
                        when.phrase()
                    ),
                },
                "use bounded labels (kind, controller, a static error enum); put object names in logs, events or exemplars",
            );
            if deleted.is_some() {
                f.severity = Severity::Info;
            }
            out.push(f);
        }
    }
}

/// A label value that is the text a crate helper returns (`e.metric_label()` returning `format!("{self:?}")`),
/// when that text grows with objects or errors: the helper's name and its returned text. The Debug text of the
/// receiver counts only for an error type's method (an error's fields carry free text; a plain enum's do not).
fn text_helper(cx: &Ctx<'_>, file: usize, value: &TextExpr) -> Option<(String, String)> {
    let targets = cx.unit.resolve_callee(value.call.as_ref()?, file);
    let [target] = targets[..] else {
        return None;
    };
    let f = cx.unit.func(target);
    let returned = f.returned_text.as_ref()?;
    let on_error = f.self_ty.as_deref().is_some_and(|t| t.ends_with("Error"));
    let unbounded = if returned.debug_of_self() {
        on_error
    } else {
        is_unbounded(returned)
    };
    unbounded.then(|| (f.name.clone(), returned.display.clone()))
}

/// A label value made of the function's parameters (`WithLabelValues(ns)` in `IncCreated(ns string)`), which a
/// caller fills with an object's identity or an error's text (`IncCreated(job.Namespace)`): that caller and
/// what it passes. Followed up to three callers up (a helper of a helper).
fn passed_by_callers(cx: &Ctx<'_>, file: usize, l: &LabelValue) -> Option<(String, String)> {
    let params: Vec<usize> = l
        .value
        .params()
        .chain(l.bound_to.iter().flat_map(TextExpr::params))
        .collect();
    let owners = cx.unit.files[file]
        .fns
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name == l.in_fn)
        .map(|(i, _)| (file, i));
    owners
        .into_iter()
        .find_map(|id| params.iter().find_map(|p| unbounded_argument(cx, id, *p, 3)))
}

/// A call of `id` whose argument at `param` is unbounded text: the caller's name and the argument.
fn unbounded_argument(cx: &Ctx<'_>, id: FnId, param: usize, depth: u8) -> Option<(String, String)> {
    if depth == 0 {
        return None;
    }
    for caller in cx.unit.callers(id) {
        let f = cx.unit.func(caller);
        for call in &f.calls {
            let Some(arg) = call.args.get(param) else {
                continue;
            };
            if !cx.unit.resolve_callee(&call.callee, caller.0).contains(&id) {
                continue;
            }
            if is_unbounded(arg) {
                return Some((f.name.clone(), arg.display.clone()));
            }
            if let Some(found) = arg
                .params()
                .find_map(|p| unbounded_argument(cx, caller, p, depth - 1))
            {
                return Some(found);
            }
        }
    }
    None
}
