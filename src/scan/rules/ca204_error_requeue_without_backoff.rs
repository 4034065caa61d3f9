//! CA204: an error_policy whose every return is one constant short requeue. kube-rs has no
//! per-object error backoff, so a failing object retries at that fixed rate forever.

use super::{Ctx, finding, secs_text};
use crate::finding::Finding;

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let limit = cx.unit.config.thresholds.error_requeue_secs;
    let mut policies: Vec<_> = cx.policies.iter().copied().collect();
    policies.sort();
    for id in policies {
        let func = cx.unit.func(id);
        if func.returns.is_empty() {
            continue;
        }
        let all_short_const = func
            .returns
            .iter()
            .all(|r| r.as_ref().and_then(|r| r.secs).is_some_and(|s| s < limit));
        if !all_short_const {
            continue;
        }
        for r in func.returns.iter().flatten() {
            let secs = r.secs.unwrap_or_default();
            out.push(finding(
                "CA204",
                r.span.clone(),
                format!(
                    "`{}` always requeues failed objects after {}: no backoff, a persistent error retries at a fixed rate",
                    func.name,
                    secs_text(secs)
                ),
                "back off per object: count failures in the context (keyed by ObjectRef) and requeue after min(base * 2^n, cap)",
            ));
        }
    }
}
