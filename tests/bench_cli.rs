//! `kubectl ctrlaudit bench` argument handling, without a cluster: every bad input is a clear message and
//! exit 2 before anything is contacted.
#![allow(clippy::unwrap_used)]

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_kubectl-ctrlaudit");

fn bench(args: &[&str]) -> (Option<i32>, String, String) {
    // A kubeconfig that points nowhere: usage errors must be reported before any connection attempt.
    let out = Command::new(BIN)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .arg("bench")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "choose what to run"),
        (
            &["--rule", "CA201", "--objects", "0"],
            "at least one object",
        ),
        (&["--rule", "CA201", "--duration", "-5s"], "negative"),
        (&["--rule", "CA201", "--duration", "90d"], "unknown unit"),
        (&["--rule", "CA201", "--duration", "100h"], "limit"),
        (
            &["--variants", "good,bad-nope"],
            "unknown variant \"bad-nope\"",
        ),
        (&["--rule", "CA999"], "unknown rule"),
        (&["--rule", "CA305"], "no bench pair"),
        (&["--experiment", "7"], "unknown experiment"),
        (&["--rule", "CA201", "--experiment", "1"], "alternatives"),
        (&["--rule", "CA201", "-o", "sarif"], "table or JSON"),
    ];
    for (args, expect) in cases {
        let (code, _, stderr) = bench(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(expect),
            "{args:?}: expected {expect:?} in {stderr}"
        );
    }
    // Not a number at all: clap's own message, same exit code.
    let (code, _, stderr) = bench(&["--rule", "CA201", "--objects", "many"]);
    assert_eq!(code, Some(2), "{stderr}");
}

#[test]
fn list_shows_variants_pairs_and_experiments() {
    let (code, stdout, stderr) = bench(&["--list"]);
    assert_eq!(code, Some(0), "{stderr}");
    for s in [
        "bad-annotation-loop",
        "per-tenant",
        "CA202",
        "experiment",
        "tenants",
        "speed",
    ] {
        assert!(stdout.contains(s), "{s} missing from --list:\n{stdout}");
    }
    // Every variant says what it is: no two share a description (the watch-list ones once read as `good`).
    let whats: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with('│') && !l.contains("variant"))
        .filter_map(|l| l.rsplit('┆').next())
        .map(|w| w.trim_end_matches('│').trim())
        .collect();
    assert!(whats.len() >= 10, "{stdout}");
    let unique: std::collections::BTreeSet<&str> = whats.iter().copied().collect();
    assert_eq!(unique.len(), whats.len(), "{stdout}");
    assert!(stdout.contains("WatchList"), "{stdout}");
}

#[test]
fn a_missing_kubeconfig_is_an_input_error_said_once() {
    let (code, _, stderr) = bench(&["--rule", "CA201", "--objects", "5", "--duration", "5s"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(
        stderr.trim(),
        "error: kubeconfig /nonexistent/kubeconfig: no such file",
        "{stderr}"
    );
}
