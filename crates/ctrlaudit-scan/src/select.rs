//! Which crates a scan analyses: those with kube-rs anywhere in their dependency graph, whether they name it
//! directly, through a framework or a crate of their own that re-exports it (`some_framework::kube::Api`),
//! through `kube.workspace = true` resolved in `[workspace.dependencies]`, or through a `path` dependency.
//! Cargo.lock, when there is one, is the whole graph; without it the manifests are followed as far as they go
//! and, where a registry dependency could still re-export kube, the source decides. A crate that is not
//! analysed is never dropped in silence: its reason is counted in a note.

use super::deps::{Graph, KUBE_CRATES, Lock, lock_path, read_lock, read_toml, registry_sources};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What the manifests and the lock file say about one unit (a crate, or an example or bench of one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// kube-rs is a dependency of the crate itself.
    Direct,
    /// kube-rs is reached through this dependency of the crate (a framework, a shared crate of the workspace).
    Through(String),
    /// Not analysed, for this reason.
    Skip(Skip),
    /// No manifest decides (a file outside any crate, a manifest without dependencies, registry dependencies
    /// whose own dependencies are unknown without a Cargo.lock): the source does, by naming kube paths.
    Source,
}

/// Why a unit is not analysed: each becomes a line of the scan's notes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Skip {
    /// Neither the crate nor anything it depends on uses kube-rs.
    NoKube,
    /// kube-rs's own crates: they define the APIs the rules are about; their internals are not a controller's
    /// choices.
    KubeItself,
    /// No manifest says, and no file of it names a kube path.
    NoKubePath,
    /// A Go module whose `go.mod` requires neither controller-runtime nor client-go.
    NoGoController,
    /// A Go file outside any module that imports neither controller-runtime nor client-go.
    NoGoImport,
}

impl Skip {
    /// The note's wording, after the count of crates.
    pub fn reason(self) -> &'static str {
        match self {
            Skip::NoKube => "no kube-rs in the dependency graph",
            Skip::KubeItself => "kube-rs's own crates",
            Skip::NoKubePath => "no manifest names kube-rs and no file names a kube path",
            Skip::NoGoController => "go.mod requires neither controller-runtime nor client-go",
            Skip::NoGoImport => {
                "outside any Go module, and imports neither controller-runtime nor client-go"
            }
        }
    }
}

/// Manifests followed through dependencies at most this deep (a cycle is cut by the visited set).
const MAX_DEPTH: usize = 12;

/// The crate directory whose manifest governs `unit`: the unit itself, or the crate of `root/examples/x` and
/// `root/benches/x.rs`.
fn manifest_dir(unit: &Path) -> Option<&Path> {
    if unit.join("Cargo.toml").is_file() {
        return Some(unit);
    }
    let up = unit.parent()?.parent()?;
    up.join("Cargo.toml").is_file().then_some(up)
}

/// Does a dependency crate reach kube-rs? `None`: its graph cannot be known from what is on disk.
type Reach = Option<bool>;

/// Decides units, remembering what it learned about each dependency crate, lock file and directory listing
/// (a vendored tree has hundreds of crates sharing the same dependencies). Shared by the scan's threads.
#[derive(Debug, Default)]
pub struct Selector {
    /// Dependency crate directory → whether it reaches kube.
    reach: Mutex<HashMap<PathBuf, Reach>>,
    /// A directory's entries (siblings of a vendored crate, Cargo's registry sources), by directory.
    listings: Mutex<HashMap<PathBuf, std::sync::Arc<Vec<PathBuf>>>>,
    /// Lock file path → what it says (read once per scan: selection and the dependencies' sources both ask).
    locks: Mutex<HashMap<PathBuf, Option<std::sync::Arc<Lock>>>>,
    /// Crate directory → what its manifest says (a crate is read as a unit and again as a dependency).
    crates: Mutex<HashMap<PathBuf, Option<std::sync::Arc<CrateInfo>>>>,
    /// Cargo's registry source directories, listed once per scan.
    registries: std::sync::OnceLock<Vec<PathBuf>>,
}

/// What selection needs of one manifest.
#[derive(Debug)]
struct CrateInfo {
    name: Option<String>,
    /// Any dependency table at all, empty or not.
    tables: bool,
    deps: Vec<Dep>,
}

impl Selector {
    /// Decides one unit; see [`Selection`].
    pub fn select(&self, unit: &Path) -> Selection {
        let Some(root) = manifest_dir(unit) else {
            return Selection::Source;
        };
        let Some(info) = self.info(root) else {
            return Selection::Source;
        };
        let name = info.name.as_deref();
        if name.is_some_and(|n| KUBE_CRATES.contains(&n)) {
            return Selection::Skip(Skip::KubeItself);
        }
        // A manifest without a single dependency table is a snippet's or a generated one: the source decides.
        // One with tables, empty or not, is a real crate's.
        if !info.tables {
            return Selection::Source;
        }
        let deps = &info.deps;
        if deps
            .iter()
            .any(|d| KUBE_CRATES.contains(&d.package.as_str()))
        {
            return Selection::Direct;
        }
        if let Some(name) = name
            && let Some(found) = self.through_lock(root, name, deps)
        {
            return found;
        }
        // No lock that knows the crate: follow the manifests on disk. Dev-dependencies count when they name
        // kube itself (above); one that is not on disk is no reason to read the crate's files.
        let mut visited = HashSet::from([canonical(root)]);
        let mut unknown = false;
        for d in deps.iter().filter(|d| d.kind != Kind::Dev) {
            match self.dep_reach(root, d, 0, &mut visited) {
                Some(true) => return Selection::Through(d.key.clone()),
                Some(false) => {}
                None => unknown = true,
            }
        }
        if unknown {
            Selection::Source
        } else {
            Selection::Skip(Skip::NoKube)
        }
    }

    /// Whether dependency `d` of the crate at `from` reaches kube.
    fn dep_reach(
        &self,
        from: &Path,
        d: &Dep,
        depth: usize,
        visited: &mut HashSet<PathBuf>,
    ) -> Reach {
        if KUBE_CRATES.contains(&d.package.as_str()) {
            return Some(true);
        }
        // An optional or platform-specific dependency is looked for beside the crate only: in a vendored tree
        // it is there when a build of the tree needs it, and the registry cache's copy says nothing about this
        // tree.
        let dirs = match &d.path {
            Some(dir) => vec![dir.clone()],
            None => self.locate(from, &d.package, !(d.optional || d.platform)),
        };
        if dirs.is_empty() {
            // Only the crate's own dependencies can leave the question open. An optional or platform-specific
            // one that is nowhere on disk is in no build of this tree, and deeper in the graph a crate that is
            // not on disk is one that no build here needed (cargo vendor and the registry cache hold every
            // crate a build of this tree fetched).
            let settled = d.optional || d.platform || depth > 0;
            return if settled { Some(false) } else { None };
        }
        let mut out = Some(false);
        for dir in dirs {
            match self.crate_reach(&dir, depth + 1, visited) {
                Some(true) => return Some(true),
                Some(false) => {}
                None => out = None,
            }
        }
        out
    }

    /// Whether a dependency crate reaches kube through its own `[dependencies]` (its dev-dependencies are never
    /// part of a dependent's graph).
    fn crate_reach(&self, dir: &Path, depth: usize, visited: &mut HashSet<PathBuf>) -> Reach {
        let key = canonical(dir);
        if let Some(r) = lock(&self.reach).get(&key) {
            return *r;
        }
        if depth > MAX_DEPTH || !visited.insert(key.clone()) {
            // A cycle, or a graph deeper than any real one: what the other paths say decides.
            return Some(false);
        }
        let r = match self.info(dir) {
            None => None,
            Some(info)
                if info
                    .name
                    .as_deref()
                    .is_some_and(|n| KUBE_CRATES.contains(&n)) =>
            {
                Some(true)
            }
            Some(info) => {
                let mut out = Some(false);
                for d in info.deps.iter().filter(|d| d.kind == Kind::Normal) {
                    match self.dep_reach(dir, d, depth, visited) {
                        Some(true) => {
                            out = Some(true);
                            break;
                        }
                        Some(false) => {}
                        None => out = None,
                    }
                }
                out
            }
        };
        lock(&self.reach).insert(key, r);
        r
    }

    /// Where a registry dependency's source can be on this machine: beside the crate (a vendored tree:
    /// `vendor/name` or `vendor/name-1.2.3`), else in Cargo's registry sources. Every version found counts.
    fn locate(&self, from: &Path, package: &str, registry: bool) -> Vec<PathBuf> {
        let matches = |entries: &[PathBuf]| -> Vec<PathBuf> {
            entries
                .iter()
                .filter(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                        n == package
                            || n.strip_prefix(package)
                                .and_then(|rest| rest.strip_prefix('-'))
                                .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
                    })
                })
                .cloned()
                .collect()
        };
        if let Some(parent) = from.parent() {
            let found = matches(&self.listing(parent));
            if !found.is_empty() {
                return found;
            }
        }
        if !registry {
            return Vec::new();
        }
        self.registries
            .get_or_init(registry_sources)
            .iter()
            .flat_map(|r| matches(&self.listing(r)))
            .collect()
    }

    /// The crates the unit's manifest depends on, as Rust paths name them (`helm-kit` is `helm_kit`, a renamed
    /// dependency by its new name): a path starting with one of them is that crate's.
    pub fn dependency_names(&self, unit: &Path) -> HashSet<String> {
        manifest_dir(unit)
            .and_then(|root| self.info(root))
            .map(|info| info.deps.iter().map(|d| d.key.replace('-', "_")).collect())
            .unwrap_or_default()
    }

    fn info(&self, dir: &Path) -> Option<std::sync::Arc<CrateInfo>> {
        let key = canonical(dir);
        if let Some(m) = lock(&self.crates).get(&key) {
            return m.clone();
        }
        let info = read_toml(&dir.join("Cargo.toml")).map(|m| {
            std::sync::Arc::new(CrateInfo {
                name: m
                    .get("package")
                    .and_then(|p| p.get("name"))
                    .and_then(|n| n.as_str())
                    .map(str::to_string),
                tables: !dependency_tables(&m).is_empty(),
                deps: dependencies(dir, &m),
            })
        });
        lock(&self.crates).insert(key, info.clone());
        info
    }

    fn listing(&self, dir: &Path) -> std::sync::Arc<Vec<PathBuf>> {
        if let Some(l) = lock(&self.listings).get(dir) {
            return l.clone();
        }
        let entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        let l = std::sync::Arc::new(entries);
        lock(&self.listings).insert(dir.to_path_buf(), l.clone());
        l
    }

    /// The answer of the crate's (or its workspace's) Cargo.lock, when it lists the crate: the first direct
    /// dependency through which a kube-rs crate is reached, or none at all. `None` when there is no such lock.
    fn through_lock(&self, root: &Path, name: &str, deps: &[Dep]) -> Option<Selection> {
        let (_, lock) = self.lock_of(root)?;
        let graph = &lock.graph;
        let mine = graph.get(name)?;
        // The lock lists dependencies by package name; report them by the name the crate uses.
        let key_of: HashMap<&str, &str> = deps
            .iter()
            .map(|d| (d.package.as_str(), d.key.as_str()))
            .collect();
        for direct in mine {
            if reaches_kube(graph, direct) {
                let key = key_of.get(direct.as_str()).copied().unwrap_or(direct);
                return Some(Selection::Through(key.to_string()));
            }
        }
        Some(Selection::Skip(Skip::NoKube))
    }

    /// The crate's (or its workspace's) Cargo.lock and its directory, read once per scan.
    pub fn lock_of(&self, root: &Path) -> Option<(PathBuf, std::sync::Arc<Lock>)> {
        let path = lock_path(root)?;
        let dir = path.parent()?.to_path_buf();
        if let Some(l) = lock(&self.locks).get(&path) {
            return Some((dir, l.clone()?));
        }
        let l = read_lock(&path).map(std::sync::Arc::new);
        lock(&self.locks).insert(path, l.clone());
        Some((dir, l?))
    }
}

/// A poisoned memo is still a valid memo: every entry is written whole.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `a/b/../c` as `a/c`, without asking the file system (a memo key: thousands of lookups, no system call).
fn canonical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// Which table a dependency is declared in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Normal,
    Dev,
    Build,
}

/// One dependency of a manifest, `workspace = true` resolved.
#[derive(Debug)]
struct Dep {
    /// The name the crate uses (`[dependencies] key`).
    key: String,
    /// The package it is (`package = ".."` when renamed).
    package: String,
    /// Its directory, for a `path` dependency.
    path: Option<PathBuf>,
    optional: bool,
    /// Declared under `[target.'cfg(..)'.*]`.
    platform: bool,
    kind: Kind,
}

/// Every dependency table of a manifest, with its kind and whether it is under `[target.'cfg(..)']`: the
/// tables themselves, empty or not (see `CrateInfo::tables`).
fn dependency_tables(manifest: &toml::Table) -> Vec<(&toml::Table, Kind, bool)> {
    const TABLES: [(&str, Kind); 3] = [
        ("dependencies", Kind::Normal),
        ("dev-dependencies", Kind::Dev),
        ("build-dependencies", Kind::Build),
    ];
    let targets = manifest
        .get("target")
        .and_then(|t| t.as_table())
        .into_iter()
        .flat_map(|t| t.values().filter_map(|t| t.as_table()))
        .map(|t| (t, true));
    std::iter::once((manifest, false))
        .chain(targets)
        .flat_map(|(m, platform)| {
            TABLES
                .iter()
                .filter_map(move |(d, kind)| Some((m.get(*d)?.as_table()?, *kind, platform)))
        })
        .collect()
}

/// Every dependency of every table (`[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`, and the
/// same under `[target.'cfg(..)']`).
fn dependencies(root: &Path, manifest: &toml::Table) -> Vec<Dep> {
    let tables = dependency_tables(manifest);
    let mut workspace: Option<Option<(PathBuf, toml::Table)>> = None;
    let mut out = Vec::new();
    for (table, kind, platform) in tables {
        for (key, spec) in table {
            let inherited = spec
                .get("workspace")
                .and_then(|w| w.as_bool())
                .unwrap_or(false);
            let optional = spec
                .get("optional")
                .and_then(|o| o.as_bool())
                .unwrap_or(false);
            // `x.workspace = true`: name, rename and path come from the workspace root's
            // `[workspace.dependencies]`.
            let (base, spec) = if inherited {
                let ws = workspace.get_or_insert_with(|| workspace_root(root));
                match ws.as_ref() {
                    Some((ws_dir, ws_manifest)) => (
                        ws_dir.clone(),
                        ws_manifest
                            .get("workspace")
                            .and_then(|w| w.get("dependencies"))
                            .and_then(|d| d.get(key))
                            .cloned(),
                    ),
                    None => (root.to_path_buf(), None),
                }
            } else {
                (root.to_path_buf(), Some(spec.clone()))
            };
            let package = spec
                .as_ref()
                .and_then(|s| s.get("package"))
                .and_then(|p| p.as_str())
                .unwrap_or(key)
                .to_string();
            let path = spec
                .as_ref()
                .and_then(|s| s.get("path"))
                .and_then(|p| p.as_str())
                .map(|p| base.join(p));
            out.push(Dep {
                key: key.clone(),
                package,
                path,
                optional,
                platform,
                kind,
            });
        }
    }
    out
}

/// The nearest ancestor manifest with a `[workspace]` table, and its directory.
fn workspace_root(root: &Path) -> Option<(PathBuf, toml::Table)> {
    let mut dir = Some(root);
    while let Some(d) = dir {
        if let Some(m) = read_toml(&d.join("Cargo.toml"))
            && m.get("workspace").is_some()
        {
            return Some((d.to_path_buf(), m));
        }
        dir = d.parent();
    }
    None
}

/// Is a kube-rs crate `start` or one of its dependencies, however deep?
fn reaches_kube(graph: &Graph, start: &str) -> bool {
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([start]);
    while let Some(p) = queue.pop_front() {
        if KUBE_CRATES.contains(&p) {
            return true;
        }
        if !seen.insert(p) {
            continue;
        }
        queue.extend(graph.get(p).into_iter().flatten().map(String::as_str));
    }
    false
}

#[cfg(test)]
mod tests;
