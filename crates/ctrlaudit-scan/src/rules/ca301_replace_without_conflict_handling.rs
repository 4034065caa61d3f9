//! CA301: a `replace`/`replace_status`/`entry().commit()` (a PUT that carries resourceVersion)
//! whose error is propagated with no 409 handling: concurrent writers turn into failed reconciles.

use super::{Ctx, finding};
use crate::finding::Finding;
use crate::sema::Verb;

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for id in cx.unit.all_fns() {
        let func = cx.unit.func(id);
        if func.handles_conflict() || func.clears_resource_version {
            continue;
        }
        // controller-runtime's workqueue never hands one object to two workers, and a 409 returned goes back
        // through its rate limiter: in Go the rule needs the writers that can race (workers of the kind's
        // Controller, other writers of it), which scan does not link yet. Not judged rather than guessed.
        if cx.lang(id.0) == crate::sema::Lang::Go {
            continue;
        }
        for call in cx.unit.api_calls(id) {
            // A PUT carries the resourceVersion it read; a patch does not (unless it sets one).
            if call.method.verb() != Verb::Update {
                continue;
            }
            if !call.propagated || call.in_retry {
                continue;
            }
            // Propagated to callers that all tell 409 apart or call it again in a loop (a lease renewal retried
            // on the next tick until its deadline): handled, one level up.
            let callers = cx.unit.callers(id);
            let handled_above = |c: &crate::unit::FnId| {
                let f = cx.unit.func(*c);
                f.handles_conflict()
                    || f.calls.iter().any(|call| {
                        call.ctx.in_loop && cx.unit.resolve_callee(&call.callee, c.0).contains(&id)
                    })
            };
            if !callers.is_empty() && callers.iter().all(handled_above) {
                continue;
            }
            // A 409 fails whichever path the PUT is on: the rule's cost is per occurrence.
            let when = cx.when_call(id, call);
            out.push(finding(
                &crate::registry::CA301,
                call.span.clone(),
                when.clone(),
                format!(
                    "`{}` {} sends a stale resourceVersion when another writer got there first, and the 409 Conflict is propagated",
                    call.text,
                    when.phrase()
                ),
                "use a merge patch or server-side apply (`patch_status` with `Patch::Merge`/`Patch::Apply`), or retry on 409 with a fresh get",
            ));
        }
    }
}
