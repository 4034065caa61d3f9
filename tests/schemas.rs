//! The published JSON schemas (`schemas/`): generated from the code, so a change to `-o json` or to
//! `ctrlaudit.toml` that is not in them fails here; and checked against what they describe: real `-o json` output
//! of scan and live, and `ctrlaudit.toml` files that the tool accepts or refuses.
#![allow(clippy::unwrap_used)]

use ctrlaudit::report::schema::{self, PUBLISHED};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const UPDATE: &str = "UPDATE_SCHEMAS";

#[test]
fn published_schemas_are_the_generated_ones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let update = std::env::var_os(UPDATE).is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for published in PUBLISHED {
        let want = schema::to_file_text(&(published.generate)()).unwrap();
        let file = root.join(published.path);
        let have = std::fs::read_to_string(&file).unwrap_or_default();
        if have == want {
            continue;
        }
        if update {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, &want).unwrap();
        } else {
            stale.push(published.path);
        }
    }
    assert!(
        stale.is_empty(),
        "not what the code generates: {}; regenerate with\n\n    {UPDATE}=1 cargo test --test schemas published\n",
        stale.join(", ")
    );
}

fn validator(path: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn errors(v: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    v.iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// `kubectl-ctrlaudit ARGS`' stdout as JSON, with its exit code.
fn run_json(args: &[&str]) -> (Option<i32>, Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"))
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}):\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code(), v)
}

#[test]
fn scan_json_matches_the_published_schema() {
    let v = validator("schemas/report.schema.json");
    // Findings with evidence (related places, values, call paths), skip notes (an unparsable file), a suppression.
    for target in [
        "fixtures/scan/CA203-polling-requeue",
        "fixtures/scan/CA001-unparsable-source",
        "fixtures/scan/CA002-unused-suppression",
        "fixtures/scan/CA305-blocking-call-in-async-reconcile",
    ] {
        let (code, doc) = run_json(&["scan", target, "-o", "json"]);
        assert!(matches!(code, Some(0 | 1)), "{target}: exit {code:?}");
        assert!(
            !doc["findings"].as_array().unwrap().is_empty(),
            "{target} has findings to check"
        );
        let errs = errors(&v, &doc);
        assert!(errs.is_empty(), "{target}:\n{}\n{doc:#}", errs.join("\n"));
        // Stats are numbers under snake_case keys, the time in seconds.
        let stats = doc["stats"].as_object().unwrap();
        for key in [
            "rust_files",
            "lines",
            "parsed",
            "crates",
            "dependencies_read",
        ] {
            assert!(stats[key].is_u64(), "{key}: {}", stats[key]);
        }
        assert!(stats["seconds"].is_f64(), "{}", stats["seconds"]);
        assert!(stats.values().all(Value::is_number), "{stats:?}");
    }
}

#[test]
fn live_json_matches_the_published_schema() {
    let v = validator("schemas/report.schema.json");
    for fixture in ["annotation-loop", "conflicts", "good"] {
        let dir = format!("{}/fixtures/live/{fixture}", env!("CARGO_MANIFEST_DIR"));
        let (_, doc) = run_json(&["live", "--replay", &dir, "-o", "json"]);
        let errs = errors(&v, &doc);
        assert!(errs.is_empty(), "{fixture}:\n{}\n{doc:#}", errs.join("\n"));
        assert!(doc["stats"]["objects"].is_u64(), "{}", doc["stats"]);
        assert!(doc["stats"]["scope"].is_string(), "{}", doc["stats"]);
    }
}

#[test]
fn the_report_schema_rejects_what_is_not_a_report() {
    let v = validator("schemas/report.schema.json");
    let (_, doc) = run_json(&["scan", "fixtures/scan/CA203-polling-requeue", "-o", "json"]);
    assert!(errors(&v, &doc).is_empty());
    type Mutation = fn(&mut Value);
    let mutations: [(&str, Mutation); 5] = [
        ("unknown severity", |d| {
            d["findings"][0]["severity"] = json!("fatal")
        }),
        ("line as text", |d| {
            d["findings"][0]["subject"]["line"] = json!("12")
        }),
        ("unknown subject type", |d| {
            d["findings"][0]["subject"]["type"] = json!("file")
        }),
        ("summary without errors", |d| {
            d["summary"].as_object_mut().unwrap().remove("error");
        }),
        ("a stat that is an object", |d| {
            d["stats"]["seconds"] = json!({})
        }),
    ];
    for (what, mutate) in mutations {
        let mut bad = doc.clone();
        mutate(&mut bad);
        assert!(!errors(&v, &bad).is_empty(), "the schema accepts {what}");
    }
}

/// `ctrlaudit.toml` text as the JSON a schema validates.
fn toml_json(text: &str) -> Value {
    let t: toml::Table = toml::from_str(text).unwrap();
    serde_json::to_value(t).unwrap()
}

#[test]
fn the_config_schema_agrees_with_the_config_parser() {
    let v = validator("schemas/ctrlaudit.toml.schema.json");
    let accepted = [
        "",
        "[rules]\nCA203 = \"error\"\nca304 = \"off\"\npolling-requeue = \"info\"\n",
        "[thresholds]\npolling_requeue_secs = 10\nconflict_share = 0.1\nmax_file_bytes = 1000000\n",
        "[aliases]\n\"my::apply_status\" = \"patch_status\"\n",
        "[metrics]\nreconcile_total = \"doc_controller_reconciliations_total\"\nresult_label = \"outcome\"\n",
        "exclude = [\"gen/**\", \"vendor\"]\n[[overrides]]\nfiles = [\"legacy/**\"]\nrules = { CA203 = \"off\", polling-requeue = \"info\" }\n",
        "[live]\nexclude_namespaces = [\"kube-*\"]\nexclude_field_managers = [\"helm\"]\nexclude_kinds = [\"Secret\"]\n",
    ];
    for text in accepted {
        ctrlaudit::config::Config::parse(text, Path::new("ctrlaudit.toml"))
            .unwrap_or_else(|e| panic!("the tool refuses {text:?}: {e}"));
        let errs = errors(&v, &toml_json(text));
        assert!(errs.is_empty(), "the schema refuses {text:?}: {errs:?}");
    }
    let refused = [
        "[rules]\nCA203 = \"loud\"\n",
        "[thresholds]\nnope = 1\n",
        "[thresholds]\npolling_requeue_secs = \"10s\"\n",
        "[metrics]\nreconciles = \"x\"\n",
        "[rule]\nCA203 = \"off\"\n",
        "[aliases]\nwrap = 3\n",
        "exclude = \"gen\"\n",
        "[[overrides]]\nrules = { CA203 = \"off\" }\n",
        "[[overrides]]\nfiles = [\"x\"]\nlevel = \"off\"\n",
        "[live]\nexclude_namespace = [\"kube-system\"]\n",
        "[live]\nexclude_kinds = \"Secret\"\n",
    ];
    for text in refused {
        assert!(
            ctrlaudit::config::Config::parse(text, Path::new("ctrlaudit.toml")).is_err(),
            "the tool accepts {text:?}"
        );
        assert!(
            !errors(&v, &toml_json(text)).is_empty(),
            "the schema accepts {text:?}"
        );
    }
}
