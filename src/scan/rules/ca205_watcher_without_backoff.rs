//! CA205: a watcher stream consumed outside a Controller without a backoff: on errors it
//! re-lists immediately, in a hot loop against the API server.

use super::{Ctx, finding};
use crate::finding::Finding;

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for file in &cx.unit.files {
        for w in &file.unbacked_watchers {
            out.push(finding(
                "CA205",
                w.span.clone(),
                format!(
                    "`{}` stream is consumed in `{}` without a backoff: errors re-list immediately, in a loop",
                    w.what, w.in_fn
                ),
                "add `.default_backoff()` to the stream (or `.backoff(ExponentialBackoff::default())`)",
            ));
        }
    }
}
