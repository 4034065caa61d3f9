//! The pre-commit route without a Rust toolchain (issue 26): the binary's wheel installed by pre-commit. A test
//! binary of its own: its maturin build links `target/debug/kubectl-ctrlaudit` again (without the tests'
//! dev-dependency features), which must not happen while another test of the same binary runs it; cargo runs
//! test binaries one after another.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

/// The pre-commit route without a Rust toolchain: the wheel of the binary (maturin's `bin` bindings, as ruff
/// ships; built here from this checkout) installed by pre-commit into a fresh environment for a local hook, run
/// on a crate with a finding. Needs python3 and PyPI (for maturin and pre-commit).
#[test]
fn the_wheel_installs_and_runs_as_a_pre_commit_hook() {
    let d = tempfile::tempdir().unwrap();
    let run = |cmd: &std::path::Path, args: &[&str], dir: &std::path::Path| {
        let o = std::process::Command::new(cmd)
            .args(args)
            .current_dir(dir)
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", cmd.display()));
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr),
        )
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let venv = d.path().join("tools");
    let (code, out) = run(
        std::path::Path::new("python3"),
        &["-m", "venv", venv.to_str().unwrap()],
        d.path(),
    );
    assert_eq!(code, Some(0), "{out}");
    let bin = venv.join("bin");
    let (code, out) = run(
        &bin.join("pip"),
        &["install", "-q", "maturin>=1.5,<2", "pre-commit>=3"],
        d.path(),
    );
    assert_eq!(code, Some(0), "{out}");
    // The dev profile shares this test run's build; a release wheel is the release workflow's.
    let wheels = d.path().join("wheels");
    let (code, out) = run(
        &bin.join("maturin"),
        &["build", "--profile", "dev", "-o", wheels.to_str().unwrap()],
        &root,
    );
    assert_eq!(code, Some(0), "{out}");
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("a wheel");

    // A repository with one crate and one finding, and the local hook a user copies (the wheel from PyPI there).
    let repo = d.path().join("repo");
    let fixture =
        root.join("fixtures/scan/CA302-unbounded-reconcile-concurrency/bad_kube_through_framework");
    for f in ["Cargo.toml", "Cargo.lock", "src/main.rs"] {
        let to = repo.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(fixture.join(f), &to).unwrap();
    }
    std::fs::write(
        repo.join(".pre-commit-config.yaml"),
        format!(
            "repos:\n  - repo: local\n    hooks:\n      - id: ctrlaudit\n        name: kubectl-ctrlaudit scan\n        \
             entry: kubectl-ctrlaudit scan -o concise .\n        language: python\n        \
             additional_dependencies: [\"{}\"]\n        types_or: [rust, go]\n        pass_filenames: false\n",
            wheel.display()
        ),
    )
    .unwrap();
    let git = |args: &[&str]| {
        let (code, out) = run(
            std::path::Path::new("git"),
            &[
                &[
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@example.com",
                    "-c",
                    "commit.gpgsign=false",
                ],
                args,
            ]
            .concat(),
            &repo,
        );
        assert_eq!(code, Some(0), "git {args:?}: {out}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    let started = std::time::Instant::now();
    let (code, out) = run(&bin.join("pre-commit"), &["run", "--all-files"], &repo);
    // Fails on the finding, as a gate should; the time is printed, never asserted (a shared machine is noisy).
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("CA302"), "{out}");
    eprintln!(
        "pre-commit: environment with the wheel installed and the hook run in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
