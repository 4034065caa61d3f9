//! Selection on small trees built in temporary directories: locks, workspaces, path and vendored
//! dependencies, re-exports, and the crates that are not analysed.
#![allow(clippy::unwrap_used)]

use super::*;

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn select(unit: &Path) -> Selection {
    Selector::default().select(unit)
}

fn lockfile(packages: &[(&str, &[&str])]) -> String {
    let mut s = String::from("version = 4\n");
    for (name, deps) in packages {
        s.push_str(&format!(
            "\n[[package]]\nname = \"{name}\"\nversion = \"1.0.0\"\ndependencies = [{}]\n",
            deps.iter()
                .map(|d| format!("\"{d}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    s
}

#[test]
fn a_framework_that_reexports_kube_is_found_through_the_lock() {
    let d = tempfile::tempdir().unwrap();
    write(
        &d.path().join("Cargo.toml"),
        "[package]\nname = \"op\"\nversion = \"0.1.0\"\n[dependencies]\nkubizone = \"1\"\nserde = \"1\"\n",
    );
    write(
        &d.path().join("Cargo.lock"),
        &lockfile(&[
            ("op", &["kubizone", "serde"]),
            ("kubizone", &["kube-runtime 1.0.0", "serde"]),
            ("kube-runtime", &["kube-client"]),
            ("serde", &[]),
        ]),
    );
    assert_eq!(select(d.path()), Selection::Through("kubizone".into()));
}

#[test]
fn the_lock_says_no_when_nothing_reaches_kube() {
    let d = tempfile::tempdir().unwrap();
    write(
        &d.path().join("Cargo.toml"),
        "[package]\nname = \"tool\"\nversion = \"0.1.0\"\n[dependencies]\nserde = \"1\"\n",
    );
    write(
        &d.path().join("Cargo.lock"),
        &lockfile(&[("tool", &["serde"]), ("serde", &["serde_derive"])]),
    );
    assert_eq!(select(d.path()), Selection::Skip(Skip::NoKube));
}

#[test]
fn workspace_dependencies_are_resolved_with_their_renames_and_paths() {
    let d = tempfile::tempdir().unwrap();
    write(
        &d.path().join("Cargo.toml"),
        "[workspace]\nmembers = [\"op\", \"common\", \"cli\"]\n[workspace.dependencies]\n\
         k8s = { package = \"kube\", version = \"1\" }\ncommon = { path = \"common\" }\n",
    );
    write(
        &d.path().join("op/Cargo.toml"),
        "[package]\nname = \"op\"\nversion = \"0.1.0\"\n[dependencies]\nk8s.workspace = true\n",
    );
    write(
        &d.path().join("common/Cargo.toml"),
        "[package]\nname = \"common\"\nversion = \"0.1.0\"\n[dependencies]\nk8s = { workspace = true }\n",
    );
    write(
        &d.path().join("cli/Cargo.toml"),
        "[package]\nname = \"cli\"\nversion = \"0.1.0\"\n[dependencies]\ncommon.workspace = true\n",
    );
    assert_eq!(select(&d.path().join("op")), Selection::Direct);
    assert_eq!(
        select(&d.path().join("cli")),
        Selection::Through("common".into())
    );
}

#[test]
fn without_a_lock_path_dependencies_are_followed_and_registry_ones_leave_it_to_the_source() {
    let d = tempfile::tempdir().unwrap();
    write(
        &d.path().join("shared/Cargo.toml"),
        "[package]\nname = \"shared\"\nversion = \"0.1.0\"\n[dependencies]\nkube-runtime = \"1\"\n",
    );
    write(
        &d.path().join("op/Cargo.toml"),
        "[package]\nname = \"op\"\nversion = \"0.1.0\"\n[dependencies]\nshared = { path = \"../shared\" }\n",
    );
    write(
        &d.path().join("plain/Cargo.toml"),
        "[package]\nname = \"plain\"\nversion = \"0.1.0\"\n[dependencies]\nhelper = { path = \"../helper\" }\n",
    );
    write(
        &d.path().join("helper/Cargo.toml"),
        "[package]\nname = \"helper\"\nversion = \"0.1.0\"\n[dependencies]\nplain = { path = \"../plain\" }\n",
    );
    write(
        &d.path().join("framework_user/Cargo.toml"),
        "[package]\nname = \"framework_user\"\nversion = \"0.1.0\"\n[dependencies]\nsome-framework = \"2\"\n",
    );
    assert_eq!(
        select(&d.path().join("op")),
        Selection::Through("shared".into())
    );
    // A cycle of path dependencies with nothing of kube in it ends, and says no.
    assert_eq!(
        select(&d.path().join("plain")),
        Selection::Skip(Skip::NoKube)
    );
    assert_eq!(select(&d.path().join("framework_user")), Selection::Source);
}

#[test]
fn kube_itself_and_examples_of_a_crate() {
    let d = tempfile::tempdir().unwrap();
    write(
        &d.path().join("kube-runtime/Cargo.toml"),
        "[package]\nname = \"kube-runtime\"\nversion = \"1.0.0\"\n[dependencies]\nkube-client = \"1\"\n",
    );
    write(
        &d.path().join("op/Cargo.toml"),
        "[package]\nname = \"op\"\nversion = \"0.1.0\"\n[dev-dependencies]\nkube = \"1\"\n",
    );
    assert_eq!(
        select(&d.path().join("kube-runtime")),
        Selection::Skip(Skip::KubeItself)
    );
    assert_eq!(
        select(&d.path().join("op/examples/demo.rs")),
        Selection::Direct
    );
    assert_eq!(select(&d.path().join("loose.rs")), Selection::Source);
}

#[test]
fn a_vendored_tree_is_decided_from_its_siblings_manifests() {
    let d = tempfile::tempdir().unwrap();
    let v = d.path().join("vendor");
    let krate = |dir: &str, name: &str, deps: &str| {
        write(
            &v.join(dir).join("Cargo.toml"),
            &format!("[package]\nname = \"{name}\"\nversion = \"1.0.0\"\n[dependencies]\n{deps}"),
        );
    };
    krate("opkit-0.4.2", "opkit", "kube = \"2\"\nserde = \"1\"\n");
    krate("app-1.0.0", "app", "opkit = \"0.4\"\n");
    krate(
        "serde-1.0.219",
        "serde",
        "serde_derive = { version = \"1\", optional = true }\n",
    );
    krate(
        "tool-1.0.0",
        "tool",
        "serde = \"1\"\nwinapi = { version = \"0.3\", optional = true }\n\
         [dev-dependencies]\ncriterion = \"0.5\"\n",
    );
    krate("odd-1.0.0", "odd", "not-vendored = \"1\"\n");
    let s = Selector::default();
    assert_eq!(
        s.select(&v.join("app-1.0.0")),
        Selection::Through("opkit".into())
    );
    // serde's optional serde_derive and tool's optional winapi are not on disk: in no build of this tree;
    // its dev-dependency criterion is not part of the question.
    assert_eq!(
        s.select(&v.join("tool-1.0.0")),
        Selection::Skip(Skip::NoKube)
    );
    // A dependency that is nowhere on disk could re-export kube: the source decides.
    assert_eq!(s.select(&v.join("odd-1.0.0")), Selection::Source);
}

#[test]
fn an_empty_dependency_table_is_a_crate_without_kube_and_no_table_is_a_snippet() {
    let d = tempfile::tempdir().unwrap();
    write(
        &d.path().join("leaf/Cargo.toml"),
        "[package]\nname = \"leaf\"\nversion = \"0.1.0\"\n[dependencies]\n",
    );
    write(
        &d.path().join("snippet/Cargo.toml"),
        "[package]\nname = \"snippet\"\nversion = \"0.1.0\"\n",
    );
    assert_eq!(
        select(&d.path().join("leaf")),
        Selection::Skip(Skip::NoKube)
    );
    assert_eq!(select(&d.path().join("snippet")), Selection::Source);
}
