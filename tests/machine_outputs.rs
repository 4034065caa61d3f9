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

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", stdout(o)))
}

/// A SARIF log checked against the official 2.1.0 schema (the copy the other SARIF tests use).
fn valid_sarif(o: &Output) -> serde_json::Value {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/sarif/sarif-schema-2.1.0.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let v = json(o);
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}\n{}", errors.join("\n"), stdout(o));
    v
}

const ALLOWED: &str = "fixtures/scan/CA002-unused-suppression/good_allow_same_line.rs";

#[test]
fn sarif_lists_what_an_inline_allow_suppressed_and_nothing_else_does() {
    // The fixture's one finding (CA203) is allowed on its line with a reason: exit 0, no finding in JSON.
    let o = run(&["scan", ALLOWED, "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(json(&o)["findings"], serde_json::json!([]));

    let o = run(&["scan", ALLOWED, "-o", "sarif"]);
    assert_eq!(o.status.code(), Some(0));
    let v = valid_sarif(&o);
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{}", stdout(&o));
    assert_eq!(results[0]["ruleId"], "CA203");
    assert_eq!(
        results[0]["locations"][0]["physicalLocation"]["region"]["startLine"],
        45
    );
    let s = &results[0]["suppressions"][0];
    assert_eq!(s["kind"], "inSource");
    assert_eq!(s["justification"], "vendor quota API cannot be watched");
    assert_eq!(s["location"]["physicalLocation"]["region"]["startLine"], 45);

    // A rule turned off is off: it is not listed as suppressed either.
    let o = run(&["scan", ALLOWED, "-o", "sarif", "--allow", "CA203"]);
    assert_eq!(valid_sarif(&o)["runs"][0]["results"], serde_json::json!([]));
    // A level from the command line applies to the suppressed finding as to a reported one.
    let o = run(&["scan", ALLOWED, "-o", "sarif", "-D", "CA203"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "a suppressed error does not fail the scan"
    );
    assert_eq!(valid_sarif(&o)["runs"][0]["results"][0]["level"], "error");
}

#[test]
fn gitlab_code_quality_of_a_scan_keeps_the_baseline_fingerprints() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.json");
    let o = run(&[
        "scan",
        POLLING,
        "--write-baseline",
        baseline.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
    let mut in_baseline: Vec<&str> = base["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["fingerprint"].as_str().unwrap())
        .collect();

    let o = run(&["scan", POLLING, "-o", "gitlab"]);
    assert_eq!(o.status.code(), Some(1), "exit code as for any format");
    let issues = json(&o);
    let issues = issues.as_array().unwrap();
    assert_eq!(issues.len(), in_baseline.len(), "{}", stdout(&o));
    let mut fingerprints: Vec<&str> = issues
        .iter()
        .map(|i| i["fingerprint"].as_str().unwrap())
        .collect();
    let unique: std::collections::BTreeSet<&str> = fingerprints.iter().copied().collect();
    assert_eq!(
        unique.len(),
        fingerprints.len(),
        "one issue per fingerprint"
    );
    for i in issues {
        assert!(
            i["location"]["path"]
                .as_str()
                .unwrap()
                .starts_with("fixtures/scan/CA203-polling-requeue/"),
            "{i}"
        );
        assert!(i["location"]["lines"]["begin"].as_u64().unwrap() >= 1);
        assert!(
            ["major", "info", "critical"].contains(&i["severity"].as_str().unwrap()),
            "{i}"
        );
        assert_eq!(
            i["description"].as_str().unwrap().split(':').next(),
            i["check_name"].as_str()
        );
    }
    // Where the baseline's fingerprints are distinct, they are the issues' fingerprints.
    in_baseline.sort_unstable();
    in_baseline.dedup();
    fingerprints.retain(|f| in_baseline.binary_search(f).is_ok());
    assert_eq!(fingerprints.len(), in_baseline.len());
    // Run to run, the same.
    assert_eq!(stdout(&run(&["scan", POLLING, "-o", "gitlab"])), stdout(&o));
}
