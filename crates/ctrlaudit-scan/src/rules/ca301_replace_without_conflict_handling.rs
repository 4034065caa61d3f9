//! CA301: a `replace`/`replace_status`/`entry().commit()` (a PUT that carries resourceVersion)
//! whose error is propagated with no 409 handling: concurrent writers turn into failed reconciles.

use super::{Ctx, finding};
use crate::finding::Finding;
use crate::sema::{Lang, Verb};
use std::collections::{BTreeMap, BTreeSet};

/// Built-in kinds whose objects the cluster's own agents write all the time, and who: the kubelet updates every
/// Pod's and Node's status, Kubernetes' Job controller a Job's as its pods start and finish, the workload
/// controllers a Deployment's, StatefulSet's, DaemonSet's or ReplicaSet's as its pods become ready, the quota
/// controller a ResourceQuota's usage as objects come and go. Each write bumps the resourceVersion a PUT of the
/// whole object carries.
const WRITTEN_BY_THE_CLUSTER: &[(&str, &str)] = &[
    ("Pod", "the kubelet"),
    ("Node", "the kubelet"),
    ("Job", "Kubernetes' Job controller"),
    ("Deployment", "Kubernetes' Deployment controller"),
    ("StatefulSet", "Kubernetes' StatefulSet controller"),
    ("DaemonSet", "Kubernetes' DaemonSet controller"),
    ("ReplicaSet", "Kubernetes' ReplicaSet controller"),
    ("ResourceQuota", "Kubernetes' resource quota controller"),
];

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let racing = racing_writers(cx);
    let retried = retried_fns(cx);
    let mut handled_above = BTreeMap::new();
    for id in cx.unit.all_fns() {
        let func = cx.unit.func(id);
        // controller-runtime's workqueue never hands one object to two workers, and a 409 returned goes back
        // through its rate limiter: in Go a PUT races only with another writer of the same objects. A
        // `RetryOnConflict` covers the calls in it (`in_retry`), not the function's others.
        if cx.lang(id.0) == Lang::Go {
            // Who tells a 409 apart up the path is asked only of a function with a PUT reconcile reaches.
            let puts = cx.reach.contains_key(&id)
                && cx.unit.api_calls(id).any(|c| c.method.verb() == Verb::Update);
            if puts
                && !func.clears_resource_version
                && !retried.contains(&id)
                && !tells_conflict_on_every_path(cx, id, &mut handled_above)
            {
                go_check(cx, id, &racing, out);
            }
            continue;
        }
        if func.handles_conflict() || func.clears_resource_version {
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

/// Whether a 409 that Go function `id` returns is told apart on its way up, on every path: by the function
/// itself (`apierrors.IsConflict(err)`), or by each of its callers right after calling it (`if err :=
/// r.updateStatus(ctx, w); apierrors.IsConflict(err) { requeue }`), or by theirs when they return it. A
/// caller's test of another call's error tells nothing of this one's.
fn tells_conflict_on_every_path(
    cx: &Ctx<'_>,
    id: crate::unit::FnId,
    memo: &mut BTreeMap<crate::unit::FnId, bool>,
) -> bool {
    cx.unit.func(id).error_signs.iter().any(|s| s.tests_conflict()) || told_above(cx, id, memo)
}

/// Whether every caller of `id` tests for a 409 right after calling it, or is itself so covered above.
fn told_above(
    cx: &Ctx<'_>,
    id: crate::unit::FnId,
    memo: &mut BTreeMap<crate::unit::FnId, bool>,
) -> bool {
    if let Some(&known) = memo.get(&id) {
        return known;
    }
    // Until known: a call cycle back here tells nothing.
    memo.insert(id, false);
    let callers = cx.unit.callers(id);
    let told = !callers.is_empty()
        && callers.into_iter().all(|c| {
            let f = cx.unit.func(c);
            let tested_after_call = || {
                f.calls
                    .iter()
                    .filter(|call| cx.unit.resolve_callee(&call.callee, c.0).contains(&id))
                    .any(|call| {
                        f.conflict_tests
                            .iter()
                            .any(|&t| (call.at.line..=call.at.line + CONFLICT_TEST_LINES).contains(&t))
                    })
            };
            cx.lang(c.0) == Lang::Go && (tested_after_call() || told_above(cx, c, memo))
        });
    memo.insert(id, told);
    told
}

/// How far below a call a 409 test is still of that call's error: the same line (`if err := f(); IsConflict(err)`)
/// or the `if err != nil {` block right under it.
const CONFLICT_TEST_LINES: u32 = 3;

/// Go functions a conflict retry runs, or whose returned closure it runs, or that are only ever called from
/// inside one (`retry.RetryOnConflict(b, func() error { .. m.UpdatePod(pod) .. })`): their PUTs are retried on 409.
fn retried_fns(cx: &Ctx<'_>) -> BTreeSet<crate::unit::FnId> {
    let mut retried: BTreeSet<crate::unit::FnId> = cx
        .unit
        .all_fns()
        .flat_map(|id| {
            cx.unit
                .func(id)
                .func_args
                .iter()
                .filter(|(callee, _, _)| matches!(callee, crate::sema::Callee::Path(p) if p == crate::sema::RETRIED))
                .flat_map(move |(_, _, passed)| cx.unit.resolve_callee(passed, id.0))
        })
        .collect();
    let mut in_retry: BTreeMap<crate::unit::FnId, bool> = BTreeMap::new();
    for id in cx.unit.all_fns().filter(|id| cx.lang(id.0) == Lang::Go) {
        for call in &cx.unit.func(id).calls {
            for target in cx.unit.resolve_callee(&call.callee, id.0) {
                let only = in_retry.entry(target).or_insert(true);
                *only &= call.ctx.in_conflict_retry;
            }
        }
    }
    retried.extend(in_retry.into_iter().filter(|(_, only)| *only).map(|(id, _)| id));
    retried
}

/// The kinds whose objects more than one writer changes, with who they are: a kind some Controller of the unit
/// reconciles and another Controller's reconcile writes too (the RayCluster a RayJob controller updates while
/// the RayCluster controller writes its status), or a kind the cluster writes itself (Pods, Nodes). A reconcile
/// root no Controller names with its type (a generic job reconciler, a client-go workqueue's worker) is a writer
/// of its own.
fn racing_writers(cx: &Ctx<'_>) -> BTreeMap<String, Vec<String>> {
    let mut writers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut reconciled = BTreeSet::new();
    let mut counted = BTreeSet::new();
    // Two controllers of one kind (an operator's and the agent's it runs on each cluster; a status reconciler beside
    // the main one) are two writers: each is then named by its reconciler.
    let mut reconcilers_of: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (fi, file) in cx.unit.files.iter().enumerate().filter(|(_, f)| f.lang == Lang::Go) {
        for c in &file.controllers {
            if let (Some(k), Some(r)) = (&c.kind, cx.unit.reconcile_of(fi, c)) {
                let dir = crate::unit::package_dir(&file.path);
                reconcilers_of
                    .entry(k.clone())
                    .or_default()
                    .insert(format!("{dir}/{r}"));
            }
        }
    }
    for (fi, file) in cx.unit.files.iter().enumerate() {
        if file.lang != Lang::Go {
            continue;
        }
        for c in &file.controllers {
            let Some(fns) = cx.unit.reach_of(fi, c) else {
                continue;
            };
            // Whose reconcile it runs must be known (`WidgetReconciler::Reconcile`): by its bare name, every
            // reconciler's writes would look like this one's.
            let Some(reconcile) = cx.unit.reconcile_of(fi, c).filter(|r| r.contains("::")) else {
                continue;
            };
            let who = match &c.kind {
                Some(k) if reconcilers_of.get(k).is_some_and(|r| r.len() > 1) => {
                    // `…/agent/controller` beside `…/reconciler`: the package tells two of one type name apart.
                    let pkg = crate::unit::module_of(&file.path);
                    let ty = reconcile.split("::").next().unwrap_or(&reconcile);
                    format!("`{pkg}.{ty}`")
                }
                Some(k) => format!("the `{k}` controller"),
                None => format!("`{reconcile}`"),
            };
            if let Some(k) = &c.kind {
                reconciled.insert(k.clone());
            }
            counted.extend(cx.unit.resolve(&reconcile, fi));
            record_writes(cx, fns, &who, &mut writers);
        }
    }
    for root in cx.unit.reconcile_roots() {
        if cx.lang(root.0) != Lang::Go || counted.contains(&root) {
            continue;
        }
        let f = cx.unit.func(root);
        let who = match &f.self_ty {
            Some(t) => format!("`{t}.{}`", f.name),
            None => format!("`{}`", f.name),
        };
        record_writes(cx, cx.unit.reach_from(root), &who, &mut writers);
    }
    let mut out: BTreeMap<String, Vec<String>> = writers
        .into_iter()
        .filter(|(k, w)| reconciled.contains(k) && w.len() > 1)
        .map(|(k, w)| (k, w.into_iter().collect()))
        .collect();
    for (k, who) in WRITTEN_BY_THE_CLUSTER {
        out.entry(k.to_string()).or_default().push(who.to_string());
    }
    out
}

/// Records `who` as a writer of each kind the functions `fns` update or patch (deletion paths aside): a create
/// fails on an object that exists and a delete removes it, so neither moves the resourceVersion a PUT carries.
fn record_writes(
    cx: &Ctx<'_>,
    fns: Vec<crate::unit::FnId>,
    who: &str,
    writers: &mut BTreeMap<String, BTreeSet<String>>,
) {
    for id in fns {
        for call in cx.unit.api_calls(id) {
            if matches!(call.method.verb(), Verb::Update | Verb::Patch)
                && !call.on_deletion
                && let Some(k) = &call.kind
            {
                writers.entry(k.clone()).or_default().insert(who.to_string());
            }
        }
    }
}

/// A Go PUT (`Update`, `Status().Update`) reached from a reconcile, of a kind that other writers change too,
/// outside `retry.RetryOnConflict` and with no `IsConflict` test.
fn go_check(
    cx: &Ctx<'_>,
    id: crate::unit::FnId,
    racing: &BTreeMap<String, Vec<String>>,
    out: &mut Vec<Finding>,
) {
    if !cx.reach.contains_key(&id) {
        return;
    }
    let calls: Vec<&crate::sema::ApiCall> = cx.unit.api_calls(id).collect();
    for call in calls.iter().copied() {
        // An error only logged loses the write, but fails no reconcile: the rule is about 409s returned.
        if call.method.verb() != Verb::Update || call.in_retry || call.on_deletion || !call.propagated {
            continue;
        }
        // An object built here carries no resourceVersion: an unconditional PUT, never a 409.
        if call.unversioned {
            continue;
        }
        // A failed PUT followed by a loop that reads the object again and repeats it (`for i := 0; i < n && err
        // != nil; i++ { node, err = c.Get(..); _, err = c.Update(..) }`): a conflict retry written by hand.
        let retried_by_hand = |verb: Verb| {
            calls.iter().any(|r| {
                r.in_retry && r.kind == call.kind && r.method.verb() == verb && r.span.line > call.span.line
            })
        };
        if retried_by_hand(Verb::Get) && retried_by_hand(Verb::Update) {
            continue;
        }
        let Some((kind, who)) = call.kind.as_deref().and_then(|k| racing.get_key_value(k)) else {
            continue;
        };
        // Read from the API server just before (a clientset `Get`, not the cache): the PUT carries the
        // resourceVersion of that moment, and only a write in between the two requests makes it fail.
        let fresh = calls.iter().any(|r| {
            r.method.verb() == Verb::Get
                && r.kind == call.kind
                && r.span.line < call.span.line
                && !cx.unit.reads_cache(id, r)
        });
        if fresh {
            continue;
        }
        let when = cx.when_call(id, call);
        let mut f = finding(
            &crate::registry::CA301,
            call.span.clone(),
            when.clone(),
            format!(
                "`{}` {} PUTs a `{kind}` with the resourceVersion it read, and `{kind}` objects are written by {}: \
                 when another got there first the PUT fails with 409 Conflict and the pass is lost{}",
                call.text,
                when.phrase(),
                who.join(", "),
                cx.via(id)
            ),
            "wrap the read and the write in `retry.RetryOnConflict(retry.DefaultRetry, ..)`, or send a merge patch \
             (`client.MergeFrom`) or server-side apply, which carry no resourceVersion",
        );
        f.evidence = cx.call_path(id);
        out.push(f);
    }
}
