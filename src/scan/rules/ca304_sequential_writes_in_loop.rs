//! CA304: API writes awaited one at a time in a loop: total time is the sum of round trips, not
//! the slowest one (kcp saved ~30 s of cold start by creating each tier concurrently).

use super::{Ctx, finding};
use crate::finding::Finding;

/// How deep a looped call is followed to the write it makes (`apply_object` → `apply` → `api.patch`).
const HELPER_DEPTH: usize = 3;

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for id in cx.unit.all_fns() {
        for call in &cx.unit.func(id).looped_calls {
            let callees = if call.method {
                cx.unit.resolve_method(&call.callee)
            } else {
                cx.unit.resolve(&call.callee, id.0)
            };
            // Every function the name may mean writes, so the loop writes whichever it is.
            let writes: Vec<String> = callees
                .iter()
                .filter_map(|c| first_write(cx, *c, HELPER_DEPTH))
                .collect();
            if callees.is_empty() || writes.len() != callees.len() {
                continue;
            }
            out.push(finding(
                "CA304",
                call.span.clone(),
                format!(
                    "`{}(..)` writes ({}) and is awaited once per loop iteration: the writes run one after another",
                    call.callee, writes[0]
                ),
                "issue them concurrently: `futures::future::try_join_all(items.iter().map(|x| apply(x)))` or `stream::iter(..).buffer_unordered(n)`",
            ));
        }
        for call in &cx.unit.func(id).api_calls {
            if !call.is_write() || !call.awaited_in_iteration {
                continue;
            }
            out.push(finding(
                "CA304",
                call.span.clone(),
                format!("`{}` is awaited once per loop iteration: the writes run one after another", call.text),
                "issue them concurrently: `futures::future::try_join_all(items.iter().map(|x| api.create(..)))` or `stream::iter(..).buffer_unordered(n)`; for deletes, `delete_collection`",
            ));
        }
    }
}

/// The first write `id` makes itself or through the functions it calls, within `depth` calls: `api.patch in
/// apply_object`. A write it already makes in a loop of its own is CA304 there, not here.
fn first_write(cx: &Ctx<'_>, id: crate::scan::unit::FnId, depth: usize) -> Option<String> {
    let f = cx.unit.func(id);
    if let Some(w) = f
        .api_calls
        .iter()
        .find(|c| c.is_write() && !c.awaited_in_iteration && !c.on_error)
    {
        return Some(format!("`{}` in `{}`", w.text, f.name));
    }
    if depth == 0 {
        return None;
    }
    f.calls
        .iter()
        .flat_map(|n| cx.unit.resolve(n, id.0))
        .filter(|c| *c != id)
        .find_map(|c| first_write(cx, c, depth - 1))
}
