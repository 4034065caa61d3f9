//! Reachability from the Controllers' reconciles: which functions run on a pass, on error paths only, or only
//! as a step of a change.

use super::{FnId, Unit};
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
        let none: Vec<String> = Vec::new();
        while let Some(id) = queue.pop_front() {
            let f = self.func(id);
            let path = seen.get(&id).cloned().unwrap_or_default();
            let error_calls = if edges == Edges::WithErrors {
                &f.error_calls
            } else {
                &none
            };
            // A name called as often on the excluded edges as in all is only called there.
            let excluded = match edges {
                Edges::Routine => &f.transition_calls,
                Edges::Normal | Edges::WithErrors => &none,
            };
            let followed = |n: &&String| {
                excluded.is_empty()
                    || f.calls
                        .iter()
                        .chain(&f.self_calls)
                        .chain(&f.method_calls)
                        .filter(|c| c == n)
                        .count()
                        > excluded.iter().filter(|c| c == n).count()
            };
            let callees = f
                .calls
                .iter()
                .chain(f.self_calls.iter())
                .filter(followed)
                .chain(error_calls.iter())
                .flat_map(|n| self.resolve(n, id.0))
                .chain(
                    f.method_calls
                        .iter()
                        .filter(followed)
                        .flat_map(|n| self.resolve_method(n)),
                )
                .chain(error_calls.iter().flat_map(|n| self.resolve_method(n)))
                .collect::<Vec<_>>();
            for callee in callees {
                // Calls on the deletion path are not followed (see `deletion_calls`): once per deletion.
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
    /// Normal calls but those on a branch arm that then changes state (see `FnModel::transition_calls`).
    Routine,
}
