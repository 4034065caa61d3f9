//! CA204: an error_policy whose every return is one constant short requeue. kube-rs has no
//! per-object error backoff, so a failing object retries at that fixed rate forever. In Go, the same retry is a
//! short `RequeueAfter` returned with a nil error on an error branch, around controller-runtime's backoff.

use super::{Ctx, finding, secs_text};
use crate::finding::{Finding, When, WhenKind};
use crate::sema::{Lang, Requeue};

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let mut policies: Vec<_> = cx.policies.iter().copied().collect();
    policies.sort();
    for id in policies {
        let func = cx.unit.func(id);
        judge(cx, &func.name, &func.returns, id.0, out);
    }
    for (fi, file) in cx.unit.files.iter().enumerate() {
        for c in &file.controllers {
            if let Some(run) = &c.run {
                judge(cx, "the inline error_policy", &run.inline_policy, fi, out);
            }
        }
    }
    swallowed_errors(cx, out);
}

/// controller-runtime has no error_policy: a reconcile that returns its error is retried by the workqueue's rate
/// limiter, which backs off per object (5 ms doubling up to 1000 s). `return ctrl.Result{RequeueAfter: short},
/// nil` on an error branch swallows the error and retries at that fixed rate instead.
fn swallowed_errors(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let limit = cx.unit.config.thresholds.error_requeue_secs;
    for &id in cx.reach.keys().filter(|id| cx.lang(id.0) == Lang::Go) {
        for r in cx.unit.func(id).requeues.iter().filter(|r| r.on_error) {
            // `RequeueAfter: 0` is no delay to controller-runtime: with `Requeue: true` beside it the object goes
            // back through the rate limiter, which backs off (mongodb's `result.Failed()` is `Retry(0)`).
            let Some(secs) = cx
                .unit
                .requeue_secs(r, id.0)
                .filter(|s| *s > 0.0 && *s < limit)
            else {
                continue;
            };
            out.push(finding(
                &crate::registry::CA204,
                r.span.clone(),
                When::new(WhenKind::ErrorRetry),
                format!(
                    "`{}` on an error branch retries the failure after {} with a nil error{}: the rate limiter's per-object backoff is bypassed, so a persistent error retries at a fixed rate",
                    r.text,
                    secs_text(secs),
                    cx.via(id)
                ),
                "return the error (`return ctrl.Result{}, err`): controller-runtime retries it with per-object exponential backoff; or requeue after a delay that grows with the failures",
            ));
        }
    }
}

fn judge(
    cx: &Ctx<'_>,
    name: &str,
    returns: &[Option<Requeue>],
    file: usize,
    out: &mut Vec<Finding>,
) {
    let limit = cx.unit.config.thresholds.error_requeue_secs;
    if returns.is_empty() {
        return;
    }
    let all_short_const = returns.iter().all(|r| {
        r.as_ref()
            .and_then(|r| cx.unit.requeue_secs(r, file))
            .is_some_and(|s| s < limit)
    });
    if !all_short_const {
        return;
    }
    for r in returns.iter().flatten() {
        let secs = cx.unit.requeue_secs(r, file).unwrap_or_default();
        out.push(finding(
            &crate::registry::CA204,
            r.span.clone(),
            When::new(WhenKind::ErrorRetry),
            format!(
                "`{name}` always requeues failed objects after {}: no backoff, a persistent error retries at a fixed rate",
                secs_text(secs)
            ),
            "back off per object: count failures in the context (keyed by ObjectRef) and requeue after min(base * 2^n, cap)",
        ));
    }
}
