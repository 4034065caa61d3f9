//! The source of a crate's kube-using dependencies, when it is on this machine: operators often call the API
//! through a shared crate of their own (`tatara_process::list::default(&api)`, a `requeue::heartbeat()` helper),
//! and what those functions do is only known from their source. Found through the crate's Cargo.lock in Cargo's
//! registry cache (`$CARGO_HOME/registry/src/*/name-version`, filled by any `cargo build` or `cargo fetch`), a
//! `vendor/` directory beside the lock file, or a `path = ".."` dependency. Nothing is downloaded.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// kube-rs's own crates. A crate that depends on one is worth reading; one that does not cannot call the API
/// server; and their own internals are not a controller's choices.
pub(super) const KUBE_CRATES: &[&str] = &[
    "kube",
    "kube-runtime",
    "kube-client",
    "kube-core",
    "kube-derive",
];

/// At most this many dependencies per crate are read: a workspace that re-exports dozens of kube-using crates
/// would otherwise turn one scan into a scan of all of them.
pub const MAX_LIBRARIES: usize = 16;

/// The source roots (directories with a `src/`) of the dependencies of the crate at `root` that use kube
/// themselves, nearest first. `lock` is the crate's Cargo.lock with its directory (see
/// `Selector::lock_of`, which reads each lock once per scan). Empty when there is no Cargo.lock or none of them
/// is on disk.
pub fn library_roots(root: &Path, lock: Option<(&Path, &Lock)>) -> Vec<PathBuf> {
    let Some(manifest) = read_toml(&root.join("Cargo.toml")) else {
        return Vec::new();
    };
    let Some(name) = manifest
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
    else {
        return Vec::new();
    };
    let mut out = BTreeSet::new();
    // `path` dependencies: a workspace's own shared crates.
    for (dep, spec) in dependency_tables(&manifest) {
        if let Some(p) = spec.get("path").and_then(|p| p.as_str()) {
            let dir = root.join(p);
            if manifest_uses_kube(&dir) == Some(true) && !KUBE_CRATES.contains(&dep.as_str()) {
                out.insert(dir);
            }
        }
    }
    if let Some((lock_dir, lock)) = lock
        && let Some(me) = lock.packages.get(name)
    {
        for dep in &me.deps {
            let Some(p) = lock.packages.get(dep.as_str()) else {
                continue;
            };
            if KUBE_CRATES.contains(&dep.as_str())
                || !p.registry
                || !p.deps.iter().any(|d| KUBE_CRATES.contains(&d.as_str()))
            {
                continue;
            }
            if let Some(dir) = locate(lock_dir, dep, &p.version) {
                out.insert(dir);
            }
        }
    }
    out.into_iter().take(MAX_LIBRARIES).collect()
}

/// Does the crate whose unit is `unit` (its directory, or an example/bench under it) depend on kube, in any
/// dependency table (`[dependencies]`, `[dev-dependencies]`, `[target.'cfg(..)'.dependencies]`, renamed with
/// `package = "kube"`)? `None` when no manifest says: a file outside any crate, a manifest that does not parse or
/// lists no dependencies at all (a snippet's), which the source then decides.
pub fn manifest_uses_kube(unit: &Path) -> Option<bool> {
    let root = if unit.join("Cargo.toml").is_file() {
        unit
    } else {
        // `root/examples/x` or `root/benches/x.rs`.
        let up = unit.parent()?.parent()?;
        if !up.join("Cargo.toml").is_file() {
            return None;
        }
        up
    };
    let manifest = read_toml(&root.join("Cargo.toml"))?;
    let names_kube = |t: &toml::Table| {
        t.iter().any(|(k, v)| {
            KUBE_CRATES.contains(&k.as_str())
                || v.get("package")
                    .and_then(|p| p.as_str())
                    .is_some_and(|p| KUBE_CRATES.contains(&p))
        })
    };
    const TABLES: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];
    let targets: Vec<&toml::Table> = manifest
        .get("target")
        .and_then(|t| t.as_table())
        .into_iter()
        .flat_map(|t| t.values().filter_map(|t| t.as_table()))
        .collect();
    let all: Vec<&toml::Table> = std::iter::once(&manifest)
        .chain(targets)
        .flat_map(|m| {
            TABLES
                .iter()
                .filter_map(|d| m.get(*d).and_then(|t| t.as_table()))
        })
        .collect();
    if all.is_empty() {
        return None;
    }
    Some(all.into_iter().any(names_kube))
}

/// Manifests and lockfiles beyond this are not read (the largest real Cargo.lock files are a few MB).
pub(super) const MANIFEST_MAX_BYTES: u64 = 16 << 20;

/// A manifest or lockfile: a regular file (a FIFO named Cargo.lock must not block the scan), within the cap.
pub(super) fn read_toml(path: &Path) -> Option<toml::Table> {
    crate::regular_file::read_to_string(path, MANIFEST_MAX_BYTES)
        .ok()?
        .parse()
        .ok()
}

/// The table-valued entries of `[dependencies]` (`[dev-dependencies]` are left out: tests are not the controller).
fn dependency_tables(manifest: &toml::Table) -> Vec<(String, toml::Table)> {
    manifest
        .get("dependencies")
        .and_then(|d| d.as_table())
        .into_iter()
        .flat_map(|t| t.iter())
        .filter_map(|(k, v)| Some((k.clone(), v.as_table()?.clone())))
        .collect()
}

/// The crate's Cargo.lock, or its workspace's: the first in [`lock_dirs`] (whether or not it parses).
pub(super) fn lock_path(root: &Path) -> Option<PathBuf> {
    lock_dirs(root)
        .map(|d| d.join("Cargo.lock"))
        .find(|l| l.is_file())
}

/// Where a crate's lock can be: its directory and its ancestors, up to and including the first other crate
/// (a crate outside any workspace has its own lock or none).
fn lock_dirs(root: &Path) -> impl Iterator<Item = &Path> {
    root.ancestors()
        .enumerate()
        .scan(false, |past_crate, (i, d)| {
            if *past_crate {
                return None;
            }
            *past_crate = i > 0 && d.join("Cargo.toml").is_file();
            Some(d)
        })
}

/// Package name → the names of its dependencies, every locked version of it together.
pub type Graph = HashMap<String, BTreeSet<String>>;

/// A Cargo.lock as scan reads it: who depends on whom, and where each package comes from.
#[derive(Debug, Default)]
pub struct Lock {
    pub graph: Graph,
    /// Package name → the first locked version of it (a crate's direct dependency is, as a rule, the only one of
    /// its name).
    packages: HashMap<String, LockPackage>,
}

#[derive(Debug)]
struct LockPackage {
    version: String,
    registry: bool,
    deps: Vec<String>,
}

/// The file's shape: deserialised straight into these (Cargo.lock files run to tens of thousands of lines, and a
/// generic TOML table of one costs several times more to build).
#[derive(serde::Deserialize)]
struct LockFile {
    #[serde(default)]
    package: Vec<LockEntry>,
}

#[derive(serde::Deserialize)]
struct LockEntry {
    #[serde(default)]
    name: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    source: Option<String>,
    /// "name", or "name version" when several versions are locked: the name is what matters here.
    #[serde(default)]
    dependencies: Vec<String>,
}

/// Reads a Cargo.lock: a regular file within the cap (a FIFO named Cargo.lock must not block the scan). `None`
/// when it cannot be read or is not a lock file.
pub(super) fn read_lock(path: &Path) -> Option<Lock> {
    let text = crate::regular_file::read_to_string(path, MANIFEST_MAX_BYTES).ok()?;
    let file: LockFile = toml::from_str(&text).ok()?;
    let mut lock = Lock::default();
    for p in file.package {
        if p.name.is_empty() {
            continue;
        }
        let deps: Vec<String> = p
            .dependencies
            .iter()
            .map(|d| d.split(' ').next().unwrap_or(d).to_string())
            .collect();
        lock.graph
            .entry(p.name.clone())
            .or_default()
            .extend(deps.iter().cloned());
        if p.version.is_empty() {
            continue;
        }
        let registry = p
            .source
            .as_deref()
            .is_some_and(|s| s.starts_with("registry+") || s.starts_with("sparse+"));
        lock.packages.entry(p.name).or_insert(LockPackage {
            version: p.version,
            registry,
            deps,
        });
    }
    Some(lock)
}

/// Where a registry dependency's source is: `vendor/` beside the lock, else Cargo's registry cache.
fn locate(lock_dir: &Path, name: &str, version: &str) -> Option<PathBuf> {
    let versioned = format!("{name}-{version}");
    for v in [
        lock_dir.join("vendor").join(&versioned),
        lock_dir.join("vendor").join(name),
    ] {
        if v.join("src").is_dir() {
            return Some(v);
        }
    }
    registry_sources()
        .into_iter()
        .map(|r| r.join(&versioned))
        .find(|p| p.join("src").is_dir())
}

/// `$CARGO_HOME/registry/src/*`: where `cargo build` and `cargo fetch` unpack registry crates.
pub(super) fn registry_sources() -> Vec<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    home.and_then(|h| std::fs::read_dir(h.join("registry").join("src")).ok())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn finds_vendored_and_path_dependencies_that_use_kube() {
        let d = tempfile::tempdir().unwrap();
        let app = d.path().join("app");
        write(
            &app.join("Cargo.toml"),
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\nkube = \"1\"\nshared = { path = \"../shared\" }\nhelpers = \"0.2\"\nserde = \"1\"\n",
        );
        write(
            &d.path().join("shared/Cargo.toml"),
            "[package]\nname = \"shared\"\nversion = \"0.1.0\"\n\n[dependencies]\nkube = \"1\"\n",
        );
        write(&d.path().join("shared/src/lib.rs"), "");
        write(
            &app.join("Cargo.lock"),
            r#"version = 4

[[package]]
name = "app"
version = "0.1.0"
dependencies = ["helpers", "kube", "serde", "shared"]

[[package]]
name = "helpers"
version = "0.2.3"
source = "registry+https://github.com/rust-lang/crates.io-index"
dependencies = ["kube"]

[[package]]
name = "serde"
version = "1.0.0"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "kube"
version = "1.0.0"
source = "registry+https://github.com/rust-lang/crates.io-index"
"#,
        );
        write(&app.join("vendor/helpers-0.2.3/src/lib.rs"), "");
        write(&app.join("vendor/serde-1.0.0/src/lib.rs"), "");
        write(&app.join("vendor/kube-1.0.0/src/lib.rs"), "");
        let lock = read_lock(&app.join("Cargo.lock")).unwrap();
        let roots = library_roots(&app, Some((&app, &lock)));
        assert_eq!(
            roots,
            vec![app.join("../shared"), app.join("vendor/helpers-0.2.3"),]
        );
    }

    #[test]
    fn the_manifest_says_whether_a_crate_uses_kube() {
        let d = tempfile::tempdir().unwrap();
        let says = |manifest: &str| {
            write(&d.path().join("Cargo.toml"), manifest);
            manifest_uses_kube(d.path())
        };
        let pkg = "[package]\nname = \"x\"\n";
        assert_eq!(
            says(&format!("{pkg}[dependencies]\nkube = \"1\"\n")),
            Some(true)
        );
        assert_eq!(
            says(&format!(
                "{pkg}[dependencies]\nk = {{ package = \"kube-runtime\", version = \"1\" }}\n"
            )),
            Some(true)
        );
        assert_eq!(
            says(&format!(
                "{pkg}[target.'cfg(unix)'.dev-dependencies]\nkube-client = \"1\"\n"
            )),
            Some(true)
        );
        assert_eq!(
            says(&format!("{pkg}[dependencies]\nserde = \"1\"\n")),
            Some(false)
        );
        // Lists nothing: the source decides.
        assert_eq!(says(pkg), None);
        assert_eq!(says("not toml ["), None);
        // An example of the crate is judged by the crate's manifest.
        write(
            &d.path().join("Cargo.toml"),
            &format!("{pkg}[dependencies]\nkube = \"1\"\n"),
        );
        assert_eq!(
            manifest_uses_kube(&d.path().join("examples/demo.rs")),
            Some(true)
        );
    }

    #[test]
    fn no_lock_and_no_path_dependencies_means_no_libraries() {
        let d = tempfile::tempdir().unwrap();
        write(
            &d.path().join("Cargo.toml"),
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\nkube = \"1\"\n",
        );
        assert!(library_roots(d.path(), None).is_empty());
    }
}
