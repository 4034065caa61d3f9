//! `kubectl ctrlaudit demo` as a newcomer runs it: no cluster, its own control plane (from the testenv binary
//! cache that test.sh fills), the CA202 loop found by live beside its cost measured by bench, a report that
//! renders, and nothing left running afterwards.
#![allow(clippy::unwrap_used)]

mod browser;

use std::path::Path;
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
