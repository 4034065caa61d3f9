//! CA305: a blocking call reachable from async reconcile. It stalls the tokio worker thread, and
//! with it every other reconcile and watch scheduled there. In Go, a sleep or a poll inside reconcile holds one of
//! the controller's few workers.

use super::{Ctx, finding};
use crate::finding::{Finding, Span};
use crate::sema::{Callee, FnModel, Lang};
use crate::unit::FnId;
use std::collections::HashSet;

/// Functions that block the calling thread, by full path or path prefix: a sleep, file and process I/O of the
/// standard library, reqwest's blocking client, and running a future to completion.
const BLOCKING_PREFIXES: &[&str] = &["std::fs::", "std::process::Command", "reqwest::blocking::"];
const BLOCKING_PATHS: &[&str] = &["std::thread::sleep"];

/// Go calls that wait (by import path and name, or its prefix): a sleep, a timer's channel received from
/// (`<-time.After(d)`, `<-ticker.C`, lowered as `time::<-ticker.C`), and apimachinery's polls, which sleep
/// between their tries. They hold one of the controller's workers, which controller-runtime keeps few (one by
/// default): every other object waits.
const GO_WAITS: &[&str] = &[
    "time::Sleep",
    "time::After",
    "time::Tick",
    "k8s.io/utils/clock::Sleep",
];
const GO_WAIT_PREFIXES: &[&str] = &["k8s.io/apimachinery/pkg/util/wait::Poll", "time::<-"];

/// What blocks in a call, when it does: as the code spells it (`time.Sleep`).
fn blocks(callee: &Callee, lang: Lang) -> Option<String> {
    if lang == Lang::Go {
        let Callee::Path(p) = callee else { return None };
        let waits =
            GO_WAITS.contains(&p.as_str()) || GO_WAIT_PREFIXES.iter().any(|x| p.starts_with(x));
        let (path, name) = p.rsplit_once("::")?;
        if name.starts_with("<-") {
            return Some(name.to_string());
        }
        let package = path.rsplit('/').next().unwrap_or(path);
        // A cloud SDK's waiter (`ec2.NewInstanceTerminatedWaiter(c).Wait(ctx, in, 2*time.Minute)`, AWS SDK v2):
        // one is made to wait with it.
        if name.starts_with("New") && name.ends_with("Waiter") {
            return Some(format!("{package}.{name}(..).Wait"));
        }
        return waits.then(|| format!("{package}.{name}"));
    }
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

/// The calls of `func` that block, where they are and what they are. A timer's channel kept for a later
/// `select` (`tt := time.After(timeout)`) is the function's wait only when it waits on nothing else (`case ev :=
/// <-events: .. case <-tt:`); beside a wait of its own (`case <-time.After(period): .. case <-tt:`) that one is
/// the wait, and the kept timer only bounds it.
fn blocking_calls(func: &FnModel, lang: Lang) -> Vec<(Span, String)> {
    let found = |kept: bool| -> Vec<(Span, String)> {
        func.resolved_calls
            .iter()
            .filter(|c| !c.off_runtime)
            // A poll that repeats a write (`get; update` until no 409) retries; it waits on nothing else.
            .filter(|c| !c.repeats_write)
            // A poll whose condition never asks again (`return true, nil` or an error) runs it once.
            .filter(|c| !c.never_retries)
            .filter(|c| (c.kept && kept_timer(c)) == kept)
            .filter_map(|c| Some((c.at.in_file(&func.span.file), blocks(&c.callee, lang)?)))
            .collect()
    };
    let here = found(false);
    if here.is_empty() { found(true) } else { here }
}

/// `time.After(d)`, `time.Tick(d)`: a timer's channel, which waits only where it is received from.
fn kept_timer(c: &crate::sema::ResolvedCall) -> bool {
    matches!(&c.callee, Callee::Path(p) if p == "time::After" || p == "time::Tick")
}

/// The crate's own waiting helpers: a function named for waiting (`waitForMachineCreation`, `PollImmediate`,
/// `WaitUntilClusterActive`, `wait_for_ready`) that blocks, itself or through another such helper. Waiting is
/// what it is for, so a call of one waits as surely as `time.Sleep`, though the helper may be in another package
/// or behind an interface.
fn waiters(cx: &Ctx<'_>) -> HashSet<FnId> {
    let named_for_waiting = |id: FnId| {
        let name = cx.unit.func(id).name.to_ascii_lowercase();
        ["wait", "poll", "sleep", "retry"]
            .iter()
            .any(|w| name.starts_with(w))
    };
    // What blocks itself, whatever its name (a ticker's `Tick() { <-t.ticker.C }`), is what a waiting helper
    // may wait through; only the helpers named for it are reported at their calls.
    let mut out: HashSet<FnId> = cx
        .unit
        .all_fns()
        .filter(|&id| !blocking_calls(cx.unit.func(id), cx.lang(id.0)).is_empty())
        .collect();
    // A wrapper of a wrapper (`WaitUntilReady` → `pollUntil` → `wait.PollUntilContextTimeout`), a few levels.
    for _ in 0..3 {
        let more: Vec<FnId> = cx
            .unit
            .all_fns()
            .filter(|&id| named_for_waiting(id) && !out.contains(&id))
            .filter(|&id| {
                cx.unit
                    .func(id)
                    .calls
                    .iter()
                    .any(|c| cx.unit.resolve_call(c, id).iter().any(|t| out.contains(t)))
            })
            .collect();
        if more.is_empty() {
            break;
        }
        out.extend(more);
    }
    out.retain(|&id| named_for_waiting(id));
    out
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let waiters = waiters(cx);
    // Resolving every call of everything reconcile reaches is the join's most expensive question: only a call by
    // a waiting helper's name can reach one.
    let waiter_names: HashSet<&str> = waiters
        .iter()
        .map(|w| cx.unit.func(*w).name.as_str())
        .collect();
    let waits_happen = cx.unit.reach_where_waits_happen();
    for (&id, _) in cx.reach.iter().filter(|(id, _)| waits_happen.contains(id)) {
        let func = cx.unit.func(id);
        let own = blocking_calls(func, cx.lang(id.0));
        // A call of a waiting helper waits where reconcile makes it: each line of the chain is one a reader may
        // name (the helper's wait, the call that runs it), and each holds the worker.
        let helpers = func.calls.iter().filter_map(|c| {
            // Called on a goroutine the function does not join (`go func() { waitForAPIServer(..) }()`): the
            // worker goes on.
            if !waiter_names.contains(c.callee.name()) || c.ctx.never_retries || c.ctx.on_goroutine {
                return None;
            }
            let target = cx
                .unit
                .resolve_call(c, id)
                .into_iter()
                .find(|t| waiters.contains(t))?;
            let name = c.callee.name();
            let what = match blocking_calls(cx.unit.func(target), cx.lang(target.0))
                .into_iter()
                .next()
            {
                Some((_, inner)) => format!("`{name}` (through `{inner}`)"),
                None => format!("`{name}`"),
            };
            Some((c.at.in_file(&func.span.file), what))
        });
        let calls = own
            .into_iter()
            .map(|(span, what)| (span, format!("`{what}`")))
            .chain(helpers);
        let guards = func
            .guards_across_await
            .iter()
            .map(|g| (g.span.clone(), format!("`{}`", g.what)));
        let mut sites: Vec<(Span, String)> = calls.chain(guards).collect();
        sites.sort_by_key(|(s, _)| (s.line, s.column));
        for (span, what) in sites {
            // A blocked worker thread stalls every task on it whichever path blocks it: cost per occurrence.
            let when = cx.when_fn(id);
            let (message, help) = match cx.lang(id.0) {
                Lang::Rust => (
                    format!(
                        "{what} blocks the async runtime {}{}",
                        when.phrase(),
                        cx.via(id)
                    ),
                    "use the async form (`tokio::time::sleep(..).await`, `tokio::fs`, `tokio::process`, an async client, `tokio::sync::Mutex`) or wrap it in `tokio::task::spawn_blocking`",
                ),
                Lang::Go => (
                    format!(
                        "{what} waits inside reconcile {}{}: it holds one of the controller's workers (one by default) while every other object waits",
                        when.phrase(),
                        cx.via(id)
                    ),
                    "return `ctrl.Result{RequeueAfter: d}` and let the workqueue come back, and watch what you wait for (`Owns`/`Watches`)",
                ),
            };
            let mut f = finding(&crate::registry::CA305, span, when.clone(), message, help);
            f.evidence = cx.call_path(id);
            out.push(f);
        }
    }
}
