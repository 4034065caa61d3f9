//! Go methods called on a value of a declared type (`Callee::OnType`), resolved by that type: its own method, or
//! the methods of the types that implement it when it is an interface. A name shared by many types (thirteen
//! `Synthesize`s) is then followed as far as the type says, where a bare name is given up.

use super::{FnId, Unit, package_dir};
use crate::sema::{FileModel, InterfaceDecl, Lang, TypeRef};
use std::collections::{HashMap, HashSet};

/// The module's Go types by package directory and name: their fields' types, methods and interfaces.
#[derive(Debug, Default)]
pub(super) struct TypeIndex<'m> {
    fields: HashMap<(&'m str, &'m str, &'m str), &'m TypeRef>,
    methods: HashMap<(&'m str, &'m str), HashMap<&'m str, FnId>>,
    interfaces: HashMap<(&'m str, &'m str), &'m InterfaceDecl>,
    /// Struct types embedding another module's type: they may have methods the source does not show.
    embedding: HashSet<(&'m str, &'m str)>,
    /// The methods of each package's types by name, and the method names its interfaces declare: what a value
    /// a package's function returns (`mgrs := mgr.New(..)`) may run (see `Unit::package_methods`).
    package_methods: HashMap<(&'m str, &'m str), Vec<FnId>>,
    interface_methods: HashSet<(&'m str, &'m str)>,
    /// Package directories by import path (`FileModel::package`).
    dirs: HashMap<&'m str, &'m str>,
    /// Some Go file was read without its module (a fixture, a lone file): its package is known by its
    /// directory's name only.
    unpackaged: bool,
}

impl<'m> TypeIndex<'m> {
    pub(super) fn new(files: &[&'m FileModel]) -> Self {
        let mut ix = TypeIndex::default();
        for (fi, f) in files.iter().enumerate().filter(|(_, f)| f.lang == Lang::Go) {
            let dir = package_dir(&f.path);
            match &f.package {
                Some(p) => {
                    ix.dirs.insert(p.as_str(), dir);
                }
                None => ix.unpackaged = true,
            }
            for t in &f.field_types {
                ix.fields
                    .insert((dir, t.owner.as_str(), t.field.as_str()), &t.ty);
            }
            for i in &f.interfaces {
                ix.interfaces.insert((dir, i.name.as_str()), i);
                for m in &i.methods {
                    ix.interface_methods.insert((dir, m.as_str()));
                }
            }
            for t in &f.embedding_types {
                ix.embedding.insert((dir, t.as_str()));
            }
            for (ni, func) in f.fns.iter().enumerate() {
                if let Some(t) = &func.self_ty {
                    ix.methods
                        .entry((dir, t.as_str()))
                        .or_default()
                        .insert(func.name.as_str(), (fi, ni));
                    ix.package_methods
                        .entry((dir, func.name.as_str()))
                        .or_default()
                        .push((fi, ni));
                }
            }
        }
        ix
    }
}

impl Unit<'_> {
    /// The functions `t.method(..)` may run, called from `from_file`: `Some(empty)` when the type is another
    /// module's, `None` when the type does not tell (a method promoted from an embedded field, an interface the
    /// module does not implement), where the caller falls back to the method's name.
    pub(super) fn resolve_on_type(
        &self,
        t: &TypeRef,
        method: &str,
        from_file: usize,
    ) -> Option<Vec<FnId>> {
        let Some(mut dir) = self.type_dir(t, package_dir(&self.files[from_file].path)) else {
            return Some(Vec::new());
        };
        let mut name = t.name.as_str();
        if let Some(field) = &t.field {
            let declared = *self.types.fields.get(&(dir, name, field.as_str()))?;
            let Some(d) = self.type_dir(declared, dir) else {
                return Some(Vec::new());
            };
            (dir, name) = (d, declared.name.as_str());
        }
        // The result of one of the module's own methods: its type is not recorded, so the method called on it is
        // found by its name (`None`). Another module's method (the early returns above) returns no type of the module.
        if t.result_of.is_some() {
            return None;
        }
        if let Some(i) = self.types.interfaces.get(&(dir, name)) {
            // A method of an embedded interface: its implementations are not told by this one.
            if !i.methods.iter().any(|m| m == method) {
                return None;
            }
            let implementing: Vec<FnId> = self
                .by_method
                .get(method)
                .into_iter()
                .flatten()
                .copied()
                .filter(|id| self.implements(*id, i))
                .collect();
            return (!implementing.is_empty()).then_some(implementing);
        }
        let own = self.types.methods.get(&(dir, name))?.get(method)?;
        Some(vec![*own])
    }

    /// `mgrs := mgr.New(..)` then `mgrs.Start()`: a value one of the unit's packages returns is, as a
    /// constructor's, of one of that package's types, so the method is that package's types' (`mgr.Cluster`'s
    /// `Start`, not the module's forty other `Start`s, a name too common to follow). `None` when the package has
    /// no method of that name or an interface of its own declares it (the value may then be any implementation),
    /// where the caller falls back to the method's name.
    pub(super) fn package_methods(&self, path: &str, method: &str) -> Option<Vec<FnId>> {
        let dir = self.package_dir_of(path)?;
        if self.types.interface_methods.contains(&(dir, method)) {
            return None;
        }
        let found = self.types.package_methods.get(&(dir, method))?;
        (found.len() <= super::MAX_METHOD_TARGETS).then(|| found.clone())
    }

    /// The package directory of `t`, declared in a file of `dir`; `None` for another module's package.
    fn type_dir<'a>(&'a self, t: &TypeRef, dir: &'a str) -> Option<&'a str> {
        match &t.package {
            None => Some(dir),
            Some(path) => self.package_dir_of(path),
        }
    }

    /// The directory of the unit's package with import path `path`; `None` when it is another module's.
    pub(super) fn package_dir_of(&self, path: &str) -> Option<&str> {
        if let Some(d) = self.types.dirs.get(path) {
            return Some(d);
        }
        // Files read without their module (fixtures): the package whose directory the import path ends with.
        // (Asked for every call on another module's type: only then is the walk over the files needed.)
        if !self.types.unpackaged {
            return None;
        }
        self.files
            .iter()
            .find(|f| f.package.is_none() && super::resolve::in_package(f, path))
            .map(|f| package_dir(&f.path))
    }

    /// Is the method `id` of a type that has every method of `i`, each with the same signature (or may, embedding
    /// another module's type)? Signatures keep a one-method interface (`List(labels.Selector)
    /// ([]*PolicyException, error)`) from taking in every type with a `List`.
    fn implements(&self, id: FnId, i: &InterfaceDecl) -> bool {
        let Some(ty) = self.func(id).self_ty.as_deref() else {
            return false;
        };
        let key = (package_dir(&self.files[id.0].path), ty);
        // Another module's type embedded may bring the methods the source does not show.
        let unseen_ok = self.types.embedding.contains(&key);
        self.types.methods.get(&key).is_some_and(|have| {
            i.methods
                .iter()
                .zip(&i.signatures)
                .all(|(m, sig)| match have.get(m.as_str()) {
                    Some(f) => self.func(*f).signature == *sig,
                    None => unseen_ok,
                })
        })
    }
}
