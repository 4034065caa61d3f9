//! CA202: a timestamp or nonce that flows, unguarded, into a write of the reconciled object.
//! Each write is a new resourceVersion, a watch event and (without a predicate) another reconcile.

use super::{Ctx, finding};
use crate::finding::{Evidence, Finding};

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
            let under = v
                .key
                .as_deref()
                .map(|k| format!(" as `{k}`"))
                .unwrap_or_default();
            let mut f = finding(
                "CA202",
                v.span.clone(),
                format!(
                    "`{}` is written{under} by `{}` on every reconcile{}: each write is a new resourceVersion and a watch event",
                    v.source,
                    v.write.text,
                    cx.via(id)
                ),
                "write it only when something changed (compare with the current value, or set it when a condition flips); keep diagnostics in memory or in events",
            );
            f.evidence.push(Evidence::Related {
                span: v.write.span.clone(),
                note: format!("the `{}` that carries it", v.write.method),
            });
            f.evidence.extend(cx.call_path(id));
            out.push(f);
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
            let under = a
                .key
                .as_deref()
                .map(|k| format!(" as `{k}`"))
                .unwrap_or_default();
            let mut f = finding(
                "CA202",
                a.span.clone(),
                format!(
                    "`{}` is written{under} by `{}` in `{}` on every reconcile{}: each write is a new resourceVersion and a watch event",
                    a.source,
                    write.text,
                    a.callee,
                    cx.via(id)
                ),
                "write it only when something changed (compare with the current value, or set it when a condition flips); keep diagnostics in memory or in events",
            );
            f.evidence.push(Evidence::Related {
                span: write.span.clone(),
                note: format!("the `{}` that carries it", write.method),
            });
            f.evidence.extend(cx.call_path(id));
            out.push(f);
        }
    }
}
