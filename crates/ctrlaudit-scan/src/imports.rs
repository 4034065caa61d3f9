//! `use` resolution: maps the names a file uses (aliases, renames, globs) to full paths, so that a
//! bare `Config` or `watcher` is judged by what it really is.

use std::collections::HashMap;
use syn::{UseTree, visit::Visit};

/// The imports of one file.
#[derive(Debug, Default, Clone)]
pub struct Imports {
    /// Local name → full path, `::`-joined (`CtrlConfig` → `kube::runtime::controller::Config`).
    names: HashMap<String, String>,
    /// Glob imports (`kube::runtime::controller`), without the `*`.
    globs: Vec<String>,
}

impl Imports {
    pub fn from_file(file: &syn::File) -> Self {
        let mut c = Collector::default();
        c.visit_file(file);
        c.imports
    }

    fn add_tree(&mut self, prefix: &str, tree: &UseTree) {
        let join = |p: &str, s: &str| {
            if p.is_empty() {
                s.to_string()
            } else {
                format!("{p}::{s}")
            }
        };
        match tree {
            UseTree::Path(p) => self.add_tree(&join(prefix, &p.ident.to_string()), &p.tree),
            UseTree::Name(n) => {
                let name = n.ident.to_string();
                if name == "self" {
                    if let Some(last) = prefix.rsplit("::").next() {
                        self.names.insert(last.to_string(), canonical(prefix));
                    }
                } else {
                    self.names
                        .insert(name.clone(), canonical(&join(prefix, &name)));
                }
            }
            UseTree::Rename(r) => {
                let name = r.ident.to_string();
                let full = if name == "self" {
                    prefix.to_string()
                } else {
                    join(prefix, &name)
                };
                self.names.insert(r.rename.to_string(), canonical(&full));
            }
            UseTree::Glob(_) => self.globs.push(canonical(prefix)),
            UseTree::Group(g) => {
                for t in &g.items {
                    self.add_tree(prefix, t);
                }
            }
        }
    }

    /// Resolves a path given as segments: the first segment goes through the import map.
    pub fn resolve(&self, segments: &[String]) -> String {
        let Some(first) = segments.first() else {
            return String::new();
        };
        let head = self
            .names
            .get(first)
            .cloned()
            .unwrap_or_else(|| first.clone());
        if segments.len() == 1 {
            return head;
        }
        canonical(&format!("{head}::{}", segments[1..].join("::")))
    }

    /// True if the name was imported explicitly (not via a glob).
    pub fn is_imported(&self, name: &str) -> bool {
        self.names.contains_key(name)
    }

    /// True if some glob could bring `name` from one of the given module prefixes.
    pub fn glob_from(&self, prefixes: &[&str]) -> bool {
        self.globs
            .iter()
            .any(|g| prefixes.iter().any(|p| g.starts_with(p)))
    }

    pub fn globs(&self) -> &[String] {
        &self.globs
    }
}

#[derive(Default)]
struct Collector {
    imports: Imports,
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.imports.add_tree("", &u.tree);
    }
}

/// Crates whose paths are never calls into the scanned crate.
pub const EXTERNAL_ROOTS: &[&str] = &[
    "std",
    "core",
    "alloc",
    "tokio",
    "kube",
    "kube_runtime",
    "kube_client",
    "kube_core",
    "k8s_openapi",
    "futures",
    "chrono",
    "jiff",
    "uuid",
    "rand",
    "serde",
    "serde_json",
    "serde_yaml",
    "reqwest",
    "prometheus",
    "prometheus_client",
    "metrics",
    "opentelemetry",
    "time",
    "tracing",
    "log",
    "anyhow",
    "thiserror",
    "http",
    "hyper",
    "tower",
    "Ok",
    "Err",
    "Some",
    "Box",
    "Arc",
    "Rc",
    "Vec",
    "String",
    "HashMap",
    "BTreeMap",
    "Duration",
    "Instant",
    "Api",
    "Action",
    "Patch",
    "PatchParams",
    "PostParams",
    "DeleteParams",
    "ListParams",
    "Controller",
];

/// The crates whose re-exports are followed (see [`canonical`]).
const REEXPORTED: &[&str] = &[
    "kube",
    "kube_runtime",
    "kube_client",
    "kube_core",
    "k8s_openapi",
];

/// A path through a dependency's re-export of kube, as the path into kube itself: frameworks and an operator's
/// shared crates re-export it (`opkit::kube::runtime::Controller`, `common::k8s_openapi::api::core::v1::Pod`,
/// `kube::k8s_openapi::…`), and the crate selection (`select`) analyses such crates. Paths into the crate's
/// own modules (`crate::`, `self::`, `super::`) are left alone: a module of its own named `kube` is not kube.
pub fn canonical(path: &str) -> String {
    let mut segments = path.split("::");
    let Some(first) = segments.next() else {
        return path.to_string();
    };
    if matches!(first, "crate" | "self" | "super") || first.is_empty() {
        return path.to_string();
    }
    let rest: Vec<&str> = segments.collect();
    match rest.iter().position(|s| REEXPORTED.contains(s)) {
        Some(i) => rest[i..].join("::"),
        None => path.to_string(),
    }
}

/// True if a resolved path points into kube (any of its crates, any version layout).
pub fn is_kube_path(path: &str) -> bool {
    ["kube::", "kube_runtime::", "kube_client::", "kube_core::"]
        .iter()
        .any(|p| path.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn reexports_of_kube_are_kube_and_own_modules_are_not() {
        assert_eq!(
            canonical("opkit::kube::runtime::Controller"),
            "kube::runtime::Controller"
        );
        assert_eq!(
            canonical("kube::k8s_openapi::api::core::v1::Pod"),
            "k8s_openapi::api::core::v1::Pod"
        );
        assert_eq!(
            canonical("kube::runtime::watcher"),
            "kube::runtime::watcher"
        );
        assert_eq!(canonical("crate::kube::patch"), "crate::kube::patch");
        assert_eq!(canonical("super::kube::Api"), "super::kube::Api");
        let file: syn::File = syn::parse_str(
            "use opkit::kube::{runtime::{Controller, watcher::Config as WatchCfg}, Api};\n\
             use opkit::kube::runtime::controller::*;",
        )
        .unwrap();
        let imports = Imports::from_file(&file);
        assert_eq!(
            imports.resolve(&["Controller".into()]),
            "kube::runtime::Controller"
        );
        assert_eq!(
            imports.resolve(&["WatchCfg".into()]),
            "kube::runtime::watcher::Config"
        );
        assert_eq!(
            imports.resolve(&["opkit".into(), "kube".into(), "Api".into()]),
            "kube::Api"
        );
        assert!(imports.glob_from(&["kube::runtime::controller"]));
    }

    #[test]
    fn aliases_and_globs() {
        let f: syn::File = syn::parse_str(
            "use kube::runtime::controller::Config as CtrlConfig;\n\
             use kube::runtime::{watcher::{self, Config}, Controller};\n\
             use kube_runtime::controller::*;",
        )
        .expect("parse");
        let i = Imports::from_file(&f);
        assert_eq!(
            i.resolve(&["CtrlConfig".into()]),
            "kube::runtime::controller::Config"
        );
        assert_eq!(
            i.resolve(&["Config".into()]),
            "kube::runtime::watcher::Config"
        );
        assert_eq!(
            i.resolve(&["watcher".into(), "Config".into()]),
            "kube::runtime::watcher::Config"
        );
        assert!(i.glob_from(&["kube_runtime"]));
    }
}
