//! CA304: API writes awaited one at a time in a loop: total time is the sum of round trips, not
//! the slowest one (kcp saved ~30 s of cold start by creating each tier concurrently).

use super::{Ctx, finding, per_pass};
use crate::finding::Finding;

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for id in cx.unit.all_fns().filter(|id| !cx.unit.is_dead(*id)) {
        for call in cx.unit.api_calls(id).chain(cx.unit.wrapper_calls(id)) {
            if !call.is_write() || !call.awaited_in_iteration {
                continue;
            }
            // The sum of round trips is paid each time the loop runs: a deletion or drift loop is not a fan-out on
            // every pass.
            let when = cx.when_call(id, call);
            out.push(per_pass(finding(
                &crate::registry::CA304,
                call.span.clone(),
                when.clone(),
                format!(
                    "`{}` is awaited once per loop iteration {}: the writes run one after another",
                    call.text,
                    when.phrase()
                ),
                "issue them concurrently: `futures::future::try_join_all(items.iter().map(|x| api.create(..)))` or `stream::iter(..).buffer_unordered(n)`; for deletes, `delete_collection`",
            )));
        }
    }
}
