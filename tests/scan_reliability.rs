//! Inputs built to stall, crash, exhaust or silence `scan` (issue 22): every recursion kind far past where syn
//! used to overflow, chains of 100,000 calls, YAML nested 200,000 deep, FIFOs, a sparse gigabyte, a symlink to
//! `/dev/zero`, a comment full of brackets. Each must end as CA001 for that file (or a note), with the findings of
//! every other file intact. The binary runs as a child with a generous deadline, so a regression fails the test
//! instead of hanging the suite; no timing is asserted.
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Long enough for a debug build on a loaded 2-core machine; a hang or a quadratic blow-up goes far past it.
const DEADLINE: Duration = Duration::from_secs(240);

const CONTROLLER: &str = include_str!(
    "../fixtures/scan/CA202-volatile-value-written-every-reconcile/bad_annotation_timestamp.rs"
);

/// Runs `kubectl-ctrlaudit scan ARGS..` and kills it (failing the test) at the deadline.
fn scan(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
        .arg("scan")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    // Drain the pipes on threads: a report larger than the pipe buffer must not block the child.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut b).unwrap();
        b
    });
    let err_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut b).unwrap();
        b
    });
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Output {
                status,
                stdout: out_t.join().unwrap(),
                stderr: err_t.join().unwrap(),
            };
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("scan {args:?} did not end within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}); exit {:?}; stderr: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// (code, file name) of every finding.
fn findings(v: &serde_json::Value) -> Vec<(String, String)> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let file = f["subject"]["file"].as_str().unwrap_or("");
            let name = Path::new(file)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (f["code"].as_str().unwrap().to_string(), name)
        })
        .collect()
}

/// A crate that depends on kube, with the CA202 controller in `src/controller.rs`.
fn crate_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"op\"\nversion = \"0.1.0\"\n\n[dependencies]\nkube = \"1\"\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/controller.rs"), CONTROLLER).unwrap();
    dir
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(ok.success(), "mkfifo {}", path.display());
}

/// Each kind of nesting that syn follows by recursion, `n` levels deep, as a whole file.
fn nested(n: usize) -> Vec<(&'static str, String)> {
    let expr = |body: String| format!("use kube::Api;\nfn f() {{\n    let x = {body};\n}}\n");
    vec![
        (
            "generics",
            format!(
                "use kube::Api;\ntype T = {}u8{};\n",
                "Vec<".repeat(n),
                ">".repeat(n)
            ),
        ),
        ("closures", expr(format!("{}0", "|a| ".repeat(n)))),
        (
            "refs",
            format!("use kube::Api;\ntype T = {}u8;\n", "&".repeat(n)),
        ),
        ("not", expr(format!("{}x", "!".repeat(n)))),
        ("casts", expr(format!("x{}", " as u8".repeat(n)))),
        ("fields", expr(format!("x{}", ".a".repeat(n)))),
        ("calls", expr(format!("x{}", ".a()".repeat(n)))),
        ("plus", expr(format!("x{}", " + x".repeat(n)))),
        ("try", expr(format!("x{}", "?".repeat(n)))),
        (
            "brackets",
            expr(format!("{}1{}", "(".repeat(n), ")".repeat(n))),
        ),
    ]
}

#[test]
fn every_recursion_kind_far_past_the_crash_depth_is_ca001_and_the_rest_is_scanned() {
    let dir = crate_dir();
    // 10x the depths that aborted the process (generics 9,300, closures 16,000) and beyond for the others.
    for (kind, text) in nested(160_000) {
        std::fs::write(dir.path().join(format!("src/deep_{kind}.rs")), text).unwrap();
    }
    let o = scan(&[dir.path().to_str().unwrap(), "-o", "json"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let found = findings(&json(&o));
    for (kind, _) in nested(1) {
        let name = format!("deep_{kind}.rs");
        assert!(
            found.iter().any(|(c, f)| c == "CA001" && *f == name),
            "no CA001 for {name}: {found:?}"
        );
    }
    assert!(
        found
            .iter()
            .any(|(c, f)| c == "CA202" && f == "controller.rs"),
        "the controller's finding is missing: {found:?}"
    );
}

#[test]
fn nesting_just_under_the_budget_is_parsed_and_judged() {
    // Every kind at the depth the budget still accepts is parsed and walked without overflowing: the budget
    // is what keeps the stack safe, so it must hold at its own edge (a debug build has the largest frames).
    let dir = crate_dir();
    for (kind, text) in nested(700) {
        std::fs::write(dir.path().join(format!("src/edge_{kind}.rs")), text).unwrap();
    }
    let o = scan(&[dir.path().to_str().unwrap(), "-o", "json"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let found = findings(&json(&o));
    let deep: Vec<_> = found
        .iter()
        .filter(|(c, f)| c == "CA001" && f.starts_with("edge_") && !f.contains("brackets"))
        .collect();
    assert!(deep.is_empty(), "rejected under the budget: {deep:?}");
    assert!(found.iter().any(|(c, _)| c == "CA202"), "{found:?}");
}

#[test]
fn one_deep_item_is_set_aside_and_the_rest_of_its_file_is_judged() {
    let dir = crate_dir();
    // The controller with one poisonous function appended: its CA202 must survive, next to the CA001.
    let text = format!(
        "{CONTROLLER}\nfn poison() {{ let x = {}0; }}\n",
        "|a| ".repeat(50_000)
    );
    std::fs::write(dir.path().join("src/controller.rs"), text).unwrap();
    let o = scan(&[dir.path().to_str().unwrap(), "-o", "json"]);
    let v = json(&o);
    let found = findings(&v);
    assert!(
        found.contains(&("CA202".into(), "controller.rs".into())),
        "{found:?}"
    );
    let ca001 = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "CA001")
        .expect("a CA001 for the deep item");
    let message = ca001["message"].as_str().unwrap();
    assert!(
        message.contains("the rest of the file was analysed"),
        "{message}"
    );
}

#[test]
fn brackets_in_comments_and_strings_hide_no_finding() {
    let dir = crate_dir();
    let opens = "(".repeat(300);
    let text = format!(
        "{CONTROLLER}\n// {opens}\n/* {{{{{{{{{{ {opens} */\nconst NOISE: &str = \"{opens}\";\nconst RAW: &str = r#\"[[[[{opens}\"#;\nconst C: char = '(';\n"
    );
    std::fs::write(dir.path().join("src/controller.rs"), text).unwrap();
    let o = scan(&[
        dir.path().to_str().unwrap(),
        "-o",
        "json",
        "--fail-on",
        "error",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "an error finding must fail the gate: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let found = findings(&json(&o));
    assert!(
        found.contains(&("CA202".into(), "controller.rs".into())),
        "{found:?}"
    );
    assert!(!found.iter().any(|(c, _)| c == "CA001"), "{found:?}");
}

#[test]
fn a_hundred_thousand_call_chain_and_deep_yaml_end_as_ca001() {
    let dir = crate_dir();
    std::fs::write(
        dir.path().join("src/chain.rs"),
        format!(
            "use kube::Api;\nfn f(x: X) {{ x{}; }}\n",
            ".a()".repeat(100_000)
        ),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("crds")).unwrap();
    std::fs::write(
        dir.path().join("crds/deep.yaml"),
        format!(
            "kind: CustomResourceDefinition\nspec: {}1{}\n",
            "[".repeat(200_000),
            "]".repeat(200_000)
        ),
    )
    .unwrap();
    let o = scan(&[dir.path().to_str().unwrap(), "-o", "json"]);
    let found = findings(&json(&o));
    for name in ["chain.rs", "deep.yaml"] {
        assert!(
            found.contains(&("CA001".into(), name.into())),
            "no CA001 for {name}: {found:?}"
        );
    }
    assert!(found.iter().any(|(c, _)| c == "CA202"), "{found:?}");
}

#[test]
fn fifos_devices_and_sparse_gigabytes_are_never_read() {
    let dir = crate_dir();
    let src = dir.path().join("src");
    // Nothing ever writes to these FIFOs: opening one to read would block the scan forever.
    mkfifo(&src.join("fifo.rs"));
    mkfifo(&dir.path().join("Cargo.lock"));
    mkfifo(&dir.path().join("crd.yaml"));
    std::os::unix::fs::symlink("/dev/zero", src.join("zero.rs")).unwrap();
    let sparse = std::fs::File::create(src.join("sparse.rs")).unwrap();
    sparse.set_len(1 << 30).unwrap();
    drop(sparse);
    for output in ["json", "full"] {
        let o = scan(&[dir.path().to_str().unwrap(), "-o", output]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "-o {output}: stderr: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        if output == "json" {
            let v = json(&o);
            let found = findings(&v);
            assert!(
                found.contains(&("CA001".into(), "sparse.rs".into())),
                "{found:?}"
            );
            assert!(found.iter().any(|(c, _)| c == "CA202"), "{found:?}");
            let notes = v["notes"].to_string();
            for name in ["fifo.rs", "zero.rs"] {
                assert!(notes.contains(name), "no note for {name}: {notes}");
            }
        }
    }
}

#[test]
fn a_tree_of_every_pathology_together_ends_with_the_right_findings() {
    // The benchmark's corpus in small: all of the above in one tree, scanned with every output at once.
    let dir = crate_dir();
    let src = dir.path().join("src");
    for (kind, text) in nested(20_000) {
        std::fs::write(src.join(format!("deep_{kind}.rs")), text).unwrap();
    }
    mkfifo(&src.join("fifo.rs"));
    let out = dir.path().join("report.sarif");
    let o = scan(&[
        dir.path().to_str().unwrap(),
        "-o",
        "full",
        "--output-file",
        &format!("sarif={}", out.display()),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let sarif = std::fs::read_to_string(&out).unwrap();
    assert!(sarif.contains("CA202") && sarif.contains("CA001"));
}

#[test]
fn a_file_over_its_time_budget_is_stopped_and_reported() {
    // A budget of zero seconds: whatever the machine's speed, the walk of the controller stops at its first
    // check, and the file is CA001 "over budget" instead of a half-built model's findings.
    let dir = crate_dir();
    let config = dir.path().join("ctrlaudit.toml");
    std::fs::write(&config, "[thresholds]\nmax_file_seconds = 0\n").unwrap();
    let o = scan(&[
        dir.path().to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "-o",
        "json",
    ]);
    let v = json(&o);
    let found = findings(&v);
    assert_eq!(
        found,
        vec![("CA001".to_string(), "controller.rs".to_string())],
        "{v}"
    );
    assert!(
        v["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("over budget")
    );
}

#[test]
fn an_item_syn_rejects_is_set_aside_and_the_rest_of_its_file_is_judged() {
    let text = format!("{CONTROLLER}\nfn half_written() {{ let = ; }}\n");
    let config = ctrlaudit::config::Config::default();
    let found = ctrlaudit::scan::scan_source("src/controller.rs", &text, &config);
    let codes: Vec<&str> = found.iter().map(|f| f.code.as_str()).collect();
    assert!(codes.contains(&"CA202"), "{codes:?}");
    let ca001 = found.iter().find(|f| f.code == "CA001").expect("a CA001");
    assert!(
        ca001.message.contains("syn cannot parse this item") && ca001.message.contains("line"),
        "{}",
        ca001.message
    );
    // The whole file is one finding when nothing of it parses, and a merge conflict is named as such.
    let conflict = format!("{CONTROLLER}\n<<<<<<< HEAD\nfn a() {{}}\n=======\n");
    let found = ctrlaudit::scan::scan_source("src/controller.rs", &conflict, &config);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("merge conflict"));
}
