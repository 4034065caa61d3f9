//! The machine-readable outputs end to end, through the binary: JUnit agrees with the exit code, SARIF keeps the
//! findings inline allows suppressed, `-o json` validates against its published schema, and `-o gitlab` is a Code
//! Quality report GitLab reads.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const POLLING: &str = "fixtures/scan/CA203-polling-requeue";

/// The JUnit suite of `out`: (tests, failures, skipped).
fn junit_counts(out: &str) -> (usize, usize, usize) {
    let report = quick_junit::Report::deserialize_from_str(out)
        .unwrap_or_else(|e| panic!("not a JUnit document: {e}\n{out}"));
    let suite = &report.test_suites[0];
    (suite.tests, suite.failures, suite.skipped)
}

#[test]
fn an_info_only_scan_exits_0_and_its_junit_fails_nothing() {
    // Every rule the fixture trips, turned down to info: the scan reports findings, none at or above the default
    // --fail-on warning.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("ctrlaudit.toml");
    std::fs::write(
        &config,
        "[rules]\nCA201 = \"info\"\nCA203 = \"info\"\nCA204 = \"info\"\n",
    )
    .unwrap();
    let o = run(&[
        "scan",
        POLLING,
        "--config",
        config.to_str().unwrap(),
        "-o",
        "junit",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let (tests, failures, skipped) = junit_counts(&stdout(&o));
    assert_eq!(failures, 0, "{}", stdout(&o));
    assert_eq!(
        skipped, 3,
        "CA201, CA203 and CA204 list their info findings"
    );
    assert!(tests > skipped);

    // The same findings at their own levels (warnings): exit 1, and JUnit fails the same rules.
    let o = run(&["scan", POLLING, "-o", "junit"]);
    assert_eq!(o.status.code(), Some(1));
    let (_, failures, _) = junit_counts(&stdout(&o));
    assert!(failures >= 1, "{}", stdout(&o));
    // --fail-on never: exit 0, no failure.
    let o = run(&["scan", POLLING, "-o", "junit", "--fail-on", "never"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(junit_counts(&stdout(&o)).1, 0, "{}", stdout(&o));
}
