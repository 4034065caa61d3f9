//! The CI integrations a user copies: the GitHub Action (`action.yml`) and the pre-commit hook
//! (`.pre-commit-hooks.yaml`) are well-formed, and the command lines they run are ones the binary accepts.
#![allow(clippy::unwrap_used)]

use clap::Parser;
use ctrlaudit::cli::Cli;
use std::path::PathBuf;

fn yaml(file: &str) -> yaml_serde::Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(file);
    yaml_serde::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn parses(args: &[&str]) {
    let mut argv = vec!["kubectl-ctrlaudit"];
    argv.extend_from_slice(args);
    if let Err(e) = Cli::try_parse_from(&argv) {
        panic!("{argv:?} is not a valid command line: {e}");
    }
}

#[test]
fn the_action_is_a_composite_that_runs_a_valid_scan() {
    let a = yaml("action.yml");
    assert!(a["name"].as_str().is_some_and(|n| !n.is_empty()));
    assert!(
        a["description"].as_str().is_some_and(|d| d.len() <= 125),
        "marketplace limit"
    );
    assert_eq!(a["runs"]["using"].as_str(), Some("composite"));
    let inputs = a["inputs"].as_mapping().unwrap();
    let steps = a["runs"]["steps"].as_sequence().unwrap();
    let mut scan = None;
    for step in steps {
        if let Some(run) = step["run"].as_str() {
            assert_eq!(
                step["shell"].as_str(),
                Some("bash"),
                "composite run steps need a shell"
            );
            if run.contains(" scan ") {
                scan = Some(run.to_string());
            }
        }
        // Every `${{ inputs.X }}` names a declared input.
        let text = yaml_serde::to_string(step).unwrap();
        for (i, _) in text.match_indices("inputs.") {
            let name: String = text[i + "inputs.".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            assert!(
                inputs.contains_key(yaml_serde::Value::String(name.clone())),
                "undeclared input {name}"
            );
        }
    }
    let scan = scan.expect("a scan step");
    for flag in ["-o github", "--output-file sarif=ctrlaudit.sarif"] {
        assert!(scan.contains(flag), "{scan}");
    }
    parses(&[
        "scan",
        ".",
        "-o",
        "github",
        "--output-file",
        "sarif=ctrlaudit.sarif",
    ]);
    parses(&[
        "scan",
        ".",
        "-o",
        "github",
        "--fail-on",
        "error",
        "--baseline",
        "b.json",
    ]);
}

#[test]
fn the_pre_commit_hook_installs_and_runs_the_binary() {
    let hooks = yaml(".pre-commit-hooks.yaml");
    let hook = &hooks.as_sequence().unwrap()[0];
    assert_eq!(hook["id"].as_str(), Some("ctrlaudit"));
    assert_eq!(hook["language"].as_str(), Some("rust"));
    assert_eq!(hook["pass_filenames"].as_bool(), Some(false));
    let entry: Vec<&str> = hook["entry"].as_str().unwrap().split_whitespace().collect();
    // language: rust installs the package's binaries with cargo: the entry must be one of them.
    assert_eq!(entry[0], env!("CARGO_PKG_NAME"));
    let mut args: Vec<&str> = entry[1..].to_vec();
    for a in hook["args"].as_sequence().unwrap() {
        args.push(a.as_str().unwrap());
    }
    parses(&args);
}

#[test]
fn the_action_uploads_sarif_without_the_suppressed_findings() {
    // GitHub code scanning ignores `suppressions[]`: the Action's jq step must drop those results and keep the
    // others. Run that very step's program on a real SARIF log of a folder with one allowed and other findings.
    let a = yaml("action.yml");
    let steps = a["runs"]["steps"].as_sequence().unwrap();
    let filter = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|r| r.starts_with("jq "))
        .expect("a jq step");
    let program = filter.split('\'').nth(1).expect("a quoted jq program");
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/scan/CA002-unused-suppression");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
        .args([
            "scan",
            dir.to_str().unwrap(),
            "-o",
            "sarif",
            "--fail-on",
            "never",
        ])
        .output()
        .unwrap();
    let sarif: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let suppressed = results
        .iter()
        .filter(|r| r.get("suppressions").is_some())
        .count();
    assert!(suppressed > 0 && suppressed < results.len(), "{sarif}");
    let mut jq = std::process::Command::new("jq")
        .arg(program)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("jq (test.sh installs it)");
    std::io::Write::write_all(jq.stdin.as_mut().unwrap(), &o.stdout).unwrap();
    let out = jq.wait_with_output().unwrap();
    assert!(out.status.success());
    let uploaded: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kept = uploaded["runs"][0]["results"].as_array().unwrap();
    assert_eq!(kept.len(), results.len() - suppressed);
    assert!(kept.iter().all(|r| r.get("suppressions").is_none()));
}
