//! CA305: a blocking call reachable from async reconcile. It stalls the tokio worker thread, and
//! with it every other reconcile and watch scheduled there.

use super::{Ctx, finding};
use crate::finding::{Finding, Span};
use crate::sema::Callee;

/// Functions that block the calling thread, by full path or path prefix: a sleep, file and process I/O of the
/// standard library, reqwest's blocking client, and running a future to completion.
const BLOCKING_PREFIXES: &[&str] = &["std::fs::", "std::process::Command", "reqwest::blocking::"];
const BLOCKING_PATHS: &[&str] = &["std::thread::sleep"];

/// What blocks in a call, when it does.
fn blocks(callee: &Callee) -> Option<String> {
    match callee {
        Callee::Path(p)
            if BLOCKING_PATHS.contains(&p.as_str())
                || BLOCKING_PREFIXES.iter().any(|x| p.starts_with(x))
                || p.ends_with("executor::block_on")
                || p == "block_on" =>
        {
            Some(p.clone())
        }
        // `rt.block_on(fut)`, `Handle::current().block_on(fut)`: whatever the runtime, the thread waits.
        Callee::Method(m) if m == "block_on" => Some(m.clone()),
        _ => None,
    }
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for (&id, _) in cx.reach.iter() {
        let func = cx.unit.func(id);
        let calls = func
            .resolved_calls
            .iter()
            .filter(|c| !c.off_runtime)
            .filter_map(|c| Some((c.at.in_file(&func.span.file), blocks(&c.callee)?)));
        let guards = func
            .guards_across_await
            .iter()
            .map(|g| (g.span.clone(), g.what.clone()));
        let mut sites: Vec<(Span, String)> = calls.chain(guards).collect();
        sites.sort_by_key(|(s, _)| (s.line, s.column));
        for (span, what) in sites {
            // A blocked worker thread stalls every task on it whichever path blocks it: cost per occurrence.
            let when = cx.when_fn(id);
            let mut f = finding(
                &crate::registry::CA305,
                span,
                when.clone(),
                format!(
                    "`{what}` blocks the async runtime {}{}",
                    when.phrase(),
                    cx.via(id)
                ),
                "use the async form (`tokio::time::sleep(..).await`, `tokio::fs`, `tokio::process`, an async client, `tokio::sync::Mutex`) or wrap it in `tokio::task::spawn_blocking`",
            );
            f.evidence = cx.call_path(id);
            out.push(f);
        }
    }
}
