//! CA203: a short constant requeue on the success path of reconcile (kube-rs has no periodic
//! resync, so this is polling), and `loop { read; sleep }` around API reads. Requeues on an error path
//! (`Err(..)`, `map_err`, error arms) and one-shot requeues on a branch (immediate, or right after a write) are not
//! polling.

use super::{Ctx, finding, per_pass, secs_text};
use crate::finding::{Evidence, Finding, Severity, When, WhenKind};
use crate::sema::Lang;

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let limit = cx.unit.config.thresholds.polling_requeue_secs;
    for (&id, _) in cx.reach.iter() {
        let func = cx.unit.func(id);
        // An Action built where none is returned is stored (a config default, an error policy's setting), not
        // what this reconcile does next.
        // A function reached only from error paths (`Err(retry_later(e))`) sets the retry policy: CA204's business.
        if cx.policies.contains(&id) || !func.returns_action || cx.error_only.contains(&id) {
            continue;
        }
        // A builder of Actions (`fn short_retry() -> Action`) is judged where it is returned, with that path.
        let builder = !func.is_async
            && func.api_calls.is_empty()
            && !func.returns.is_empty()
            && func.returns.iter().all(Option::is_some);
        if builder {
            continue;
        }
        let dead = cx.unit.dead_variants(id);
        for r in &func.requeues {
            // An arm for a variant every caller took care of before calling: dead code.
            if !r.variants.is_empty()
                && dead.is_some_and(|d| r.variants.iter().all(|v| d.contains(v)))
            {
                continue;
            }
            // An error path's requeue is retry policy (CA204's business), not polling.
            // An unconditional `Err(requeue)` is what a failure-only helper returns; on a branch, without an
            // error around it, it is "not ready yet" spelled as `Err` (judged below, at info).
            if r.on_error || (r.in_err_value && !r.conditional) {
                continue;
            }
            // A computed duration with a cap polls at least that often.
            let exact = cx.unit.requeue_secs(r, id.0);
            let Some(secs) = exact.or_else(|| cx.unit.requeue_at_most(r)) else {
                continue;
            };
            let after = if exact.is_some() {
                secs_text(secs)
            } else {
                format!("at most {}", secs_text(secs))
            };
            // A conditional immediate requeue is a one-shot step after a state change (a finalizer just added),
            // not a timer.
            // A branch's requeue right after this reconcile changed something (a state-machine step) is a one-shot
            // follow-up too.
            // A sub-second requeue right after a write is "look again at once", not a timer either.
            // A step function (a phase handler the reconcile calls) that moves the object on and requeues is a
            // one-shot follow-up too; the reconcile itself doing that on every pass is not.
            let step = r.conditional || cx.reach.get(&id).is_some_and(|p| p.len() > 1);
            // controller-runtime reads `RequeueAfter: 0` as not set: no timer.
            if secs >= limit
                || (cx.lang(id.0) == Lang::Go && secs == 0.0)
                || (step && r.after_change)
                || (r.conditional && (secs == 0.0 || (secs < 1.0 && r.after_write)))
            {
                continue;
            }
            // Polling costs a pass each time. An unconditional requeue after this pass's own write is still one
            // on every pass (the write runs on every pass too); the one-shot steps were passed over above.
            let when = if r.conditional {
                When::new(WhenKind::Branch)
            } else {
                cx.when_fn(id)
            };
            let mut f = finding(
                &crate::registry::CA203,
                r.span.clone(),
                when.clone(),
                format!(
                    "reconcile requeues after {} on success{}, {}: polling every object instead of waiting for changes",
                    after,
                    cx.via(id),
                    when.phrase()
                ),
                match cx.lang(id.0) {
                    Lang::Rust => format!(
                        "return `Action::await_change()` and watch what you wait for (`.owns`/`.watches`); if drift correction is needed, requeue after {} or more",
                        secs_text(limit)
                    ),
                    Lang::Go => format!(
                        "return `ctrl.Result{{}}` and watch what you wait for (`Owns`/`Watches`; the cache resyncs periodically); if drift correction is needed, requeue after {} or more",
                        secs_text(limit)
                    ),
                },
            );
            if exact.is_none() && cx.unit.requeue_is_chosen(r) {
                // `from_secs(if converged { 300 } else { 10 })`: polls only while not there yet.
                f.severity = Severity::Info;
                f.message = format!(
                    "reconcile requeues after {} while a condition holds (the duration is chosen by an `if`){}: polls while waiting",
                    secs_text(secs),
                    cx.via(id)
                );
            } else if r.conditional {
                // A short wait on a "not ready yet" branch costs less than polling every object.
                f.severity = Severity::Info;
                f.message = if r.in_err_value {
                    format!(
                        "reconcile returns `Err` with a requeue after {} on a branch that is no error{}: polls while waiting",
                        after,
                        cx.via(id)
                    )
                } else {
                    format!(
                        "reconcile requeues after {} on a branch{}: polls while waiting",
                        after,
                        cx.via(id)
                    )
                };
            }
            f.evidence.push(Evidence::Value {
                name: "requeue".into(),
                value: secs,
                unit: "s".into(),
            });
            out.push(per_pass(f));
        }
    }
    for (fi, file) in cx.unit.files.iter().enumerate() {
        // A sleeping loop that writes, or tells 409 apart, is a retry with a pause, not polling.
        for l in file
            .sleeping_loops
            .iter()
            .filter(|l| l.reads && !l.writes && !crate::sema::tells_conflict(&l.error_signs))
        {
            let when = cx.when_at(fi, l.span.line);
            out.push(per_pass(finding(
                &crate::registry::CA203,
                l.span.clone(),
                when.clone(),
                format!(
                    "`loop` polls the API server with a sleep in a loop (in `{}`), {}",
                    l.in_fn,
                    when.phrase()
                ),
                "watch instead of polling: a `watcher`/`reflector` Store, or a Controller with `.watches`",
            )));
        }
    }
}
