//! The CI integrations a user copies: the GitHub Action (`action.yml`) and the pre-commit hook
//! (`.pre-commit-hooks.yaml`) are well-formed, and the command lines they run are ones the binary accepts.
#![allow(clippy::unwrap_used)]

mod file_server;

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
    for flag in [
        "-o github",
        "--fail-on",
        "--output-file \"sarif=",
        "--output-file \"json=",
        "--config",
        "--new-from-merge-base",
    ] {
        assert!(scan.contains(flag), "{scan}");
    }
    parses(&[
        "scan",
        ".",
        "-o",
        "github",
        "--fail-on",
        "warning",
        "--output-file",
        "sarif=ctrlaudit.sarif",
        "--output-file",
        "json=ctrlaudit.json",
        "--config",
        "ctrlaudit.toml",
        "--new-from-merge-base",
        "origin/main",
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
        .find(|s| s["name"].as_str() == Some("leave suppressed findings out of the upload"))
        .and_then(|s| s["run"].as_str())
        .expect("the SARIF filter step");
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

/// The Action's summary step, run as the runner runs it (bash, with `GITHUB_OUTPUT` and `GITHUB_STEP_SUMMARY`
/// files) on a real `-o json` report: the outputs count the findings and the summary tables them per rule.
#[test]
fn the_action_summarises_and_counts_the_findings() {
    let a = yaml("action.yml");
    let script = a["runs"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| s["id"].as_str() == Some("summary"))
        .and_then(|s| s["run"].as_str())
        .expect("the summary step")
        .to_string();
    let d = tempfile::tempdir().unwrap();
    let report = d.path().join("report.json");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/scan/CA203-polling-requeue");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
        .args(["scan", dir.to_str().unwrap(), "--fail-on", "never"])
        .args(["--output-file", &format!("json={}", report.display())])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let findings = json["findings"].as_array().unwrap();
    let (outputs, summary) = (d.path().join("out"), d.path().join("summary.md"));
    let run = std::process::Command::new("bash")
        .args(["-e", "-c", &script])
        .env("REPORT", &report)
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .expect("bash");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let outputs = std::fs::read_to_string(&outputs).unwrap();
    let warnings = findings
        .iter()
        .filter(|f| f["severity"] == "warning")
        .count();
    assert!(findings.len() > 1 && warnings > 0);
    assert!(
        outputs.contains(&format!("findings={}\n", findings.len())),
        "{outputs}"
    );
    assert!(
        outputs.contains(&format!("warning={warnings}\n")),
        "{outputs}"
    );
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(summary.contains("| rule | level | findings |"), "{summary}");
    let polls = findings
        .iter()
        .filter(|f| f["code"] == "CA203" && f["severity"] == "warning")
        .count();
    assert!(polls > 0);
    assert!(
        summary.contains(&format!("| CA203 | warning | {polls} |")),
        "{summary}"
    );
}

/// actionlint (built by testenv/actionlint.sh, pinned in testenv/actionlint/go.mod) passes on every workflow, and through the
/// workflow that uses the Action from this checkout (`uses: ./`), on `action.yml`'s inputs.
#[test]
fn actionlint_passes_on_the_workflows_and_the_action() {
    let Some(bin) =
        std::env::var_os("ACTIONLINT_BIN").filter(|b| std::path::Path::new(b).is_file())
    else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !ci,
            "CI: ACTIONLINT_BIN is not set to a built actionlint (testenv/actionlint.sh builds it)"
        );
        eprintln!("skipped: no ACTIONLINT_BIN (./test.sh builds it with testenv/actionlint.sh)");
        return;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut workflows: Vec<PathBuf> = std::fs::read_dir(root.join(".github/workflows"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
        .collect();
    workflows.sort();
    assert!(!workflows.is_empty());
    let uses_the_action = workflows
        .iter()
        .any(|w| std::fs::read_to_string(w).unwrap().contains("uses: ./"));
    assert!(
        uses_the_action,
        "no workflow runs the Action from this checkout"
    );
    let o = std::process::Command::new(bin)
        .current_dir(&root)
        .arg("-no-color")
        .args(&workflows)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The Action's download: `release/fetch.sh` installs the archive of a version from a release server (here a
/// local one holding a real archive of this build) after checking it against checksums.txt; a tampered archive
/// installs nothing and fails; a version or platform without an archive exits 3, where the Action builds instead.
#[test]
fn the_action_downloads_and_verifies_a_release_archive() {
    let d = tempfile::tempdir().unwrap();
    let (releases, stage) = (d.path().join("releases"), d.path().join("stage"));
    let version = env!("CARGO_PKG_VERSION");
    let target = "x86_64-unknown-linux-gnu";
    let archive = format!("kubectl-ctrlaudit-v{version}-{target}.tar.gz");
    std::fs::create_dir_all(releases.join(format!("v{version}"))).unwrap();
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_kubectl-ctrlaudit"),
        stage.join("kubectl-ctrlaudit"),
    )
    .unwrap();
    std::fs::write(stage.join("LICENSE"), "Apache-2.0\n").unwrap();
    let dir = releases.join(format!("v{version}"));
    let tar = std::process::Command::new("tar")
        .arg("-czf")
        .arg(dir.join(&archive))
        .arg("-C")
        .arg(&stage)
        .args(["kubectl-ctrlaudit", "LICENSE"])
        .status()
        .unwrap();
    assert!(tar.success());
    let sha = |p: &std::path::Path| {
        let o = std::process::Command::new("sha256sum")
            .arg(p)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    };
    let sum = sha(&dir.join(&archive));
    std::fs::write(dir.join("checksums.txt"), format!("{sum}  {archive}\n")).unwrap();
    let server = file_server::serve(releases.clone());
    let base = server.url.clone();
    let fetch = |version: &str, dest: &std::path::Path| {
        std::process::Command::new(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("release/fetch.sh"),
        )
        .args([version, dest.to_str().unwrap()])
        .env("CTRLAUDIT_RELEASES", &base)
        .env("CTRLAUDIT_TARGET", target)
        .output()
        .unwrap()
    };

    let dest = d.path().join("bin");
    let o = fetch(&format!("v{version}"), &dest);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let installed = std::process::Command::new(dest.join("kubectl-ctrlaudit"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(installed.status.success());
    assert!(String::from_utf8_lossy(&installed.stdout).contains(version));

    // A release without this version, or without this platform's archive: exit 3, build from source.
    let o = fetch("9.9.9", &d.path().join("none"));
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // The archive swapped for another: the checksum does not match, nothing is installed.
    let mut bytes = std::fs::read(dir.join(&archive)).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(dir.join(&archive), &bytes).unwrap();
    let tampered = d.path().join("tampered");
    let o = fetch(version, &tampered);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("checksum mismatch"));
    assert!(!tampered.join("kubectl-ctrlaudit").exists());
}

/// `cargo binstall`'s template renders, for every target the release workflow builds, the name and format of the
/// archive release/package.sh writes for it.
#[test]
fn binstall_metadata_names_the_release_archives() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap()).unwrap();
    let package = &manifest["package"];
    let binstall = &package["metadata"]["binstall"];
    let template = binstall["pkg-url"].as_str().unwrap();
    assert_eq!(binstall["bin-dir"].as_str(), Some("{ bin }{ binary-ext }"));
    let release = yaml(".github/workflows/release.yml");
    let targets: Vec<String> = release["jobs"]["archive"]["strategy"]["matrix"]["include"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|t| t["target"].as_str().unwrap().to_string())
        .collect();
    assert!(targets.len() >= 6, "{targets:?}");
    let version = env!("CARGO_PKG_VERSION");
    let repo = package["repository"].as_str().unwrap();
    for target in &targets {
        let fmt = binstall
            .get("overrides")
            .and_then(|o| o.get(target.as_str()))
            .and_then(|o| o.get("pkg-fmt"))
            .unwrap_or(&binstall["pkg-fmt"])
            .as_str()
            .unwrap();
        let suffix = match fmt {
            "tgz" => ".tar.gz",
            "zip" => ".zip",
            other => panic!("pkg-fmt {other}"),
        };
        let url = template
            .replace("{ repo }", repo)
            .replace("{ version }", version)
            .replace("{ name }", env!("CARGO_PKG_NAME"))
            .replace("{ target }", target)
            .replace("{ archive-suffix }", suffix);
        // What release/package.sh writes for the target.
        let written = if target.contains("windows") {
            "zip"
        } else {
            "tar.gz"
        };
        assert_eq!(
            url,
            format!(
                "{repo}/releases/download/v{version}/kubectl-ctrlaudit-v{version}-{target}.{written}"
            ),
        );
    }
}
