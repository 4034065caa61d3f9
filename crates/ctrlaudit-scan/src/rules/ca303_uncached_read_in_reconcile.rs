//! CA303: an API get/list reachable from reconcile. Each reconcile pays a round trip (a LIST is
//! the most expensive request the API server serves) for data a reflector Store already has. Reads on an error
//! path or right after this reconcile's own change, on a branch, are not "every reconcile".

use super::{Ctx, finding, per_pass};
use crate::finding::{Finding, Severity, WhenKind};
use crate::sema::{Lang, Verb};

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for (&id, _) in cx.reach.iter() {
        // Reached only when something failed, or never: not every reconcile.
        if cx.error_only.contains(&id) || cx.unit.is_dead(id) {
            continue;
        }
        let func = cx.unit.func(id);
        for call in cx.unit.api_calls(id) {
            // controller-runtime's manager client reads from its informer cache.
            if !call.is_read() || cx.unit.reads_cache(id, call) {
                continue;
            }
            // A re-read inside a conflict retry loop is how conflicts are handled; but its first attempt reads live
            // too, on every pass, where a cached read first and a live one only after a conflict would do.
            let retry_read = call.in_retry && func.handles_conflict();
            // Not every reconcile: a read on an error path (create → 409 → get, a fallback after a failure), or a
            // read-your-write on the branch that just changed something.
            if call.on_error || call.after_change_on_branch {
                continue;
            }
            // A creation or state-transition step (read, then create or move the object to its next phase) runs
            // until its write lands, not on every pass.
            if call.then_writes_on_branch || !cx.routine.contains(&id) {
                continue;
            }
            let kind = call
                .kind
                .as_deref()
                .map(|k| format!(" of `{k}`"))
                .unwrap_or_default();
            let is_list = call.method.verb() == Verb::List;
            let why = call
                .cached
                .then(|| cx.unit.cache_left_out(id, call))
                .flatten()
                .map(|w| format!(": {w}"))
                .unwrap_or_default();
            let help = match cx.lang(id.0) {
                Lang::Rust => {
                    "read from a reflector `Store` filled at start-up (`reflector(writer, watcher(api, cfg))`, then `store.get(&ObjectRef)`/`state()`), or `.owns`/`.watches` the kind"
                }
                Lang::Go => {
                    "read through the manager's client (`mgr.GetClient()`), whose informer cache serves gets and lists, or a lister of a shared informer; keep the kind in the cache (out of `DisableFor`), or cache only its metadata (`PartialObjectMetadata`) when the objects are large"
                }
            };
            // A round trip each time the read runs: the cost is per pass.
            let when = cx.when_call(id, call);
            // A timer's read repeats once per period, however many objects change: bounded, unlike a read per event.
            let timer = cx.timer_only.contains(&id);
            let phrase = if timer && when.path == WhenKind::EveryReconcile {
                "on every tick of a timer".to_string()
            } else {
                when.phrase()
            };
            let mut f = finding(
                &crate::registry::CA303,
                call.span.clone(),
                when.clone(),
                format!(
                    "`{}`{kind} is an uncached {} {}{}{why}",
                    call.text,
                    if is_list { "LIST" } else { "GET" },
                    phrase,
                    cx.via(id)
                ),
                help,
            );
            if retry_read {
                f.message
                    .push_str(" (inside a conflict retry, whose first attempt reads live too)");
            }
            // A list of one page of a few items (`Limit: 1`) costs what a get does.
            if !is_list || call.one_page || retry_read || timer {
                f.severity = Severity::Info;
            }
            f.evidence = cx.call_path(id);
            out.push(per_pass(f));
        }
    }
}
