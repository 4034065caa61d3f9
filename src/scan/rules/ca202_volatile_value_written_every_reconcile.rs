//! CA202: a timestamp or nonce that flows, unguarded, into a write of the reconciled object.
//! Each write is a new resourceVersion, a watch event and (without a predicate) another reconcile.

use super::{Ctx, finding};
use crate::finding::{Evidence, Finding, Span};
use crate::scan::model::ApiCall;
use crate::scan::unit::FnId;

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let reconciled = cx.unit.reconciled_kinds();
    // One finding per volatile value and write, however many callers hand it over.
    let mut reported = std::collections::HashSet::new();
    for (&id, _) in cx.reach.iter() {
        let func = cx.unit.func(id);
        for v in &func.volatile_writes {
            // A write to another kind than the reconciled one (a child, an Event) is not a loop on this object.
            if let (Some(w), Some(o)) = (&v.write.kind, &func.object_kind)
                && w != o
                && cx.reach.get(&id).is_some_and(|p| p.len() == 1)
            {
                continue;
            }
            if let Some(w) = &v.write.kind
                && !reconciled.is_empty()
                && !reconciled.contains(w)
            {
                continue;
            }
            out.push(report(
                cx,
                id,
                (&v.span, &v.source, v.key.as_deref()),
                &v.write,
                None,
            ));
        }
        // A volatile value handed to a helper whose parameter reaches the body of a write.
        for a in &func.volatile_args {
            let callees = cx
                .unit
                .resolve(&a.callee, id.0)
                .into_iter()
                .chain(cx.unit.resolve_method(&a.callee));
            let write = callees
                .flat_map(|c| cx.unit.func(c).param_writes.iter())
                .find(|(index, w)| {
                    *index == a.index
                        && w.kind
                            .as_ref()
                            .is_none_or(|k| reconciled.is_empty() || reconciled.contains(k))
                })
                .map(|(_, w)| w);
            let Some(write) = write else { continue };
            if !reported.insert((a.span.clone(), write.span.clone())) {
                continue;
            }
            out.push(report(
                cx,
                id,
                (&a.span, &a.source, a.key.as_deref()),
                write,
                Some(&a.callee),
            ));
        }
    }
}

/// The finding for a volatile value (where, what, under which key) that reaches `write`, in `helper` when the
/// write is in a function it was handed to.
fn report(
    cx: &Ctx<'_>,
    id: FnId,
    (span, source, key): (&Span, &str, Option<&str>),
    write: &ApiCall,
    helper: Option<&str>,
) -> Finding {
    let under = key.map(|k| format!(" as `{k}`")).unwrap_or_default();
    let inside = helper.map(|h| format!(" in `{h}`")).unwrap_or_default();
    let mut f = finding(
        "CA202",
        span.clone(),
        format!(
            "`{source}` is written{under} by `{}`{inside} on every reconcile{}: each write is a new resourceVersion and a watch event",
            write.text,
            cx.via(id)
        ),
        "write it only when something changed (compare with the current value, or set it when a condition flips); keep diagnostics in memory or in events",
    );
    f.evidence.push(Evidence::Related {
        span: write.span.clone(),
        note: format!("the `{}` that carries it", write.method),
    });
    f.evidence.extend(cx.call_path(id));
    f
}
