//! Reachability from the Controllers' reconciles: which functions run on a pass, on error paths only, or only
//! as a step of a change.

use super::{FnId, Unit};
use crate::sema::{Call, CallPath, PhaseSet, enum_of, leaves_phase};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

impl Unit<'_> {
    /// Every function reachable from a reconcile root, with the call path that reaches it.
    pub fn reachable_from_reconcile(&self) -> BTreeMap<FnId, Vec<String>> {
        self.reach().0
    }

    /// [`Self::reachable_from_reconcile`], and the functions among them reached only through calls on an error
    /// path: they run when something failed, not on every reconcile.
    pub fn reach(&self) -> (BTreeMap<FnId, Vec<String>>, HashSet<FnId>) {
        let roots = self.root_paths();
        let normal = self.walk_calls(roots, Edges::Normal);
        // From everything reached, the error paths too: what they add is reached on error only.
        let from: Vec<(FnId, Vec<String>)> = normal.iter().map(|(k, v)| (*k, v.clone())).collect();
        let all = self.walk_calls(from, Edges::WithErrors);
        let error_only = all
            .keys()
            .filter(|k| !normal.contains_key(k))
            .copied()
            .collect();
        (all, error_only)
    }

    /// What reconcile reaches (its error paths too) where a wait holds its worker: not the helpers reached only
    /// with a condition that never asks to be tried again, nor what runs on a goroutine it starts, nor what only a
    /// singleton reconciler reaches.
    pub fn reach_where_waits_happen(&self) -> HashSet<FnId> {
        // A singleton's reconcile holds up no other object: waiting is how it batches (Karpenter's provisioner).
        let singletons: HashSet<FnId> = self
            .files
            .iter()
            .enumerate()
            .flat_map(|(fi, f)| f.controllers.iter().map(move |c| (fi, c)))
            .filter(|(_, c)| c.run.as_ref().is_some_and(|r| r.singleton))
            .flat_map(|(fi, c)| self.reconcile_fns(fi, c))
            .collect();
        // Nor does a loop on a timer: its next tick waits, no queued object does.
        let roots = self
            .root_paths()
            .into_iter()
            .filter(|(r, _)| !singletons.contains(r) && !self.is_timer_root(*r))
            .collect();
        self.walk_calls(roots, Edges::Waiting).into_keys().collect()
    }

    /// What only the timers reach (their error paths too): the functions no reconcile or queue worker reaches.
    pub fn reach_on_timers_only(&self) -> HashSet<FnId> {
        if self.periodic_roots().is_empty() {
            return HashSet::new();
        }
        let (from_roots, from_events): (Vec<_>, Vec<_>) = self
            .root_paths()
            .into_iter()
            .partition(|(r, _)| self.is_timer_root(*r));
        let by_events = self.walk_calls(from_events, Edges::WithErrors);
        self.walk_calls(from_roots, Edges::WithErrors)
            .into_keys()
            .filter(|id| !by_events.contains_key(id))
            .collect()
    }

    /// The module's functions a timer runs: called in a loop over a ticker, or handed to `wait.Until` and its kin
    /// (see [`crate::sema::CallCtx::periodic`]), not on an error path.
    /// Sorted, computed once per unit.
    pub fn periodic_roots(&self) -> &[FnId] {
        self.periodic_roots.get_or_init(|| {
            let mut found = Vec::new();
            for (fi, f) in self.files.iter().enumerate().filter(|(_, f)| !f.library) {
                for (ni, func) in f.fns.iter().enumerate() {
                    for c in func
                        .calls
                        .iter()
                        .filter(|c| c.ctx.periodic && c.ctx.path != CallPath::Error)
                    {
                        found.extend(self.resolve_call(c, (fi, ni)));
                    }
                }
            }
            found.sort_unstable();
            found.dedup();
            found
        })
    }

    /// A root only a timer runs: not a workqueue's worker that a `wait.Until` restarts, which holds its queue.
    fn is_timer_root(&self, r: FnId) -> bool {
        self.periodic_roots().binary_search(&r).is_ok() && !self.func(r).works_queue
    }

    /// The functions reached from a reconcile through calls that are not a creation or state-transition step:
    /// they run on passes that change nothing.
    ///
    /// A call that moves the object out of the phase it is made in is such a step too: made in the arm of a
    /// match on a phase (`Phase::Pending => start(..)`), or in a function only ever reached from such arms, of a
    /// function that sets the phase to another variant of that enum on every call (`start` sets
    /// `phase: Some(Phase::Running)`). The next pass takes another arm.
    pub fn reach_routine(&self) -> HashSet<FnId> {
        let phases = self.phase_contexts();
        let mut seen: HashSet<FnId> = self.reconcile_roots().into_iter().collect();
        let mut queue: VecDeque<FnId> = seen.iter().copied().collect();
        while let Some(id) = queue.pop_front() {
            let here = phases.get(&id).map_or(&[][..], Vec::as_slice);
            // The arms of this function where a call already moved the object on: what the arm calls after it
            // is a step of that move too (`accept(o)` then `expose(o)` in the arm of the new phase).
            let mut moved: Vec<&[String]> = Vec::new();
            for c in &self.func(id).calls {
                if c.ctx.path != CallPath::Routine || c.ctx.transition {
                    continue;
                }
                let own = c.ctx.phase_arm.as_slice();
                if !own.is_empty() && moved.contains(&own) {
                    continue;
                }
                let arm = edge_phase(c, here);
                for callee in self.resolve_call(c, id) {
                    if self.moves_phase(callee, &arm) {
                        if !own.is_empty() {
                            moved.push(own);
                        }
                        continue;
                    }
                    if seen.insert(callee) {
                        queue.push_back(callee);
                    }
                }
            }
        }
        seen
    }

    /// Every call of `f` sets the phase, and to no variant of `arm`'s that it matched.
    fn moves_phase(&self, f: FnId, arm: &[String]) -> bool {
        let sets: Vec<&PhaseSet> = self
            .func(f)
            .phase_sets
            .iter()
            .filter(|s| s.unconditional)
            .collect();
        !sets.is_empty() && sets.iter().all(|s| leaves_phase(arm, &s.to))
    }

    /// For each function reached on routine calls: the phases every path to it runs in, per enum (the variants
    /// of the match arms on the way, see [`CallCtx::phase_arm`]); an enum some path does not match on is
    /// dropped. A fixpoint: a function's context only loses enums or gains variants.
    fn phase_contexts(&self) -> HashMap<FnId, Vec<String>> {
        let mut ctx: HashMap<FnId, Vec<String>> = HashMap::new();
        let mut queue = VecDeque::new();
        for r in self.reconcile_roots() {
            ctx.insert(r, Vec::new());
            queue.push_back(r);
        }
        while let Some(id) = queue.pop_front() {
            let here = ctx.get(&id).cloned().unwrap_or_default();
            for c in &self.func(id).calls {
                if c.ctx.path != CallPath::Routine {
                    continue;
                }
                let incoming = edge_phase(c, &here);
                for callee in self.resolve_call(c, id) {
                    let merged = match ctx.get(&callee) {
                        None => incoming.clone(),
                        Some(have) => {
                            let m = meet(have, &incoming);
                            if &m == have {
                                continue;
                            }
                            m
                        }
                    };
                    ctx.insert(callee, merged);
                    queue.push_back(callee);
                }
            }
        }
        ctx
    }

    /// The functions that one Controller's reconcile reaches (its error paths too), or `None` when which function
    /// it runs is not known: what a finding about that Controller may cite, never another Controller's code.
    pub fn reach_of(&self, file: usize, c: &crate::sema::ControllerModel) -> Option<Vec<FnId>> {
        let roots: Vec<(FnId, Vec<String>)> = self
            .reconcile_fns(file, c)
            .into_iter()
            .map(|r| (r, vec![self.func(r).name.clone()]))
            .collect();
        if roots.is_empty() {
            return None;
        }
        Some(
            self.walk_calls(roots, Edges::WithErrors)
                .into_keys()
                .collect(),
        )
    }

    /// The functions one root reaches (its error paths too).
    pub fn reach_from(&self, root: FnId) -> Vec<FnId> {
        let roots = vec![(root, vec![self.func(root).name.clone()])];
        self.walk_calls(roots, Edges::WithErrors)
            .into_keys()
            .collect()
    }

    fn root_paths(&self) -> Vec<(FnId, Vec<String>)> {
        self.reconcile_roots()
            .into_iter()
            .map(|r| (r, vec![self.func(r).name.clone()]))
            .collect()
    }

    /// Breadth-first from `start` along calls (see [`Edges`]), with the call path that reaches each function.
    /// Calls on the deletion path are not followed: they run once per deletion.
    fn walk_calls(
        &self,
        start: Vec<(FnId, Vec<String>)>,
        edges: Edges,
    ) -> BTreeMap<FnId, Vec<String>> {
        let mut seen: BTreeMap<FnId, Vec<String>> = BTreeMap::new();
        let mut queue = VecDeque::new();
        for (r, path) in start {
            seen.insert(r, path);
            queue.push_back(r);
        }
        while let Some(id) = queue.pop_front() {
            let f = self.func(id);
            let path = seen.get(&id).cloned().unwrap_or_default();
            let followed = |c: &&Call| match c.ctx.path {
                _ if edges == Edges::Waiting && (c.ctx.never_retries || c.ctx.on_goroutine) => {
                    false
                }
                CallPath::Routine => true,
                CallPath::Error => edges != Edges::Normal,
                // Once per deletion, not on a reconcile pass.
                CallPath::Deletion => false,
            };
            // A function whose returned closure goes straight to another call (a cron job, an event receiver)
            // runs that closure's waits on the taker's time: the worker waits for none of them.
            let hands_closure = |c: &Call, callee: &FnId| {
                edges == Edges::Waiting
                    && c.ctx.handed_on
                    && self.func(*callee).signature.contains("->func(")
            };
            let callees: Vec<FnId> = f
                .calls
                .iter()
                .filter(followed)
                .flat_map(|c| {
                    self.resolve_call(c, id)
                        .into_iter()
                        .filter(move |callee| !hands_closure(c, callee))
                })
                .collect();
            for callee in callees {
                if seen.contains_key(&callee) {
                    continue;
                }
                let mut p = path.clone();
                p.push(self.func(callee).name.clone());
                seen.insert(callee, p);
                queue.push_back(callee);
            }
        }
        seen
    }
}

/// The phases a call runs in: its own arms' variants, and for the other enums those its function is always
/// reached in.
fn edge_phase(c: &Call, caller: &[String]) -> Vec<String> {
    let own = &c.ctx.phase_arm;
    let mut all = own.clone();
    all.extend(
        caller
            .iter()
            .filter(|v| !own.iter().any(|o| enum_of(o) == enum_of(v)))
            .cloned(),
    );
    all
}

/// What two paths to a function agree on: the enums both matched, with the variants of either.
fn meet(a: &[String], b: &[String]) -> Vec<String> {
    let in_both = |v: &String| {
        a.iter().any(|x| enum_of(x) == enum_of(v)) && b.iter().any(|x| enum_of(x) == enum_of(v))
    };
    let mut out: Vec<String> = Vec::new();
    for v in a.iter().chain(b) {
        if in_both(v) && !out.contains(v) {
            out.push(v.clone());
        }
    }
    out
}

/// Which calls a reachability walk follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edges {
    /// Calls outside error and deletion paths.
    Normal,
    /// Those and the calls on error paths.
    WithErrors,
    /// As `WithErrors`, except calls of a poll helper handed a condition that never asks again
    /// (`CallCtx::never_retries`: the helper returns after its first try and none of its waits happen), and
    /// calls that start a goroutine (`CallCtx::on_goroutine`: what it waits for holds no worker).
    Waiting,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn paths_agree_per_enum() {
        // Both paths run in a phase of `P`; only one also in a mode: the mode says nothing for the other.
        let a = v(&["P::Pending", "Mode::Strict"]);
        let b = v(&["P::Failed"]);
        assert_eq!(meet(&a, &b), v(&["P::Pending", "P::Failed"]));
        assert_eq!(meet(&a, &[]), Vec::<String>::new());
    }

    #[test]
    fn a_call_keeps_the_callers_phase_unless_its_own_arm_names_that_enum() {
        let mut c = Call {
            callee: crate::sema::Callee::Path("f".into()),
            at: Default::default(),
            type_args: Vec::new(),
            args: Vec::new(),
            ctx: Default::default(),
        };
        c.ctx.phase_arm = v(&["Mode::Strict"]);
        assert_eq!(
            edge_phase(&c, &v(&["P::Running"])),
            v(&["Mode::Strict", "P::Running"])
        );
        c.ctx.phase_arm = v(&["P::Pending", "P::None"]);
        assert_eq!(
            edge_phase(&c, &v(&["P::Running"])),
            v(&["P::Pending", "P::None"])
        );
        assert!(leaves_phase(&v(&["P::Pending", "P::None"]), "P::Running"));
        assert!(!leaves_phase(&v(&["P::Running"]), "P::Running"));
        assert!(!leaves_phase(&v(&["Mode::Strict"]), "P::Running"));
    }
}
