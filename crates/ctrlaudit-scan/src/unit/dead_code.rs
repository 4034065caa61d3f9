//! Dead code a dispatcher leaves: `match phase { A => .., _ => legacy(..) }` hands `legacy` everything but `A`,
//! so `legacy`'s own `A` arm, and what only it calls, never run. And who calls whom, for judgements that need it.

use super::{FnId, Unit};
use crate::sema::CallPath;
use std::collections::{HashMap, HashSet};

impl Unit<'_> {
    /// Variants of an enum that `id`'s callers already handled before handing it the rest: its arms for them
    /// are dead code.
    pub fn dead_variants(&self, id: FnId) -> Option<&HashSet<String>> {
        self.dead_variants.get(&id)
    }

    /// Is `id` called only from arms that can never run? Its code is dead too.
    pub fn is_dead(&self, id: FnId) -> bool {
        self.dead_fns.contains(&id)
    }

    pub(super) fn only_called_from_dead_arms(&self) -> HashSet<FnId> {
        let mut from_dead: HashMap<FnId, usize> = HashMap::new();
        for (&caller, dead) in &self.dead_variants {
            let in_arms = self
                .func(caller)
                .calls
                .iter()
                .filter(|c| !c.ctx.variants.is_empty());
            for c in in_arms {
                if c.ctx.variants.iter().all(|v| dead.contains(v)) {
                    for t in self.resolve_callee(&c.callee, caller.0) {
                        *from_dead.entry(t).or_default() += 1;
                    }
                }
            }
        }
        from_dead
            .into_iter()
            .filter(|(t, n)| self.call_count(*t) <= *n)
            .map(|(t, _)| t)
            .collect()
    }

    /// How many call sites in the crate name `target`.
    fn call_count(&self, target: FnId) -> usize {
        self.call_sites().get(&target).map_or(0, Vec::len)
    }

    /// Every function's call sites (as reachability follows calls: not those on the deletion path), one caller
    /// per site, resolved once for the unit: callers are asked of many functions.
    fn call_sites(&self) -> &HashMap<FnId, Vec<FnId>> {
        self.call_sites.get_or_init(|| {
            let mut out: HashMap<FnId, Vec<FnId>> = HashMap::new();
            for caller in self.all_fns() {
                for c in self
                    .func(caller)
                    .calls
                    .iter()
                    .filter(|c| c.ctx.path != CallPath::Deletion)
                {
                    let mut targets = self.resolve_callee(&c.callee, caller.0);
                    targets.dedup();
                    for t in targets {
                        out.entry(t).or_default().push(caller);
                    }
                }
            }
            out
        })
    }

    pub(super) fn dispatched_away(&self) -> HashMap<FnId, HashSet<String>> {
        let mut handed: HashMap<FnId, Vec<&Vec<String>>> = HashMap::new();
        for id in self.all_fns() {
            for d in &self.func(id).dispatches {
                for t in self.resolve_callee(&d.callee, id.0) {
                    handed.entry(t).or_default().push(&d.handled);
                }
            }
        }
        let mut out = HashMap::new();
        for (target, sets) in handed {
            // Every call of it must be such a dispatch: another caller may pass any variant.
            if self.call_count(target) > sets.len() {
                continue;
            }
            let mut dead: HashSet<String> = sets[0].iter().cloned().collect();
            for s in &sets[1..] {
                dead.retain(|v| s.contains(v));
            }
            if !dead.is_empty() {
                out.insert(target, dead);
            }
        }
        out
    }

    /// The crate's functions that call `id` (by name, as reachability follows calls). Walks every function: for
    /// the rare finding that depends on its callers.
    pub fn callers(&self, id: FnId) -> Vec<FnId> {
        let mut out = self.call_sites().get(&id).cloned().unwrap_or_default();
        out.sort_unstable();
        out.dedup();
        out
    }
}
