//! The binary end to end: exit codes, `rules`, output formats, baselines, and bad input that
//! must never abort a scan.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn missing_path_is_a_usage_error() {
    let o = run(&["scan", "does/not/exist"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("path not found: does/not/exist"));
}

#[test]
fn unknown_rule_and_bad_flags_are_usage_errors() {
    assert_eq!(run(&["rules", "CA999"]).status.code(), Some(2));
    assert_eq!(
        run(&["scan", ".", "--allow", "CA999"]).status.code(),
        Some(2)
    );
    // `-A` is --all-namespaces, as in kubectl; clippy's habit gets pointed at --allow.
    let o = run(&["scan", ".", "-A", "CA304"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("turn a rule off with --allow CA304"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        run(&["scan", ".", "--output-file", "xml=out"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));
    // `rules` honours the text and JSON formats and refuses the findings formats.
    assert_eq!(run(&["rules", "-o", "sarif"]).status.code(), Some(2));
    assert_eq!(
        run(&["rules", "CA203", "-o", "junit"]).status.code(),
        Some(2)
    );
    assert_eq!(run(&["rules", "-o", "json"]).status.code(), Some(0));
}

#[test]
fn rules_lists_the_catalogue_and_explains_one() {
    let o = run(&["rules"]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    for r in ctrlaudit::rules::RULES {
        assert!(
            out.contains(r.code),
            "{} missing from the catalogue",
            r.code
        );
    }
    let o = run(&["rules", "ca202"]);
    assert!(stdout(&o).starts_with("# CA202 volatile-value-written-every-reconcile"));
    let o = run(&["rules", "polling-requeue", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["code"], "CA203");
}

#[test]
fn version_and_help() {
    let version = stdout(&run(&["--version"]));
    assert!(version.contains(env!("CARGO_PKG_VERSION")), "{version}");
    // The commit and its date (this test runs in a checkout), and the Kubernetes API it speaks.
    assert!(version.contains("Kubernetes API 1."), "{version}");
    assert!(!version.contains("unknown"), "{version}");
    let help = stdout(&run(&["scan", "--help"]));
    assert!(help.contains("Examples:") && help.contains("--baseline"));
}

#[test]
fn fixtures_fail_and_levels_change_the_exit_code() {
    let o = run(&["scan", "fixtures/scan/CA203-polling-requeue", "-o", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    assert!(findings.iter().any(|f| f["code"] == "CA203"));
    // Everything off: clean.
    let all: Vec<&str> = ctrlaudit::rules::RULES.iter().map(|r| r.code).collect();
    let joined = all.join(",");
    let o = run(&[
        "scan",
        "fixtures/scan/CA203-polling-requeue",
        "--allow",
        &joined,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = run(&[
        "scan",
        "fixtures/scan/CA203-polling-requeue",
        "--fail-on",
        "never",
    ]);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn baseline_round_trip_and_output_files() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("baseline.json");
    let target = "fixtures/scan/CA202-volatile-value-written-every-reconcile";
    let o = run(&["scan", target, "--write-baseline", base.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let sarif = dir.path().join("out.sarif");
    let junit = dir.path().join("out.xml");
    let o = run(&[
        "scan",
        target,
        "--baseline",
        base.to_str().unwrap(),
        "--output-file",
        &format!("sarif={}", sarif.display()),
        "--output-file",
        &format!("junit={}", junit.display()),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("already in the baseline"));
    assert!(
        std::fs::read_to_string(&sarif)
            .unwrap()
            .contains("\"2.1.0\"")
    );
    assert!(
        std::fs::read_to_string(&junit)
            .unwrap()
            .contains("<testsuite")
    );
    // A bare PATH takes the -o format; a FORMAT that is none is an input error.
    let json = dir.path().join("out.json");
    let o = run(&[
        "scan",
        target,
        "-o",
        "json",
        "--fail-on",
        "never",
        "--output-file",
        json.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(
        written["findings"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
    );
    let o = run(&["scan", target, "--output-file", "yaml=out.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("FORMAT=PATH"));
}

#[test]
fn bad_input_never_aborts_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    let src = root.join("src");
    std::fs::create_dir(&src).unwrap();
    let good = "use kube::runtime::controller::Action;\nuse std::time::Duration;\nasync fn reconcile(o: std::sync::Arc<Widget>, c: std::sync::Arc<Ctx>) -> Result<Action, E> {\n    Ok(Action::requeue(Duration::from_secs(2)))\n}\n";
    std::fs::write(src.join("ok.rs"), good).unwrap();
    std::fs::write(src.join("broken.rs"), "use kube::Api;\nfn f( {\n").unwrap();
    std::fs::write(src.join("latin1.rs"), b"use kube::Api;\n// caf\xe9\n").unwrap();
    std::fs::write(src.join("empty.rs"), "").unwrap();
    std::fs::write(src.join("binary.rs"), b"kube\0\0\0\x01\x02").unwrap();
    std::fs::write(
        src.join("huge.rs"),
        format!("// kube\n{}", "// padding line\n".repeat(200_000)),
    )
    .unwrap();
    std::fs::write(
        src.join("deep.rs"),
        format!(
            "use kube::Api;\nfn f() {{ {}1{} }}\n",
            "[".repeat(5000),
            "]".repeat(5000)
        ),
    )
    .unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&src, src.join("loop")).unwrap();
    let o = run(&[
        "scan",
        root.to_str().unwrap(),
        "-o",
        "json",
        "--fail-on",
        "never",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    let ca001: Vec<String> = findings
        .iter()
        .filter(|f| f["code"] == "CA001")
        .map(|f| f["subject"]["file"].as_str().unwrap().to_string())
        .collect();
    for name in ["broken.rs", "latin1.rs", "huge.rs", "deep.rs"] {
        assert!(
            ca001.iter().any(|f| f.ends_with(name)),
            "no CA001 for {name}: {ca001:?}"
        );
    }
    assert!(
        findings.iter().any(|f| f["code"] == "CA203"),
        "the good file was not scanned"
    );
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("empty file") && notes.contains("binary file"),
        "{notes}"
    );
    #[cfg(unix)]
    assert!(notes.contains("symlink loop"), "{notes}");
}

#[test]
fn config_file_sets_levels_thresholds_and_wrapper_aliases() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"op\"\n").unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(
        root.join("ctrlaudit.toml"),
        "[rules]\nCA203 = \"error\"\n[thresholds]\npolling_requeue_secs = 120\n[aliases]\n\"k8s_util::apply_everything\" = \"patch\"\n",
    )
    .unwrap();
    let src = r#"
use k8s_util::apply_everything;
use kube::{Api, CustomResource, runtime::controller::Action};
use std::{sync::Arc, time::Duration};

#[derive(CustomResource, Clone, Debug)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, status = "WidgetStatus")]
pub struct WidgetSpec { pub size: i32 }

pub async fn reconcile(obj: Arc<Widget>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let api: Api<Widget> = Api::all(ctx.client.clone());
    apply_everything(&api, &obj.name_any(), &serde_json::json!({"status": {"phase": "Ready"}})).await?;
    Ok(Action::requeue(Duration::from_secs(60)))
}
"#;
    std::fs::write(root.join("src/lib.rs"), src).unwrap();
    let o = run(&["scan", root.to_str().unwrap(), "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let got: Vec<(String, String)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // 60 s is polling under the configured 120 s limit, at the configured level.
    assert!(got.contains(&("CA203".into(), "error".into())), "{got:?}");
    // The wrapper counts as the patch it wraps: status through the main resource.
    assert!(got.iter().any(|(c, _)| c == "CA101"), "{got:?}");
    // A broken config is a usage error that names the file.
    std::fs::write(root.join("ctrlaudit.toml"), "[rules]\nCA203 = \"loud\"\n").unwrap();
    let o = run(&["scan", root.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("ctrlaudit.toml"));
    // So is an alias to a method kube's `Api` does not have: it would count nothing, silently.
    std::fs::write(
        root.join("ctrlaudit.toml"),
        "[aliases]\n\"k8s_util::apply_everything\" = \"patch_stauts\"\n",
    )
    .unwrap();
    let o = run(&["scan", root.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("ctrlaudit.toml")
            && err.contains("patch_stauts")
            && err.contains("patch_status"),
        "{err}"
    );
}

#[test]
fn a_partial_scan_still_knows_the_crates_crd_types() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"op\"\n").unwrap();
    std::fs::create_dir_all(root.join("src/controllers")).unwrap();
    std::fs::write(
        root.join("src/crd.rs"),
        "use kube::CustomResource;\n#[derive(CustomResource, Clone, Debug)]\n#[kube(group = \"example.com\", version = \"v1\", kind = \"Widget\", namespaced, status = \"WidgetStatus\")]\npub struct WidgetSpec { pub size: i32 }\n",
    )
    .unwrap();
    let reconcile = r#"
use crate::crd::Widget;
use kube::{Api, api::{Patch, PatchParams}, runtime::controller::Action};
use std::sync::Arc;

pub async fn reconcile(obj: Arc<Widget>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let api: Api<Widget> = Api::all(ctx.client.clone());
    let body = serde_json::json!({"status": {"phase": "Ready"}});
    api.patch(&obj.name_any(), &PatchParams::default(), &Patch::Merge(&body)).await?;
    Ok(Action::await_change())
}
"#;
    std::fs::write(root.join("src/controllers/widget.rs"), reconcile).unwrap();
    let only_controllers = root.join("src/controllers");
    let o = run(&["scan", only_controllers.to_str().unwrap(), "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let codes: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, vec!["CA101"], "{v}");
}

/// Runs the binary with a stdout whose reader is already gone, as `… | head -1` leaves it once head has
/// read its line.
fn run_into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    bin()
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
        .wait_with_output()
        .unwrap()
}

#[test]
fn a_closed_stdout_ends_quietly_with_the_results_status() {
    let bad =
        "fixtures/scan/CA202-volatile-value-written-every-reconcile/bad_annotation_timestamp.rs";
    for (args, code) in [
        (vec!["rules"], 0),
        (vec!["rules", "CA202"], 0),
        (vec!["-o", "json", "rules"], 0),
        (vec!["bench", "--list"], 0),
        // A finding still fails the command: a CI step with `set -o pipefail` must not go green.
        (vec!["scan", bad, "--color", "never"], 1),
        (vec!["scan", bad, "-o", "sarif"], 1),
    ] {
        let o = run_into_closed_pipe(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("error"), "{args:?}: {stderr}");
    }
}

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Copies the one-finding crate of the CA302 fixtures (opkit re-exporting kube; one unbounded Controller) to `to`.
fn copy_ca302_crate(to: &std::path::Path) {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/scan/CA302-unbounded-reconcile-concurrency/bad_kube_through_framework");
    for f in ["Cargo.toml", "Cargo.lock", "src/main.rs"] {
        write(
            &to.join(f),
            &std::fs::read_to_string(fixture.join(f)).unwrap(),
        );
    }
}

/// A CI step pointed at the wrong directory must not pass green, and no crate is passed over in silence.
#[test]
fn nothing_analysed_is_exit_2_and_every_skip_is_a_note() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    // A crate whose lock shows no kube-rs anywhere in its graph, and an integration test.
    write(
        &root.join("tool/Cargo.toml"),
        "[package]\nname = \"tool\"\nversion = \"0.1.0\"\n[dependencies]\nserde = \"1\"\n",
    );
    write(
        &root.join("tool/Cargo.lock"),
        "version = 4\n[[package]]\nname = \"tool\"\nversion = \"0.1.0\"\ndependencies = [\"serde\"]\n\n\
         [[package]]\nname = \"serde\"\nversion = \"1.0.0\"\n",
    );
    write(&root.join("tool/src/lib.rs"), "pub fn f() {}\n");
    write(&root.join("tool/tests/it.rs"), "#[test]\nfn t() {}\n");
    let tool = root.join("tool");
    let out_file = root.join("report.sarif");
    let o = run(&[
        "scan",
        tool.to_str().unwrap(),
        "-o",
        "json",
        "--output-file",
        &format!("sarif={}", out_file.display()),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    // An input error, like a missing path: no report to upload that would look like a clean run.
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    assert!(!out_file.exists());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("nothing analysed under"), "{stderr}");
    assert!(
        stderr.contains("no kube-rs in the dependency graph") && stderr.contains("tool"),
        "{stderr}"
    );
    assert!(stderr.contains("integration tests"), "{stderr}");

    // An empty directory, and one with Rust but no crate at all.
    let empty = root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = run(&["scan", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no Rust file"));

    // Beside a crate that is analysed, the skipped one is a note and the exit code is the findings'.
    copy_ca302_crate(&root.join("op"));
    let o = run(&["scan", root.to_str().unwrap(), "-o", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["findings"].as_array().unwrap().len(), 1);
    assert!(report["notes"].to_string().contains("1 crate"));
}

/// `exclude` leaves paths unread, `[[overrides]]` set levels per path under the flags, the configuration used
/// is named in a note, and `--statistics` counts instead of listing.
#[test]
fn exclude_overrides_config_note_and_statistics() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    for dir in ["op", "legacy/op", "gen/op"] {
        copy_ca302_crate(&root.join(dir));
    }
    write(
        &root.join("ctrlaudit.toml"),
        "exclude = [\"gen\"]\n\n[[overrides]]\nfiles = [\"legacy/**\"]\nrules = { unbounded-reconcile-concurrency = \"off\" }\n",
    );
    let findings_of = |args: &[&str]| {
        let mut all = vec!["scan", root.to_str().unwrap(), "-o", "json"];
        all.extend_from_slice(args);
        let o = run(&all);
        let report: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&o.stderr)));
        let files: Vec<String> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                f["subject"]["file"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        (files, report["notes"].to_string())
    };
    let (files, notes) = findings_of(&[]);
    assert_eq!(files.len(), 1, "{files:?} {notes}");
    assert!(
        files[0].contains("op/src/main.rs") && !files[0].contains("legacy"),
        "{files:?}"
    );
    assert!(
        notes.contains("configuration used") && notes.contains("ctrlaudit.toml"),
        "{notes}"
    );
    assert!(
        notes.contains("excluded by `exclude`") && notes.contains("gen"),
        "{notes}"
    );
    // The command line wins over an override; an excluded path stays unread whatever the levels.
    let (files, _) = findings_of(&["--deny", "CA302"]);
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.iter().any(|f| f.contains("legacy")), "{files:?}");
    assert!(!files.iter().any(|f| f.contains("gen/")), "{files:?}");

    let o = run(&["scan", root.to_str().unwrap(), "--statistics"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = stdout(&o);
    assert!(
        text.trim_start().starts_with("1  CA302")
            && text.contains("unbounded-reconcile-concurrency"),
        "{text}"
    );
    let o = run(&["scan", root.to_str().unwrap(), "--statistics", "-o", "json"]);
    let counts: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(counts[0]["code"], "CA302");
    assert_eq!(counts[0]["count"], 1);
    let o = run(&[
        "scan",
        root.to_str().unwrap(),
        "--statistics",
        "-o",
        "sarif",
    ]);
    assert_eq!(o.status.code(), Some(2));

    // A glob that is not one, and an override without files, are input errors before anything runs.
    for bad in [
        "exclude = [\"a[b\"]\n",
        "[[overrides]]\nrules = { CA302 = \"off\" }\n",
        "[[overrides]]\nfiles = [\"x\"]\nrules = { CA999 = \"off\" }\n",
    ] {
        write(&root.join("ctrlaudit.toml"), bad);
        let o = run(&["scan", root.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stdout(&o));
    }
}

/// `--new-from-rev` and `--new-from-merge-base` report only findings on lines changed since the revision
/// (uncommitted and untracked files included), on a real git repository.
#[test]
fn new_from_rev_reports_only_findings_on_changed_lines() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args([
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .output()
            .expect("git");
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    copy_ca302_crate(root);
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "old"]);
    git(&["checkout", "-qb", "feature"]);
    // The change: the success path now polls every 5 s (CA203 on the changed line); CA302 stays where it was.
    let main = root.join("src/main.rs");
    let text = std::fs::read_to_string(&main).unwrap();
    let changed = text.replacen(
        "Ok(Action::requeue(Duration::from_secs(300)))",
        "Ok(Action::requeue(Duration::from_secs(5)))",
        1,
    );
    assert_ne!(text, changed);
    write(&main, &changed);
    let codes = |args: &[&str]| -> (Vec<String>, String) {
        let mut all = vec!["scan", root.to_str().unwrap(), "-o", "json"];
        all.extend_from_slice(args);
        let o = run(&all);
        let report: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|_| panic!("{args:?}: {}", String::from_utf8_lossy(&o.stderr)));
        let mut codes: Vec<String> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["code"].as_str().unwrap().to_string())
            .collect();
        codes.sort();
        (codes, report["notes"].to_string())
    };
    assert_eq!(codes(&[]).0, ["CA203", "CA302"]);
    // Uncommitted: new since HEAD.
    let (found, notes) = codes(&["--new-from-rev", "HEAD"]);
    assert_eq!(found, ["CA203"], "{notes}");
    assert!(
        notes.contains("1 finding on lines not changed since HEAD"),
        "{notes}"
    );
    // Committed on the branch: new since the commit before, and since the merge base with main.
    git(&["commit", "-qam", "poll"]);
    assert_eq!(codes(&["--new-from-rev", "HEAD"]).0, Vec::<String>::new());
    assert_eq!(codes(&["--new-from-rev", "HEAD~1"]).0, ["CA203"]);
    let (found, notes) = codes(&["--new-from-merge-base", "main"]);
    assert_eq!(found, ["CA203"], "{notes}");
    assert!(notes.contains("merge base with main"), "{notes}");
    // An untracked file is new as a whole.
    git(&["checkout", "-q", "main"]);
    std::fs::remove_dir_all(root.join(".git")).unwrap();
    git(&["init", "-q"]);
    git(&["add", "Cargo.toml", "Cargo.lock"]);
    git(&["commit", "-qm", "manifests only"]);
    assert_eq!(codes(&["--new-from-rev", "HEAD"]).0, ["CA302"]);
    // A revision git does not know, or no repository at all, is an input error.
    let o = run(&[
        "scan",
        root.to_str().unwrap(),
        "--new-from-rev",
        "no-such-rev",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no-such-rev"));
    let plain = tempfile::tempdir().unwrap();
    copy_ca302_crate(plain.path());
    let o = run(&[
        "scan",
        plain.path().to_str().unwrap(),
        "--new-from-rev",
        "HEAD",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
}

/// Shell completions and man pages come from the clap definitions; the bash script completes a subcommand's
/// flags (run in bash as completion runs it); a mistyped rule gets a "did you mean".
#[test]
fn completions_man_pages_and_did_you_mean() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let o = run(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let script = stdout(&o);
        assert!(
            script.contains("kubectl-ctrlaudit") && script.contains("new-from-rev"),
            "{shell}"
        );
    }
    let d = tempfile::tempdir().unwrap();
    let script = d.path().join("complete.bash");
    std::fs::write(&script, run(&["completions", "bash"]).stdout).unwrap();
    let complete = |words: &str| {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _kubectl__ctrlaudit kubectl-ctrlaudit \"${{COMP_WORDS[-1]}}\" \"${{COMP_WORDS[-2]}}\"; \
             echo \"${{COMPREPLY[*]}}\"",
            script.display()
        );
        let o = Command::new("bash")
            .args(["-c", &program])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(complete("kubectl-ctrlaudit sc"), "scan");
    assert_eq!(
        complete("kubectl-ctrlaudit scan --new-from"),
        "--new-from-rev --new-from-merge-base"
    );

    let top = stdout(&run(&["man"]));
    assert!(
        top.contains(".TH kubectl-ctrlaudit 1") && top.contains("scan"),
        "{top}"
    );
    let scan = stdout(&run(&["man", "scan"]));
    assert!(
        scan.contains(".TH kubectl-ctrlaudit-scan 1") && scan.contains("new\\-from\\-rev"),
        "{scan}"
    );
    assert_ne!(run(&["man", "nope"]).status.code(), Some(0));

    let o = run(&["rules", "CA2O3"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did you mean `CA203`"));
    let o = run(&["scan", ".", "--allow", "polling-requeu"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did you mean `polling-requeue`"));
    // Nothing close: no guess.
    let o = run(&["rules", "zzzz"]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("did you mean"));
}

#[test]
fn help_fits_the_terminal_width_it_is_given() {
    // clap wraps at $COLUMNS (wrap_help): no line of any command's help may run past it, at the width of a split
    // terminal and at 112.
    let commands: &[&[&str]] = &[
        &[],
        &["scan"],
        &["live"],
        &["bench"],
        &["demo"],
        &["rules"],
        &["completions"],
        &["man"],
    ];
    for width in [80usize, 112] {
        for c in commands {
            let o = bin()
                .args(*c)
                .arg("--help")
                .env("COLUMNS", width.to_string())
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(0), "{c:?}");
            for line in stdout(&o).lines() {
                assert!(
                    line.chars().count() <= width,
                    "{c:?} --help at {width} columns: {line:?}"
                );
            }
        }
    }
}

#[test]
fn full_output_columns_are_the_one_based_columns_of_json() {
    let dir = "fixtures/scan/CA203-polling-requeue/bad_requeue_secs_in_bare_consts_file";
    let full = stdout(&run(&["scan", dir, "-o", "full", "--fail-on", "never"]));
    let json: serde_json::Value = serde_json::from_str(&stdout(&run(&[
        "scan",
        dir,
        "-o",
        "json",
        "--fail-on",
        "never",
    ])))
    .unwrap();
    let f = &json["findings"][0];
    let (line, column) = (&f["subject"]["line"], &f["subject"]["column"]);
    assert!(
        full.contains(&format!("controller.rs:{line}:{column}\n")),
        "{full}\n{f}"
    );
    // 1-based: the caret line starts under the column's character.
    let source = std::fs::read_to_string(format!("{dir}/src/controller.rs")).unwrap();
    let text = source
        .lines()
        .nth(line.as_u64().unwrap() as usize - 1)
        .unwrap();
    let col = column.as_u64().unwrap() as usize;
    assert!(text[col - 1..].starts_with("Action::requeue"), "{text}");
}

#[test]
fn kubectl_plugin_completion_runs_through_the_completer_link() {
    // install.sh links kubectl_complete-ctrlaudit to the binary; kubectl ≥ 1.26 runs it with the words after
    // `ctrlaudit` and reads cobra's format (candidates, then `:directive`).
    let dir = tempfile::tempdir().unwrap();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"));
    // A link, not a copy: a copy is a file this process opened for writing, and a child another test forks
    // meanwhile holds that descriptor until it execs, so running the copy can fail with "Text file busy".
    std::os::unix::fs::symlink(bin, dir.path().join("kubectl-ctrlaudit")).unwrap();
    std::os::unix::fs::symlink(
        "kubectl-ctrlaudit",
        dir.path().join("kubectl_complete-ctrlaudit"),
    )
    .unwrap();
    let o = Command::new(dir.path().join("kubectl_complete-ctrlaudit"))
        .args(["scan", "--fail"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "--fail-on\tExit 1 when a finding is at or above this severity\n:4\n"
    );
    // Through kubectl itself when it is installed (testenv's machine has it; the answer is the same).
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    match Command::new("kubectl")
        .args(["__complete", "ctrlaudit", "scan", "-o", "sa"])
        .env("PATH", &path)
        .output()
    {
        Ok(o) => assert_eq!(
            stdout(&o).lines().next(),
            Some("sarif\tSARIF 2.1.0 for GitHub code scanning and other SARIF viewers"),
            "{}{}",
            stdout(&o),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => eprintln!("kubectl not on PATH ({e}): the completer was checked directly only"),
    }
}
