//! Which Go modules a scan analyses: those whose `go.mod` requires controller-runtime or client-go. A Go file
//! outside any module is analysed when it imports one of them. Read at the edge; the decision is pure.

use crate::select::Skip;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The libraries a Go controller is built on: a module requiring one of them is analysed.
pub const CONTROLLER_LIBRARIES: &[&str] = &["sigs.k8s.io/controller-runtime", "k8s.io/client-go"];

/// What a `go.mod` says that the scan needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GoMod {
    /// `module example.com/widget`.
    pub module: String,
    /// Every module path named in a `require` (direct or `// indirect`).
    pub requires: Vec<String>,
}

impl GoMod {
    /// Reads the parts of `go.mod`'s grammar the scan needs: `module`, and `require` lines and blocks. Anything
    /// else (replace, exclude, toolchain, comments) is passed over.
    pub fn parse(text: &str) -> Self {
        let mut out = GoMod::default();
        let mut in_require = false;
        for raw in text.lines() {
            let line = raw.split("//").next().unwrap_or("").trim();
            if in_require {
                if line.starts_with(')') {
                    in_require = false;
                } else if let Some(path) = line.split_whitespace().next() {
                    out.requires.push(unquote(path));
                }
                continue;
            }
            let mut words = line.split_whitespace();
            match words.next() {
                Some("module") => {
                    out.module = words.next().map(unquote).unwrap_or_default();
                }
                Some("require") => match words.next() {
                    Some("(") => in_require = true,
                    Some(path) => out.requires.push(unquote(path)),
                    None => {}
                },
                _ => {}
            }
        }
        out
    }

    /// Requires controller-runtime or client-go.
    pub fn uses_controller_library(&self) -> bool {
        self.requires
            .iter()
            .any(|r| CONTROLLER_LIBRARIES.contains(&r.as_str()))
    }
}

fn unquote(s: &str) -> String {
    s.trim_matches('"').to_string()
}

/// The import path of the package in directory `dir` (canonical) of the module at `root` whose `go.mod` names
/// `module`: `sigs.k8s.io/kueue` and `<root>/pkg/workload` give `sigs.k8s.io/kueue/pkg/workload`.
fn package_path(root: &Path, module: &str, dir: &Path) -> Option<String> {
    let rel: Vec<String> = dir
        .strip_prefix(root)
        .ok()?
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(if rel.is_empty() {
        module.to_string()
    } else {
        format!("{module}/{}", rel.join("/"))
    })
}

/// The nearest directory at or above `dir` with a `go.mod`.
pub fn module_root(dir: &Path) -> Option<PathBuf> {
    module_root_of(&std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()))
}

/// [`module_root`] of a directory already made canonical.
fn module_root_of(abs: &Path) -> Option<PathBuf> {
    abs.ancestors()
        .find(|d| d.join("go.mod").is_file())
        .map(Path::to_path_buf)
}

/// Directories of test code that is no `_test.go` file: a module's integration and end-to-end suites and their
/// helpers (`test/util/metrics.go` reads metrics the operator records), and the fakes a package offers its
/// tests (`pkg/volume/testing`, a `fake` client), which Go's convention names so.
const TEST_DIRS: &[&str] = &[
    "testdata",
    "test",
    "tests",
    "e2e",
    "testutil",
    "testutils",
    "testing",
    "fake",
    "fakes",
];

/// A Go file the scan never analyses (`path` within its module): tests, generated deep copies, vendored
/// dependencies.
pub fn is_skipped_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    name.ends_with("_test.go")
        || name.starts_with("zz_generated")
        || path
            .components()
            .any(|c| c.as_os_str() == "vendor" || TEST_DIRS.iter().any(|t| c.as_os_str() == *t))
}

/// A Go file outside any module names a controller library in its imports.
pub fn imports_controller_library(text: &str) -> bool {
    CONTROLLER_LIBRARIES
        .iter()
        .any(|lib| text.contains(&format!("\"{lib}\"")) || text.contains(&format!("\"{lib}/")))
}

/// The Go side of a scan's input: units to analyse, units passed over and why, and how many files are not judged.
#[derive(Debug)]
pub struct GoUnits {
    /// (module root or lone file, its Go files, the CRD YAML under it, `true`: lines not yet counted).
    pub analysed: Vec<(PathBuf, Vec<PathBuf>, Vec<PathBuf>, bool)>,
    pub skipped: Vec<(Skip, PathBuf)>,
    /// Tests, generated and vendored files.
    pub not_judged: usize,
    /// Each analysed module file's package by its import path (`go.mod`'s module path and the file's
    /// directory): how the module's other packages call it (see `FileModel::package`).
    pub packages: HashMap<PathBuf, String>,
}

/// The unit's files are Go source (a module, or one file outside any).
pub fn is_go_unit(files: &[PathBuf]) -> bool {
    files
        .iter()
        .all(|p| p.extension().is_some_and(|e| e == "go"))
}

/// Groups Go files by module (`go.mod`), or alone outside any, with the CRD YAML under each module
/// (`config/crd/bases`); a module is analysed when its go.mod requires a controller library, a lone file when
/// it imports one.
pub fn units(go: &[PathBuf], yaml: &[PathBuf], max_bytes: u64) -> GoUnits {
    let mut by_root: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    // Each file's directory, canonical: where in its module it is.
    let mut dirs: HashMap<PathBuf, PathBuf> = HashMap::new();
    let mut not_judged = 0;
    for p in go {
        let dir = p.parent().unwrap_or(Path::new("."));
        let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let module = module_root_of(&abs);
        // Judged by where the file is in its module: a module checked out under `~/test/` is no test.
        let within = module
            .as_deref()
            .and_then(|m| p.strip_prefix(m).ok())
            .or_else(|| p.file_name().map(Path::new))
            .unwrap_or(p);
        if is_skipped_file(within) {
            not_judged += 1;
            continue;
        }
        let root = module.unwrap_or_else(|| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()));
        by_root.entry(root).or_default().push(p.clone());
        dirs.insert(p.clone(), abs);
    }
    let mut yaml_of: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for p in yaml {
        let dir = p.parent().unwrap_or(Path::new("."));
        if let Some(root) = module_root(dir)
            && by_root.contains_key(&root)
        {
            yaml_of.entry(root).or_default().push(p.clone());
        }
    }
    let mut out = GoUnits {
        analysed: Vec::new(),
        skipped: Vec::new(),
        not_judged,
        packages: HashMap::new(),
    };
    for (root, files) in by_root {
        let module = root.is_dir();
        let uses = if module {
            let go_mod = std::fs::read_to_string(root.join("go.mod"))
                .ok()
                .map(|t| GoMod::parse(&t))
                .filter(GoMod::uses_controller_library);
            if let Some(m) = go_mod.as_ref().filter(|m| !m.module.is_empty()) {
                for f in &files {
                    if let Some(path) = dirs.get(f).and_then(|d| package_path(&root, &m.module, d))
                    {
                        out.packages.insert(f.clone(), path);
                    }
                }
            }
            go_mod.is_some()
        } else {
            crate::regular_file::read(&root, max_bytes)
                .is_ok_and(|b| imports_controller_library(&String::from_utf8_lossy(&b)))
        };
        match (uses, module) {
            (true, _) => {
                let yaml = yaml_of.remove(&root).unwrap_or_default();
                out.analysed.push((root, files, yaml, true));
            }
            (false, true) => out.skipped.push((Skip::NoGoController, root)),
            (false, false) => out.skipped.push((Skip::NoGoImport, root)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_module_and_requires_in_both_forms() {
        let m = GoMod::parse(
            "module example.com/widget // the operator\n\ngo 1.22\n\nrequire k8s.io/api v0.30.0\nrequire (\n\t\
             sigs.k8s.io/controller-runtime v0.18.0\n\tgithub.com/go-logr/logr v1.4.1 // indirect\n)\n\
             replace k8s.io/client-go => ../client-go\n",
        );
        assert_eq!(m.module, "example.com/widget");
        assert_eq!(
            m.requires,
            [
                "k8s.io/api",
                "sigs.k8s.io/controller-runtime",
                "github.com/go-logr/logr"
            ]
        );
        assert!(m.uses_controller_library());
        assert!(
            !GoMod::parse("module x\nrequire github.com/spf13/cobra v1.8.0\n")
                .uses_controller_library()
        );
    }

    #[test]
    fn tests_generated_and_vendored_files_are_skipped() {
        assert!(is_skipped_file(Path::new(
            "internal/controller/widget_controller_test.go"
        )));
        assert!(is_skipped_file(Path::new(
            "api/v1/zz_generated.deepcopy.go"
        )));
        assert!(is_skipped_file(Path::new(
            "vendor/k8s.io/client-go/rest/client.go"
        )));
        assert!(is_skipped_file(Path::new("test/util/metrics.go")));
        assert!(is_skipped_file(Path::new("pkg/e2e/framework.go")));
        assert!(is_skipped_file(Path::new("pkg/volume/testing/testing.go")));
        assert!(is_skipped_file(Path::new("pkg/client/fake/client.go")));
        assert!(!is_skipped_file(Path::new(
            "internal/controller/widget_controller.go"
        )));
        assert!(!is_skipped_file(Path::new("pkg/testing_helpers.go")));
    }
}
