//! Generic runners and helpers instantiated with concrete kinds: `run::<ARecord>(client)` makes the `K` of
//! `fn run<K>` stand for `ARecord` in every fact of `run` (its `Api::<K>` calls, the Controller it builds), when
//! the crate instantiates it with that one kind. A parameter instantiated with several kinds keeps its name.

use super::{FnId, Unit};
use crate::config::Config;
use crate::sema::{ApiCall, FileModel};
use std::collections::{HashMap, HashSet};

/// How many generic callers deep an instantiation is followed (`main` → `run_all::<A>` → `run::<K>`).
const MAX_GENERIC_DEPTH: usize = 3;

/// Per function generic over a kind, each type parameter the crate instantiates with one concrete type.
pub type Instantiations = HashMap<FnId, Vec<(String, String)>>;

impl Unit<'_> {
    /// Every type parameter of the crate's functions that the crate's turbofish calls instantiate with exactly
    /// one concrete type, through generic callers a few deep.
    pub fn instantiations(&self) -> Instantiations {
        // Who instantiates whom: callee → (caller, the turbofish's types).
        let mut by_callee: HashMap<FnId, Vec<(FnId, &[String])>> = HashMap::new();
        for caller in self.all_fns() {
            for c in &self.func(caller).calls {
                if c.type_args.is_empty() {
                    continue;
                }
                for target in self.resolve_callee(&c.callee, caller.0) {
                    by_callee
                        .entry(target)
                        .or_default()
                        .push((caller, &c.type_args));
                }
            }
        }
        let mut out = Instantiations::new();
        for &id in by_callee.keys() {
            if self.files[id.0].library {
                continue;
            }
            for param in &self.func(id).generics {
                let kinds = concrete(self, &by_callee, id, param, MAX_GENERIC_DEPTH);
                if let [only] = &kinds[..] {
                    out.entry(id)
                        .or_default()
                        .push((param.clone(), only.clone()));
                }
            }
        }
        out
    }
}

/// The concrete types `param` of `id` stands for, as its callers instantiate it.
fn concrete(
    unit: &Unit<'_>,
    by_callee: &HashMap<FnId, Vec<(FnId, &[String])>>,
    id: FnId,
    param: &str,
    depth: usize,
) -> Vec<String> {
    let f = unit.func(id);
    let Some(pos) = f.generics.iter().position(|g| g == param) else {
        return vec![param.to_string()];
    };
    let mut out: Vec<String> = Vec::new();
    for (caller, args) in by_callee.get(&id).into_iter().flatten() {
        let Some(arg) = args.get(pos).filter(|a| *a != "_") else {
            continue;
        };
        // The caller's own type parameter: what its callers make it.
        let kinds = if unit.func(*caller).generics.contains(arg) {
            if depth == 0 {
                continue;
            }
            concrete(unit, by_callee, *caller, arg, depth - 1)
        } else {
            vec![arg.clone()]
        };
        for k in kinds {
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }
    out
}

/// Writes instantiated kinds into the crate's own models (`models` are the unit's first files).
fn instantiate(models: &mut [FileModel], inst: &Instantiations) {
    for (&(fi, ni), params) in inst {
        let Some(file) = models.get_mut(fi) else {
            continue;
        };
        let subst = |kind: &mut Option<String>| {
            if let Some((_, concrete)) = params.iter().find(|(p, _)| Some(p) == kind.as_ref()) {
                *kind = Some(concrete.clone());
            }
        };
        let Some(f) = file.fns.get_mut(ni) else {
            continue;
        };
        let name = f.name.clone();
        let calls = f
            .api_calls
            .iter_mut()
            .chain(f.volatile_writes.iter_mut().map(|v| &mut v.write))
            .chain(f.param_writes.iter_mut().map(|(_, c)| c));
        calls.for_each(|c: &mut ApiCall| subst(&mut c.kind));
        for a in &mut f.api_arg_calls {
            subst(&mut a.call.kind);
        }
        subst(&mut f.object_kind);
        for c in file.controllers.iter_mut().filter(|c| c.in_fn == name) {
            subst(&mut c.kind);
        }
    }
}

/// Joins a crate's models and its dependencies' into a unit, with generic functions' kinds instantiated: a
/// first join finds the instantiations (only when some call has a turbofish), a second judges with them.
pub fn join<'m>(
    models: &'m mut [FileModel],
    libraries: Vec<&'m FileModel>,
    yaml_kinds: HashMap<String, bool>,
    config: &'m Config,
    dependencies: HashSet<String>,
) -> Unit<'m> {
    let turbofish = models
        .iter()
        .flat_map(|m| m.fns.iter())
        .any(|f| f.calls.iter().any(|c| !c.type_args.is_empty()));
    if turbofish {
        let inst = {
            let all = models.iter().chain(libraries.iter().copied()).collect();
            Unit::with_dependencies(all, yaml_kinds.clone(), config, dependencies.clone())
                .instantiations()
        };
        instantiate(models, &inst);
    }
    let models: &'m [FileModel] = models;
    Unit::with_dependencies(
        models.iter().chain(libraries).collect(),
        yaml_kinds,
        config,
        dependencies,
    )
}
