//! CA205: a watcher stream consumed outside a Controller without a backoff: on errors it
//! re-lists immediately, in a hot loop against the API server.

use super::{Ctx, finding};
use crate::finding::{Finding, When, WhenKind};

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for file in &cx.unit.files {
        // A stream a Controller runs is backed off by the Controller; one that is never polled here does nothing.
        for w in file
            .watcher_streams
            .iter()
            .filter(|w| w.consumed && !w.backed_off && !w.to_controller)
        {
            out.push(finding(
                &crate::registry::CA205,
                w.span.clone(),
                When::new(WhenKind::Startup),
                format!(
                    "`watcher` stream is consumed in `{}` without a backoff: errors re-list immediately, in a loop",
                    w.in_fn
                ),
                "add `.default_backoff()` to the stream (or `.backoff(ExponentialBackoff::default())`)",
            ));
        }
    }
}
