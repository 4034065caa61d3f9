//! `kubectl ctrlaudit demo` as a newcomer runs it: no cluster, its own control plane (from the testenv binary
//! cache that test.sh fills), the CA202 loop found by live beside its cost measured by bench, a report that
//! renders, and nothing left running afterwards.
#![allow(clippy::unwrap_used)]

mod browser;
mod file_server;

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_kubectl-ctrlaudit");

/// Processes whose command line mentions `needle` (Linux /proc).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) && !cmd.contains("demo --") {
            found.push(cmd);
        }
    }
    found
}

fn state_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ctrlaudit-demo."))
        .collect()
}

#[test]
#[ignore = "needs the testenv binaries (and Chromium): ./test.sh builds them and runs it"]
fn demo_finds_the_loop_prices_it_and_leaves_nothing_running() {
    // Its own temp dir, so that the state-dir check sees only this demo's.
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    let out = Command::new(BIN)
        .args([
            "demo",
            "--duration",
            "20s",
            "--objects",
            "20",
            "--output-dir",
        ])
        .arg(&out_dir)
        .env("TMPDIR", tmp.path())
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");

    // live found the loop and named its controller; the good controller got nothing.
    let found = stdout
        .lines()
        .find(|l| l.contains("live found"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let cells: Vec<&str> = found.split('┆').map(str::trim).collect();
    assert!(cells[1].contains("CA202 error"), "bad column: {found}");
    assert!(cells[2].starts_with("nothing"), "good column: {found}");
    assert!(
        stdout.contains("by field manager `bad-annotation-loop`"),
        "{stdout}"
    );
    // Rates per controller: the loop's reconciles are divided by its own 20 Widgets, not by every object in scope
    // (the good controller's 20 besides).
    if stdout.contains("controller `bad-annotation-loop` reconciled") {
        assert!(
            stdout.contains("for 20 objects (its Widget in its namespace"),
            "{stdout}"
        );
    }
    // bench priced it: the loop wrote many times what the good controller did.
    let cost = stdout
        .lines()
        .find(|l| l.starts_with("cost: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let ratio: f64 = cost
        .split("× the writes")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(ratio >= 5.0, "{cost}");
    assert!(
        stderr.contains("nothing it started is left running"),
        "{stderr}"
    );

    // Nothing left: no control-plane process of this demo, no state dir.
    let tmp_str = tmp.path().to_str().unwrap();
    let left = processes_mentioning(tmp_str);
    assert!(left.is_empty(), "still running: {left:?}");
    assert!(
        state_dirs(tmp.path()).is_empty(),
        "{:?}",
        state_dirs(tmp.path())
    );

    // The page to share renders: the side-by-side table, the chart, the findings.
    let page = browser::render(&out_dir.join("demo.html"));
    assert!(page.errors.is_empty(), "console errors: {:?}", page.errors);
    assert!(page.tables >= 2, "{page:?}");
    assert_eq!(page.charts.len(), 1);
    assert!(page.findings >= 1);
    for text in [
        "live found",
        "bad-annotation-loop",
        "CA202",
        "peak share of the write ceiling",
    ] {
        assert!(page.text.contains(text), "{text} missing");
    }
    browser::save_screenshot("demo-report.png", &page.png);
}

/// A directory of links to every program on PATH except Go's: this machine as a krew user without Go has it.
fn path_without_go(dir: &Path) -> PathBuf {
    let bin = dir.join("bin-without-go");
    std::fs::create_dir_all(&bin).unwrap();
    for d in std::env::split_paths(&std::env::var_os("PATH").unwrap()) {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let link = bin.join(&name);
            if name == "go" || name == "gofmt" || link.exists() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(e.path(), link);
        }
    }
    assert!(
        Command::new("go")
            .env("PATH", &bin)
            .arg("version")
            .output()
            .is_err(),
        "go still on PATH"
    );
    bin
}

/// An envtest archive laid out as controller-tools publishes it, from `kube_apiserver` and `etcd`, served
/// under `root` behind a redirect, with an index whose hash for it is `hash(archive)`.
fn publish(root: &Path, kube_apiserver: &Path, etcd: &Path, hash: impl Fn(&Path) -> String) {
    let name = format!(
        "envtest-{}-{}.tar.gz",
        ctrlaudit::demo::envtest::VERSION,
        ctrlaudit::demo::envtest::platform()
    );
    let stage = root.join("stage/controller-tools/envtest");
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::copy(kube_apiserver, stage.join("kube-apiserver")).unwrap();
    std::fs::copy(etcd, stage.join("etcd")).unwrap();
    std::fs::write(stage.join("kubectl"), "not needed\n").unwrap();
    let archive = root.join("objects").join(&name);
    std::fs::create_dir_all(archive.parent().unwrap()).unwrap();
    let tar = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(root.join("stage"))
        .arg("controller-tools")
        .status()
        .unwrap();
    assert!(tar.success());
    std::fs::write(
        root.join("envtest-releases.yaml"),
        format!(
            "releases:\n  {v}:\n    {name}:\n      hash: {h}\n      selfLink: redirect/objects/{name}\n",
            v = ctrlaudit::demo::envtest::VERSION,
            h = hash(&archive)
        ),
    )
    .unwrap();
}

fn sha512(p: &Path) -> String {
    let o = Command::new("sha512sum").arg(p).output().unwrap();
    String::from_utf8(o.stdout).unwrap()[..128].to_string()
}

fn demo_without_go(tmp: &Path, index: &str, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("demo")
        .args(args)
        .env("PATH", path_without_go(tmp))
        .env("CTRLAUDIT_TESTENV_CACHE", tmp.join("cache"))
        .env("CTRLAUDIT_ENVTEST_INDEX", index)
        .env("TMPDIR", tmp)
        .env_remove("KUBECONFIG")
        .output()
        .unwrap()
}

/// What the cache holds besides the unpacked scripts.
fn cached_besides_scripts(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp.join("cache"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("scripts-") && n != ".build.lock")
        .collect()
}

/// A download whose sha512 is not the pinned one is refused before unpacking, nothing of it stays in the cache,
/// and without Go the error says both what failed and what the fallback would need.
#[test]
fn a_tampered_envtest_archive_is_refused_and_nothing_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = tmp.path().join("srv");
    let fake = tmp.path().join("fake");
    std::fs::write(&fake, "#!/bin/sh\nexit 1\n").unwrap();
    publish(&srv, &fake, &fake, |_| "0".repeat(128));
    let server = file_server::serve(srv);
    let out = demo_without_go(
        tmp.path(),
        &format!("{}/envtest-releases.yaml", server.url),
        &[
            "--duration",
            "10s",
            "--objects",
            "2",
            "--output-dir",
            tmp.path().join("out").to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    for needle in ["sha512", "not unpacked", "needs Go >= 1.25"] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    assert!(
        server.requests().iter().any(|r| r.starts_with("/objects/")),
        "the redirect was not followed: {:?}",
        server.requests()
    );
    assert_eq!(cached_besides_scripts(tmp.path()), Vec::<String>::new());
}

/// The demo on a machine without Go and with an empty cache: it downloads the envtest archive (here the
/// testenv binaries, packed as controller-tools packs them and served locally behind a redirect), verifies
/// it, and runs the whole tour on it; a second run reuses the cache without asking the server again.
#[test]
#[ignore = "needs the testenv binaries: ./test.sh builds them and runs it"]
fn demo_runs_without_go_on_the_downloaded_envtest_binaries() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            ". {}/testenv/versions.sh && printf '%s\\n%s' \"$KUBE_APISERVER_BIN\" \"$ETCD_BIN\"",
            env!("CARGO_MANIFEST_DIR")
        ))
        .env_remove("CTRLAUDIT_KUBE_APISERVER_BIN")
        .env_remove("CTRLAUDIT_ETCD_BIN")
        .output()
        .unwrap();
    let paths = String::from_utf8(out.stdout).unwrap();
    let (apiserver, etcd) = paths.split_once('\n').unwrap();
    let srv = tmp.path().join("srv");
    publish(&srv, Path::new(apiserver), Path::new(etcd), sha512);
    let server = file_server::serve(srv);
    let index = format!("{}/envtest-releases.yaml", server.url);
    let out_dir = tmp.path().join("out");
    let out_dir = out_dir.to_str().unwrap();
    let args = [
        "--duration",
        "10s",
        "--objects",
        "5",
        "-o",
        "json",
        "--output-dir",
        out_dir,
    ];
    let out = demo_without_go(tmp.path(), &index, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("downloading"), "{stderr}");
    assert!(
        stderr.contains("nothing it started is left running"),
        "{stderr}"
    );
    let tour: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(tour["bench"]["complete"].as_bool().unwrap(), "{tour}");
    let fetched = |s: &file_server::FileServer| {
        s.requests()
            .iter()
            .filter(|r| r.starts_with("/objects/"))
            .count()
    };
    assert_eq!(fetched(&server), 1, "{:?}", server.requests());
    assert_eq!(
        cached_besides_scripts(tmp.path()),
        vec![format!(
            "envtest-{}-{}",
            ctrlaudit::demo::envtest::VERSION,
            ctrlaudit::demo::envtest::platform()
        )]
    );

    let again = demo_without_go(tmp.path(), &index, &args);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("downloading"), "{stderr}");
    assert_eq!(fetched(&server), 1, "{:?}", server.requests());
}
