//! Name resolution in the unit: which functions a called name, a method name or an interface's method may be
//! (same file, then the Go package, then unique in the unit; a dependency's own functions for its paths).

use super::{FnId, MAX_IMPLEMENTATIONS, MAX_METHOD_TARGETS, Unit, module_of, package_dir};
use std::collections::{HashMap, HashSet};

impl<'m> Unit<'m> {
    /// Resolves a called name from a file: same file first, then (Go) the file's package, then unique in the
    /// unit.
    pub fn resolve(&self, name: &str, from_file: usize) -> Vec<FnId> {
        // A trait method on a type parameter reaches each impl of it (in any file); which one runs depends on
        // the instantiation, and every instantiation runs as a reconcile.
        if let Some(f) = name
            .strip_prefix(crate::sema::GENERIC)
            .and_then(|n| n.strip_prefix("::"))
        {
            return self.prefer_crate(
                self.by_method
                    .get(f)
                    .into_iter()
                    .flatten()
                    .copied()
                    .collect(),
            );
        }
        // `module::f`: the `f` of the file that module is, when the crate has several.
        if let Some(("super", f)) = name.rsplit_once("::") {
            return self.resolve_in_parent(f, from_file);
        }
        // Go: `sigs.k8s.io/kueue/pkg/workload::IsActive`, a function of the package whose directory the import
        // path ends with; none when the path is another module's (`github.com/expr-lang/expr::Run` is never the
        // module's own `Run`).
        if self.files[from_file].lang == crate::sema::Lang::Go
            && let Some((path, f)) = name.rsplit_once("::")
            && path.contains(['.', '/'])
        {
            return self
                .by_name
                .get(f)
                .into_iter()
                .flatten()
                .copied()
                .filter(|(fi, _)| in_package(self.files[*fi], path))
                .collect();
        }
        if let Some((module, f)) = name.rsplit_once("::") {
            // `helm_kit::apply`: another crate's function. Only that crate's source (when it was read) has it;
            // a function of this crate that happens to share the name is not it.
            let first = module.split("::").next().unwrap_or(module);
            if self.dependencies.contains(first) {
                return self.in_dependency(first, f);
            }
            let module = module.rsplit("::").next().unwrap_or(module);
            // `Status::transition_now`: a type's associated function, of that type when the unit has it.
            if module.starts_with(|c: char| c.is_ascii_uppercase()) && module != "Self" {
                let of_type: Vec<FnId> = self.prefer_crate(
                    self.by_name
                        .get(f)
                        .into_iter()
                        .flatten()
                        .copied()
                        .filter(|id| {
                            // `impl<Ctx> Controller<Ctx>` is `Controller`'s.
                            self.func(*id)
                                .self_ty
                                .as_deref()
                                .and_then(|t| t.split('<').next())
                                == Some(module)
                        })
                        .collect(),
                );
                // Go: a type named from its own package (`Controller::Reconcile` of the `Controller` built in
                // this file) is that package's, not one of the same name elsewhere in the module.
                let dir = package_dir(&self.files[from_file].path);
                let here: Vec<FnId> = of_type
                    .iter()
                    .copied()
                    .filter(|(fi, _)| {
                        self.files[*fi].lang == crate::sema::Lang::Go
                            && package_dir(&self.files[*fi].path) == dir
                    })
                    .collect();
                if !here.is_empty() {
                    return here;
                }
                if !of_type.is_empty() {
                    return of_type;
                }
            }
            let in_module: Vec<FnId> = self.prefer_crate(
                self.by_name
                    .get(f)
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|(fi, _)| module_of(&self.files[*fi].path) == module)
                    .collect(),
            );
            return if in_module.is_empty() {
                self.resolve(f, from_file)
            } else {
                in_module
            };
        }
        let Some(all) = self.by_name.get(name) else {
            return Vec::new();
        };
        let local: Vec<FnId> = all
            .iter()
            .copied()
            .filter(|(f, _)| *f == from_file)
            .collect();
        if !local.is_empty() {
            return local;
        }
        // Go: a bare name (`sync(..)`, `c.sync(..)`) is its package's, the files of one directory, whatever other
        // packages of the module also define.
        if self.files[from_file].lang == crate::sema::Lang::Go {
            let dir = package_dir(&self.files[from_file].path);
            let package: Vec<FnId> = all
                .iter()
                .copied()
                .filter(|(f, _)| package_dir(&self.files[*f].path) == dir)
                .collect();
            if !package.is_empty() {
                return package;
            }
        }
        let all = self.prefer_crate(all.clone());
        if all.len() == 1 { all } else { Vec::new() }
    }

    /// The functions named `f` in the source read of dependency `krate` (its directory is `krate-1.2.3` or
    /// `krate`, with `-` or `_`).
    fn in_dependency(&self, krate: &str, f: &str) -> Vec<FnId> {
        let dashed = krate.replace('_', "-");
        let in_crate = |path: &str| {
            std::path::Path::new(path).components().any(|c| {
                let c = c.as_os_str().to_string_lossy().replace('_', "-");
                c == dashed
                    || c.strip_prefix(&dashed)
                        .and_then(|v| v.strip_prefix('-'))
                        .is_some_and(|v| v.starts_with(|ch: char| ch.is_ascii_digit()))
            })
        };
        self.by_name
            .get(f)
            .into_iter()
            .flatten()
            .copied()
            .filter(|(fi, _)| self.files[*fi].library && in_crate(&self.files[*fi].path))
            .collect()
    }

    /// The crate's own functions among `ids` when there are any, else the dependencies': a name the crate
    /// defines is the crate's, whatever its dependencies also call a function.
    fn prefer_crate(&self, ids: Vec<FnId>) -> Vec<FnId> {
        if ids.iter().any(|(fi, _)| !self.files[*fi].library) {
            ids.into_iter()
                .filter(|(fi, _)| !self.files[*fi].library)
                .collect()
        } else {
            ids
        }
    }

    /// `super::f` from a file: an `f` of another file, the only one or the one of the parent module (`mod.rs` or
    /// `dir.rs` beside the file's directory). A file `include!`d into a module has no parent on disk, so the only
    /// other `f` is the best the crate says.
    fn resolve_in_parent(&self, f: &str, from_file: usize) -> Vec<FnId> {
        let others: Vec<FnId> = self
            .by_name
            .get(f)
            .into_iter()
            .flatten()
            .copied()
            .filter(|(fi, _)| *fi != from_file)
            .collect();
        if others.len() <= 1 {
            return others;
        }
        let from = std::path::Path::new(&self.files[from_file].path);
        let dir = from.parent().unwrap_or(from);
        let parent_dir = if from.file_stem().is_some_and(|s| s == "mod") {
            dir.parent().unwrap_or(dir)
        } else {
            dir
        };
        let parents = [parent_dir.join("mod.rs"), parent_dir.with_extension("rs")];
        others
            .into_iter()
            .filter(|(fi, _)| {
                parents
                    .iter()
                    .any(|p| std::path::Path::new(&self.files[*fi].path) == p)
            })
            .collect()
    }

    /// The crate's methods a call `x.name(..)` on a receiver of unknown type may be: every method of that name
    /// when there are at most [`MAX_METHOD_TARGETS`] (a name defined on many types says too little to follow).
    pub fn resolve_method(&self, name: &str) -> Vec<FnId> {
        match self
            .by_method
            .get(name)
            .map(|all| self.prefer_crate(all.clone()))
        {
            Some(all) if all.len() <= MAX_METHOD_TARGETS => all,
            _ => self.dispatched.get(name).cloned().unwrap_or_default(),
        }
    }

    /// Is `path` the import path of one of the unit's packages (see `in_package`)?
    pub(super) fn has_package(&self, path: &str) -> bool {
        self.package_dir_of(path).is_some()
    }

    /// The method names defined on more types than a bare name is followed to, with those of their definitions
    /// whose type implements an interface the unit declares with that method (the type has every method of it):
    /// a call of such a name through an interface may run any of them. A type that only shares the name (a
    /// `FinalizerSyncer.Sync` beside the `Syncer` interface's implementations) is not among them, and a name whose
    /// definitions implement no interface (`Get`, `String`) says too little.
    pub(super) fn interface_dispatch(&self) -> HashMap<&'m str, Vec<FnId>> {
        let interfaces: Vec<&crate::sema::InterfaceDecl> = self
            .files
            .iter()
            .flat_map(|f| f.interfaces.iter())
            .filter(|i| i.methods.len() > 1)
            .collect();
        if interfaces.is_empty() {
            return HashMap::new();
        }
        let embedding: HashSet<&str> = self
            .files
            .iter()
            .flat_map(|f| f.embedding_types.iter().map(String::as_str))
            .collect();
        let mut methods_of: HashMap<&str, HashSet<&str>> = HashMap::new();
        for f in self.files.iter().flat_map(|f| f.fns.iter()) {
            if let Some(t) = f.self_ty.as_deref() {
                methods_of.entry(t).or_default().insert(f.name.as_str());
            }
        }
        let mut out = HashMap::new();
        for (name, targets) in &self.by_method {
            if targets.len() <= MAX_METHOD_TARGETS {
                continue;
            }
            let declaring: Vec<&&crate::sema::InterfaceDecl> = interfaces
                .iter()
                .filter(|i| i.methods.iter().any(|m| m == name))
                .collect();
            let implementing: Vec<FnId> = targets
                .iter()
                .copied()
                .filter(|id| {
                    let ty = self.func(*id).self_ty.as_deref();
                    // Its other methods may be the embedded type's.
                    if ty.is_some_and(|t| embedding.contains(t)) {
                        return true;
                    }
                    let Some(have) = ty.and_then(|t| methods_of.get(t)) else {
                        return false;
                    };
                    declaring
                        .iter()
                        .any(|i| i.methods.iter().all(|m| have.contains(m.as_str())))
                })
                .collect();
            if !implementing.is_empty() && implementing.len() <= MAX_IMPLEMENTATIONS {
                out.insert(*name, implementing);
            }
        }
        out
    }
}

/// Is the Go file of package `path` (its import path)? Outside a module read (a lone file), by its directory's
/// name, as the import path ends.
pub(super) fn in_package(file: &crate::sema::FileModel, path: &str) -> bool {
    match &file.package {
        Some(p) => p == path,
        None => {
            let dir = package_dir(&file.path);
            let last = dir.rsplit('/').next().unwrap_or(dir);
            !last.is_empty() && path.rsplit('/').next() == Some(last)
        }
    }
}
