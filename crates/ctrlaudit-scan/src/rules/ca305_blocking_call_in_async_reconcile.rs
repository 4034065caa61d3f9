//! CA305: a blocking call reachable from async reconcile. It stalls the tokio worker thread, and
//! with it every other reconcile and watch scheduled there.

use super::{Ctx, finding};
use crate::finding::Finding;

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for (&id, _) in cx.reach.iter() {
        for b in &cx.unit.func(id).blocking {
            let mut f = finding(
                &crate::registry::CA305,
                b.span.clone(),
                format!(
                    "`{}` blocks the async runtime inside reconcile{}",
                    b.what,
                    cx.via(id)
                ),
                "use the async form (`tokio::time::sleep(..).await`, `tokio::fs`, `tokio::process`, an async client, `tokio::sync::Mutex`) or wrap it in `tokio::task::spawn_blocking`",
            );
            f.evidence = cx.call_path(id);
            out.push(f);
        }
    }
}
