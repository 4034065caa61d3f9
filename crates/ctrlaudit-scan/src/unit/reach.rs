//! Reachability from the Controllers' reconciles: which functions run on a pass, on error paths only, or only
//! as a step of a change.

use super::{FnId, Unit};
use crate::sema::{Call, CallPath};
use std::collections::{BTreeMap, HashSet, VecDeque};

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

    /// The functions reached from a reconcile through calls that are not a creation or state-transition step:
    /// they run on passes that change nothing.
    pub fn reach_routine(&self) -> HashSet<FnId> {
        self.walk_calls(self.root_paths(), Edges::Routine)
            .into_keys()
            .collect()
    }

    /// The functions that one Controller's reconcile reaches (its error paths too), or `None` when which function
    /// it runs is not known: what a finding about that Controller may cite, never another Controller's code.
    pub fn reach_of(&self, file: usize, c: &crate::sema::ControllerModel) -> Option<Vec<FnId>> {
        let name = c.run.as_ref()?.reconcile.as_ref()?;
        let roots: Vec<(FnId, Vec<String>)> = self
            .resolve(name, file)
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
                CallPath::Routine => !(edges == Edges::Routine && c.ctx.transition),
                CallPath::Error => edges == Edges::WithErrors,
                // Once per deletion, not on a reconcile pass.
                CallPath::Deletion => false,
            };
            let callees: Vec<FnId> = f
                .calls
                .iter()
                .filter(followed)
                .flat_map(|c| self.resolve_callee(&c.callee, id.0))
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

/// Which calls a reachability walk follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edges {
    /// Calls outside error and deletion paths.
    Normal,
    /// Those and the calls on error paths.
    WithErrors,
    /// Normal calls but those on a branch arm that then changes state (see `CallCtx::transition`).
    Routine,
}
