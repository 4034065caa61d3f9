//! CA202: a timestamp or nonce that flows, unguarded, into a write of the reconciled object.
//! Each write is a new resourceVersion, a watch event and (without a predicate) another reconcile.

use super::{Ctx, finding, per_pass};
use crate::finding::{Evidence, Finding, Span};
use crate::sema::ApiCall;
use crate::unit::FnId;

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
            let Some(origin) = origin(cx, id, &v.span, &v.source, v.via.as_deref()) else {
                continue;
            };
            if !reported.insert((origin.0.clone(), v.write.span.clone())) {
                continue;
            }
            out.push(report(
                cx,
                id,
                (&origin.0, &origin.1, v.key.as_deref()),
                &v.write,
                None,
            ));
        }
        // A volatile value handed to a helper whose parameter reaches the body of a write.
        for a in &func.volatile_args {
            let Some(write) = cx.unit.param_write(&a.callee, a.index, id).filter(|w| {
                w.kind
                    .as_ref()
                    .is_none_or(|k| reconciled.is_empty() || reconciled.contains(k))
            }) else {
                continue;
            };
            let Some(origin) = origin(cx, id, &a.span, &a.source, a.via.as_deref()) else {
                continue;
            };
            if !reported.insert((origin.0.clone(), write.span.clone())) {
                continue;
            }
            out.push(report(
                cx,
                id,
                (&origin.0, &origin.1, a.key.as_deref()),
                write,
                Some(&a.callee),
            ));
        }
    }
}

/// Where a volatile value is produced and what produces it. A value another file's or crate's function returned
/// (`via`) counts only when that function returns a volatile value whatever its input: reported at its stamp when
/// it is the crate's own builder (the fix goes there), at the call otherwise (a clock, or a dependency's code).
fn origin(
    cx: &Ctx<'_>,
    id: FnId,
    span: &Span,
    source: &str,
    via: Option<&str>,
) -> Option<(Span, String)> {
    let Some(via) = via else {
        return Some((span.clone(), source.to_string()));
    };
    let (callee, ret) = cx.unit.volatile_return(via, id.0)?;
    let what = format!("{} (in {via})", ret.source);
    if ret.clock || cx.unit.files[callee.0].library {
        Some((span.clone(), what))
    } else {
        Some((ret.span.clone(), what))
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
    // Each write is a watch event: the cost is per pass, so a value written only on a transition or drift is info.
    let when = cx.when_call(id, write);
    let inside = helper.map(|h| format!(" in `{h}`")).unwrap_or_default();
    let mut f = finding(
        &crate::registry::CA202,
        span.clone(),
        when.clone(),
        format!(
            "`{source}` is written{under} by `{}`{inside} {}{}: each write is a new resourceVersion and a watch event",
            write.text,
            when.phrase(),
            cx.via(id)
        ),
        "write it only when something changed (compare with the current value, or set it when a condition flips); keep diagnostics in memory or in events",
    );
    f.evidence.push(Evidence::Related {
        span: write.span.clone(),
        note: format!("the `{}` that carries it", write.method.spelled(cx.lang(id.0))),
    });
    f.evidence.extend(cx.call_path(id));
    per_pass(f)
}
