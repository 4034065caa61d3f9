//! Values across functions once the crate is joined: which functions return a volatile value or a constant
//! duration, and which parameters reach the body of a write, through helpers that hand them on.

use super::{FnId, Unit, package_dir};
use crate::sema::{ApiCall, Callee, DurationReturn, Value, VolatileReturn, unbound};
use std::collections::HashMap;

/// How many helpers deep a parameter is followed to a write (`patch_process_status` → `merge_status` →
/// `patch_status`).
const MAX_HANDOFFS: usize = 3;

/// Methods of the interfaces and types every Go program holds (`io.Writer`, `io.Closer`, `*os.File`,
/// `sync.Mutex`, `sync.WaitGroup`, `context.Context`, `watch.Interface`, a workqueue, `fmt.Stringer`, `error`), with
/// the number of arguments they take: such a call on a value whose type the walk does not know (`watcher.Stop()`,
/// `f.Sync()`) is not followed to the module's methods of that name. A call with other arguments (`s.Sync(ctx,
/// cr)`) is no call of these.
const LIBRARY_METHODS: &[(&str, usize)] = &[
    ("Stop", 0),
    ("Close", 0),
    ("Sync", 0),
    ("Flush", 0),
    ("Lock", 0),
    ("Unlock", 0),
    ("RLock", 0),
    ("RUnlock", 0),
    ("Wait", 0),
    ("Done", 0),
    ("Err", 0),
    ("ResultChan", 0),
    ("ShutDown", 0),
    ("String", 0),
    ("Error", 0),
    ("Len", 0),
    ("Write", 1),
    ("Read", 1),
    ("Forget", 1),
];

impl Unit<'_> {
    /// The function a call of `name` (from `from_file`) runs, when it returns a volatile value.
    pub fn volatile_return(&self, name: &str, from_file: usize) -> Option<(FnId, &VolatileReturn)> {
        self.resolve(name, from_file)
            .into_iter()
            .find_map(|id| Some((id, self.func(id).returns_volatile.as_ref()?)))
    }

    /// The write that argument `index` of a call of `callee` (from `from`) reaches unguarded, in the callee or in
    /// a helper it hands the value on to.
    pub fn param_write(&self, callee: &str, index: usize, from: FnId) -> Option<&ApiCall> {
        self.param_write_within(callee, index, from.0, MAX_HANDOFFS)
    }

    fn param_write_within(
        &self,
        callee: &str,
        index: usize,
        from_file: usize,
        depth: usize,
    ) -> Option<&ApiCall> {
        let targets: Vec<FnId> = self
            .resolve(callee, from_file)
            .into_iter()
            .chain(self.resolve_method(callee))
            .collect();
        for id in &targets {
            let f = self.func(*id);
            if let Some((_, w)) = f.param_writes.iter().find(|(i, _)| *i == index) {
                return Some(w);
            }
        }
        if depth == 0 {
            return None;
        }
        targets.iter().find_map(|id| {
            self.func(*id)
                .param_passes
                .iter()
                .filter(|p| p.param == index)
                .find_map(|p| self.param_write_within(&p.callee, p.index, id.0, depth - 1))
        })
    }

    /// The functions a call may run ([`Self::resolve_callee`]); in Go, a method reached by its name alone only
    /// where the call gives at least all its parameters but one (a variadic one may get none; the front end does
    /// not record which is variadic): a workqueue's `Get()` is not the module's `Get(ctx, key)`; and never for a
    /// call of an everyday library method on a value of unknown type ([`LIBRARY_METHODS`]).
    pub fn resolve_call(&self, c: &crate::sema::Call, from: FnId) -> Vec<FnId> {
        let from_file = from.0;
        if self.files[from_file].lang == crate::sema::Lang::Go
            && let Callee::Method(m) = &c.callee
            && LIBRARY_METHODS.contains(&(m.as_str(), c.args.len()))
        {
            return Vec::new();
        }
        let mut targets = self.resolve_callee(&c.callee, from_file);
        // `syncHandler(ctx, key)` where `syncHandler` is a parameter: what callers hand it.
        if targets.is_empty()
            && let Callee::Path(p) = &c.callee
            && let Some(i) = self.func(from).params.iter().position(|x| x == p)
        {
            targets = self.handed_to(from, i, 3);
        }
        if self.files[from_file].lang == crate::sema::Lang::Go
            && matches!(
                c.callee,
                Callee::Method(_) | Callee::TypedMethod(..) | Callee::OnType(..)
            )
        {
            // Go has neither overloads nor default arguments: a method taken by its name alone is one whose
            // parameters the arguments fill (`tmpl.Execute(&buf, vars)` is no `Execute()` of the module's).
            targets.retain(|t| {
                let f = self.func(*t);
                let variadic = f
                    .signature
                    .split("->")
                    .next()
                    .is_some_and(|p| p.contains("..."));
                c.args.len() + 1 >= f.params.len() && (variadic || c.args.len() <= f.params.len())
            });
        }
        targets
    }

    /// The functions callers hand `f` as its argument `i`: method values, or their own parameters passed on (a
    /// few hops up).
    fn handed_to(&self, f: FnId, i: usize, depth: u8) -> Vec<FnId> {
        if depth == 0 {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (caller, at, value) in self.handed_sites().get(&f).into_iter().flatten() {
            if *at != i {
                continue;
            }
            let passed_on = match value {
                Callee::Path(p) => self.func(*caller).params.iter().position(|x| x == p),
                _ => None,
            };
            match passed_on {
                Some(j) => out.extend(self.handed_to(*caller, j, depth - 1)),
                None => out.extend(self.resolve_callee(value, caller.0)),
            }
        }
        out
    }

    /// Every function handed another as an argument (`FnModel::func_args`), with who hands what at which
    /// position: resolved once per unit, as every call of a parameter asks.
    fn handed_sites(&self) -> &HashMap<FnId, super::HandedSites> {
        self.handed_sites.get_or_init(|| {
            let mut out: HashMap<FnId, super::HandedSites> = HashMap::new();
            for caller in self.all_fns() {
                for (called, at, value) in &self.func(caller).func_args {
                    let mut targets = self.resolve_callee(called, caller.0);
                    targets.sort_unstable();
                    targets.dedup();
                    for t in targets {
                        out.entry(t).or_default().push((caller, *at, value.clone()));
                    }
                }
            }
            out
        })
    }

    /// The crate functions a call may run: a method (`e.metric_label()`) among the crate's methods, a function
    /// (`requeue::delay(..)`) by its name and module.
    pub fn resolve_callee(&self, callee: &Callee, from_file: usize) -> Vec<FnId> {
        let found = match callee {
            Callee::Method(m) => self.resolve_method(m),
            // Of one of the unit's packages, that package's method of the name, else a method like any other (a
            // field of function type included); of another module's, none of the unit's.
            Callee::TypedMethod(package, m) if self.has_package(package) => self
                .package_methods(package, m)
                .unwrap_or_else(|| self.resolve_method(m)),
            Callee::TypedMethod(..) => return Vec::new(),
            Callee::OnType(t, m) => match self.resolve_on_type(t, m, from_file) {
                Some(found) => return found,
                None => self.resolve_method(m),
            },
            // `self.f(..)`: the method of this file's impl first, as a bare name resolves.
            Callee::SelfMethod(m) => self.resolve(m, from_file),
            Callee::Path(p) => {
                let found = self.resolve(p, from_file);
                // `updateDeploymentAndWait(..)`, no function of that name: the function a package-level
                // variable so named holds.
                if !found.is_empty() || p.contains("::") {
                    return found;
                }
                return self.stored_funcs(p, from_file);
            }
        };
        if !found.is_empty() {
            return found;
        }
        // `c.syncHandler(key)`, no method of that name: the methods stored in a field so named (one hop, so
        // that a field stored in itself cannot loop).
        let (Callee::Method(m)
        | Callee::SelfMethod(m)
        | Callee::TypedMethod(_, m)
        | Callee::OnType(_, m)) = callee
        else {
            return found;
        };
        self.stored_funcs(m, from_file)
    }

    /// The functions stored under `name` (a field, or a package-level variable) in the package of file
    /// `from_file`: only the caller's own package, as another package's controllers have `syncHandler`s of
    /// their own. One hop, so that a field stored in itself cannot loop.
    fn stored_funcs(&self, m: &str, from_file: usize) -> Vec<FnId> {
        let package = package_dir(&self.files[from_file].path);
        self.func_fields
            .get(&(package, m))
            .into_iter()
            .flatten()
            .filter(|(_, c)| !matches!(c, Callee::Method(x) | Callee::SelfMethod(x) | Callee::Path(x) if x == m))
            .flat_map(|&(fi, c)| match c {
                Callee::Method(x) | Callee::TypedMethod(_, x) | Callee::OnType(_, x) => {
                    self.resolve_method(x)
                }
                Callee::SelfMethod(x) | Callee::Path(x) => self.resolve(x, fi),
            })
            .collect()
    }

    /// `err.retry_after().unwrap_or(DEFAULT)` (or `unwrap_or_else(|| DEFAULT)`) where the crate's `retry_after`
    /// returns that same constant or `None` on every path: the constant.
    pub(super) fn duration_or_default(&self, v: &Value, from_file: usize) -> Option<f64> {
        let Value::OrDefault { of, default } = v else {
            return None;
        };
        let Value::Call { callee, .. } = &**of else {
            return None;
        };
        let default = default.secs(self.consts_of(from_file), &unbound)?;
        let targets = self.resolve_callee(callee, from_file);
        let [target] = targets[..] else {
            return None;
        };
        let returns = &self.func(target).duration_returns;
        let same = |r: &DurationReturn| match r {
            DurationReturn::Secs(s) => *s == default,
            DurationReturn::Nothing => true,
            DurationReturn::Unknown => false,
        };
        (!returns.is_empty() && returns.iter().all(same)).then_some(default)
    }
}
