//! Every output format over one fixed set of findings (a source span, an object, a controller; each severity):
//! deterministic output, escaping, JUnit well-formedness and its agreement with `--fail-on`, SARIF validity against
//! the official 2.1.0 schema (suppressed findings included), and GitLab Code Quality's shape.

use ctrlaudit::finding::{
    Evidence, Finding, Lens, Severity, Span, Subject, Suppressed, When, WhenKind, sort_findings,
};
use ctrlaudit::report::{FailOn, Format, Note, Report, render};
use ctrlaudit::rules::{REPOSITORY_URL, RULES};
use serde_json::Value;

const TRICKY: &str = r#"annotation "example.com/last-sync" set to <now> & 100%, every: reconcile"#;

fn source_finding() -> Finding {
    Finding {
        code: "CA202".into(),
        severity: Severity::Error,
        lens: Lens::Scan,
        message: TRICKY.into(),
        subject: Subject::Source(Span {
            file: "./src/controller/reconcile.rs".into(),
            line: 12,
            column: 5,
            end_line: 12,
            end_column: 40,
        }),
        evidence: vec![
            Evidence::Related {
                span: Span {
                    file: "src/main.rs".into(),
                    line: 80,
                    column: 5,
                    end_line: 82,
                    end_column: 18,
                },
                note: "the Controller that watches the object it writes".into(),
            },
            Evidence::CallPath {
                functions: vec!["reconcile".into(), "stamp".into()],
            },
        ],
        help: "write the timestamp to status only when something changed".into(),
        objects: Vec::new(),
        when: Some(When {
            path: WhenKind::Branch,
            condition: Some("w.spec.audit".into()),
        }),
    }
}

fn object_finding() -> Finding {
    Finding {
        code: "CA102".into(),
        severity: Severity::Warning,
        lens: Lens::Live,
        message: "generation 7 ahead of status.observedGeneration 5 for 300 s".into(),
        subject: Subject::Object {
            group: "example.com".into(),
            kind: "Widget".into(),
            namespace: Some("default".into()),
            name: "w1".into(),
        },
        evidence: vec![Evidence::Value {
            name: "lag".into(),
            value: 300.0,
            unit: "s".into(),
        }],
        help: "update status.observedGeneration when the spec has been handled".into(),
        objects: Vec::new(),
        when: None,
    }
}

fn controller_finding() -> Finding {
    Finding {
        code: "CA403".into(),
        severity: Severity::Info,
        lens: Lens::Live,
        message: "21.5 writes/s, 90% of the measured ceiling".into(),
        subject: Subject::Controller {
            manager: Some("widget-controller".into()),
            user: Some("system:serviceaccount:ops:widget".into()),
            user_agent: None,
            actor: None,
        },
        evidence: vec![Evidence::Sample {
            metric: "apiserver_request_total".into(),
            labels: vec![("verb".into(), "PATCH".into())],
            value: 1234.0,
            timestamp_ms: 1_700_000_000_000,
        }],
        help: "batch writes or skip writes that change nothing".into(),
        objects: Vec::new(),
        when: None,
    }
}

fn findings() -> Vec<Finding> {
    let mut v = vec![controller_finding(), object_finding(), source_finding()];
    sort_findings(&mut v);
    v
}

fn notes() -> Vec<Note> {
    vec![Note {
        subject: "src/gen/huge.rs".into(),
        message: "larger than 2 MiB".into(),
    }]
}

fn stats() -> Vec<(String, String)> {
    vec![
        ("files scanned".into(), "42".into()),
        ("files parsed".into(), "7".into()),
        ("duration".into(), "0.12s".into()),
    ]
}

/// Renders under `--fail-on info`, where every finding fails JUnit (the tests of the threshold use
/// [`render_failing_on`]).
fn render_all(format: Format, command: &str, findings: &[Finding], notes: &[Note]) -> String {
    render_failing_on(format, command, findings, notes, FailOn::Info)
}

fn render_failing_on(
    format: Format,
    command: &str,
    findings: &[Finding],
    notes: &[Note],
    fail_on: FailOn,
) -> String {
    let stats = stats();
    let report = Report {
        fail_on,
        ..Report::new(command, findings, notes, &stats)
    };
    let first = render(format, &report).expect("renders");
    let second = render(format, &report).expect("renders");
    assert_eq!(first, second, "{format} output is deterministic");
    first
}

fn parse_json(s: &str) -> Value {
    serde_json::from_str(s).expect("valid json")
}

// ---------------------------------------------------------------- table

#[test]
fn table_lists_findings_notes_summary_and_stats() {
    let out = render_all(Format::Table, "scan", &findings(), &notes());
    for want in [
        "location",
        "severity",
        "src/controller/reconcile.rs:12:5",
        "CA202",
        "Widget.example.com default/w1",
        "manager=widget-controller",
        // The message column wraps at the fixed width of 120.
        "help: write the timestamp to status only when something",
        "↳ src/main.rs:80:5: the Controller that watches the",
        "↳ via reconcile → stamp",
        "skipped: src/gen/huge.rs — larger than 2 MiB",
        "3 findings (1 error, 1 warning, 1 info)",
        "files scanned: 42, files parsed: 7, duration: 0.12s",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    assert!(!out.contains('\x1b'), "no color unless asked:\n{out}");
    for line in out.lines() {
        assert!(line.chars().count() <= 120, "wider than 120: {line:?}");
    }
    // The summary comes after the table and the notes.
    let table_end = out.rfind('└').expect("table border");
    let note = out.find("skipped:").expect("note");
    let summary = out.find("3 findings").expect("summary");
    assert!(table_end < note && note < summary, "{out}");
}

#[test]
fn table_without_findings() {
    let out = render_all(Format::Table, "scan", &[], &[]);
    assert_eq!(
        out,
        "no findings\nfiles scanned: 42, files parsed: 7, duration: 0.12s\n"
    );
}

#[test]
fn table_colors_by_severity_when_asked() {
    let fs = findings();
    let report = Report {
        color: true,
        ..Report::new("scan", &fs, &[], &[])
    };
    let out = render(Format::Table, &report).expect("renders");
    assert!(out.contains('\x1b'), "{out}");
}

// ---------------------------------------------------------------- json

#[test]
fn json_document() {
    let out = render_all(Format::Json, "scan", &findings(), &notes());
    let v = parse_json(&out);
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["command"], "scan");
    let fs = v["findings"].as_array().expect("findings array");
    assert_eq!(fs.len(), 3);
    // The order given (sorted by subject) is kept.
    assert_eq!(fs[0]["code"], "CA202");
    assert_eq!(fs[0]["subject"]["type"], "source");
    assert_eq!(fs[0]["subject"]["line"], 12);
    assert_eq!(fs[0]["message"], TRICKY);
    assert_eq!(fs[1]["subject"]["type"], "object");
    assert_eq!(fs[2]["subject"]["type"], "controller");
    assert_eq!(fs[2]["severity"], "info");
    assert_eq!(v["notes"][0]["subject"], "src/gen/huge.rs");
    assert_eq!(
        v["summary"],
        serde_json::json!({"error": 1, "warning": 1, "info": 1})
    );
    // Stats are numbers under snake_case keys (the text formats keep "files scanned: 42", "duration: 0.12s").
    assert_eq!(
        v["stats"],
        serde_json::json!({"files_scanned": 42, "files_parsed": 7, "seconds": 0.12})
    );
    // Stats keep the caller's order.
    let scanned = out.find("\"files_scanned\"").expect("stat");
    let duration = out.find("\"seconds\"").expect("stat");
    assert!(scanned < duration);
    // Findings round-trip.
    let back: Vec<Finding> = serde_json::from_value(v["findings"].clone()).expect("findings parse");
    assert_eq!(back, findings());
    assert!(out.ends_with("}\n"));
}

// ---------------------------------------------------------------- sarif

fn sarif_validator() -> jsonschema::Validator {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/sarif/sarif-schema-2.1.0.json"
    );
    let text = std::fs::read_to_string(path).expect("read the SARIF schema");
    let schema: Value = serde_json::from_str(&text).expect("schema is json");
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the SARIF 2.1.0 schema compiles offline")
}

fn assert_valid_sarif(out: &str) -> Value {
    let instance = parse_json(out);
    let validator = sarif_validator();
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "SARIF does not validate against the 2.1.0 schema:\n{}\n\n{out}",
        errors.join("\n")
    );
    instance
}

#[test]
fn sarif_validates_against_the_official_schema() {
    for command in ["scan", "live"] {
        let out = render_all(Format::Sarif, command, &findings(), &notes());
        assert_valid_sarif(&out);
        let empty = render_all(Format::Sarif, command, &[], &[]);
        assert_valid_sarif(&empty);
    }
}

#[test]
fn the_schema_catches_mistakes() {
    // Guard against a validator that accepts anything.
    let out = render_all(Format::Sarif, "scan", &findings(), &[]);
    let mut v = parse_json(&out);
    v["runs"][0]["results"][0]["level"] = Value::String("fatal".into());
    v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        Value::from(0);
    let validator = sarif_validator();
    assert!(validator.iter_errors(&v).count() >= 2);
}

#[test]
fn sarif_tool_and_rules() {
    let v = assert_valid_sarif(&render_all(Format::Sarif, "scan", &findings(), &notes()));
    assert_eq!(
        v["$schema"],
        "https://json.schemastore.org/sarif-2.1.0.json"
    );
    assert_eq!(v["version"], "2.1.0");
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1);
    let driver = &runs[0]["tool"]["driver"];
    assert_eq!(driver["name"], "kubectl-ctrlaudit");
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(driver["informationUri"], REPOSITORY_URL);
    let rules = driver["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), RULES.len(), "every rule of the registry");
    for (r, rule) in rules.iter().zip(RULES) {
        assert_eq!(r["id"], rule.code);
        assert_eq!(r["name"], rule.name);
        assert_eq!(r["shortDescription"]["text"], rule.summary);
        assert!(r["fullDescription"]["text"].as_str().is_some());
        assert!(r["help"]["text"].as_str().is_some_and(|t| !t.is_empty()));
        if !rule.doc().trim().is_empty() {
            assert_eq!(r["help"]["markdown"], rule.doc().trim());
        }
        assert_eq!(r["helpUri"], rule.help_uri());
        let level = match rule.default_severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "note",
        };
        assert_eq!(r["defaultConfiguration"]["level"], level);
        let tags: Vec<&str> = rule.lenses.iter().map(|l| l.as_str()).collect();
        assert_eq!(r["properties"]["tags"], serde_json::json!(tags));
    }
    // The run's stats are those of `-o json`: numbers.
    assert_eq!(
        runs[0]["properties"]["stats"],
        serde_json::json!({"files_scanned": 42, "files_parsed": 7, "seconds": 0.12})
    );
    let inv = &runs[0]["invocations"][0];
    assert_eq!(inv["executionSuccessful"], true);
    assert_eq!(inv["toolExecutionNotifications"][0]["level"], "note");
    assert!(
        inv["toolExecutionNotifications"][0]["message"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("src/gen/huge.rs") && t.contains("larger than 2 MiB"))
    );
}

#[test]
fn sarif_results() {
    let fs = findings();
    let v = assert_valid_sarif(&render_all(Format::Sarif, "scan", &fs, &[]));
    let results = v["runs"][0]["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);

    // Source: physical location, relative URI, 1-based region, related evidence.
    let src = &results[0];
    assert_eq!(src["ruleId"], "CA202");
    let idx = RULES.iter().position(|r| r.code == "CA202").expect("rule");
    assert_eq!(src["ruleIndex"], idx);
    assert_eq!(src["level"], "error");
    assert_eq!(src["message"]["text"], TRICKY);
    let phys = &src["locations"][0]["physicalLocation"];
    assert_eq!(
        phys["artifactLocation"]["uri"],
        "src/controller/reconcile.rs"
    );
    assert_eq!(phys["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    assert_eq!(
        phys["region"],
        serde_json::json!({"startLine": 12, "startColumn": 5, "endLine": 12, "endColumn": 40})
    );
    assert_eq!(
        src["partialFingerprints"]["ctrlaudit/v1"],
        fs[0].fingerprint()
    );
    let related = &src["relatedLocations"][0];
    assert_eq!(related["id"], 0);
    assert_eq!(
        related["physicalLocation"]["artifactLocation"]["uri"],
        "src/main.rs"
    );
    assert_eq!(related["physicalLocation"]["region"]["startLine"], 80);
    assert_eq!(
        related["message"]["text"],
        "the Controller that watches the object it writes"
    );

    // The path it happens on, for a scan finding; none for a live one.
    assert_eq!(src["properties"]["when"], "branch");
    assert_eq!(src["properties"]["whenCondition"], "w.spec.audit");

    // Object: logical location.
    let obj = &results[1];
    assert!(obj["properties"].get("when").is_none());
    assert_eq!(obj["level"], "warning");
    assert!(obj["locations"][0].get("physicalLocation").is_none());
    assert_eq!(
        obj["locations"][0]["logicalLocations"][0],
        serde_json::json!({
            "name": "w1",
            "fullyQualifiedName": "Widget.example.com/default/w1",
            "kind": "object"
        })
    );

    // Controller: logical location of kind module; info is a note.
    let ctl = &results[2];
    assert_eq!(ctl["level"], "note");
    let logical = &ctl["locations"][0]["logicalLocations"][0];
    assert_eq!(logical["name"], "widget-controller");
    assert_eq!(logical["kind"], "module");
    assert_eq!(
        logical["fullyQualifiedName"],
        "manager=widget-controller user=system:serviceaccount:ops:widget"
    );
    assert_eq!(
        ctl["partialFingerprints"]["ctrlaudit/v1"],
        fs[2].fingerprint()
    );
}

fn suppressed() -> Vec<Suppressed> {
    let mut f = source_finding();
    f.code = "CA203".into();
    f.severity = Severity::Warning;
    f.message = "reconcile requeues after 15s on success".into();
    if let Subject::Source(s) = &mut f.subject {
        s.line = 45;
    }
    vec![Suppressed {
        finding: f,
        reason: "vendor quota API cannot be watched".into(),
        comment: Span {
            file: "./src/controller/reconcile.rs".into(),
            line: 45,
            column: 50,
            end_line: 45,
            end_column: 120,
        },
    }]
}

fn render_with_suppressed(format: Format, fs: &[Finding], sup: &[Suppressed]) -> String {
    let report = Report {
        suppressed: sup,
        ..Report::new("scan", fs, &[], &[])
    };
    render(format, &report).expect("renders")
}

#[test]
fn sarif_keeps_suppressed_findings_with_the_reason() {
    let fs = findings();
    let sup = suppressed();
    let v = assert_valid_sarif(&render_with_suppressed(Format::Sarif, &fs, &sup));
    let results = v["runs"][0]["results"].as_array().expect("results");
    assert_eq!(results.len(), fs.len() + 1, "reported and suppressed");
    for r in &results[..fs.len()] {
        assert!(r.get("suppressions").is_none(), "{r}");
    }
    let s = &results[fs.len()];
    assert_eq!(s["ruleId"], "CA203");
    assert_eq!(s["level"], "warning");
    assert_eq!(
        s["message"]["text"],
        "reconcile requeues after 15s on success"
    );
    assert_eq!(
        s["partialFingerprints"]["ctrlaudit/v1"],
        sup[0].finding.fingerprint()
    );
    let suppressions = s["suppressions"].as_array().expect("suppressions");
    assert_eq!(suppressions.len(), 1);
    assert_eq!(suppressions[0]["kind"], "inSource");
    assert_eq!(
        suppressions[0]["justification"],
        "vendor quota API cannot be watched"
    );
    let at = &suppressions[0]["location"]["physicalLocation"];
    assert_eq!(at["artifactLocation"]["uri"], "src/controller/reconcile.rs");
    assert_eq!(at["region"]["startLine"], 45);
    assert_eq!(at["region"]["startColumn"], 50);

    // The schema checks the suppression too: a kind SARIF does not know is rejected.
    let mut bad = v.clone();
    bad["runs"][0]["results"][fs.len()]["suppressions"][0]["kind"] = Value::String("inline".into());
    assert!(sarif_validator().iter_errors(&bad).count() >= 1);
}

#[test]
fn only_sarif_shows_suppressed_findings() {
    let fs = findings();
    let sup = suppressed();
    for format in Format::ALL {
        if format == Format::Sarif {
            continue;
        }
        let with = render_with_suppressed(format, &fs, &sup);
        let without = render_with_suppressed(format, &fs, &[]);
        assert_eq!(with, without, "{format} ignores suppressed findings");
        assert!(!with.contains("requeues after 15s"), "{format}: {with}");
    }
}

// ---------------------------------------------------------------- junit

/// Parses the output back with quick-junit's reader, which rejects XML that is not well-formed or not JUnit.
fn parse_junit(out: &str) -> quick_junit::TestSuite {
    let report = quick_junit::Report::deserialize_from_str(out)
        .unwrap_or_else(|e| panic!("not a JUnit document: {e}\n{out}"));
    assert_eq!(
        report.name.as_ref().map(|n| n.as_str()),
        Some("kubectl-ctrlaudit")
    );
    assert_eq!(report.test_suites.len(), 1, "{out}");
    report.test_suites.into_iter().next().expect("one suite")
}

fn case<'a>(suite: &'a quick_junit::TestSuite, name: &str) -> &'a quick_junit::TestCase {
    suite
        .test_cases
        .iter()
        .find(|c| c.name.as_str() == name)
        .unwrap_or_else(|| panic!("no test case {name}"))
}

/// The failure's message, type and text, or `None` for a passing case.
fn failure(c: &quick_junit::TestCase) -> Option<(String, String, String)> {
    match &c.status {
        quick_junit::TestCaseStatus::Success { .. } => None,
        quick_junit::TestCaseStatus::NonSuccess {
            kind: quick_junit::NonSuccessKind::Failure,
            message,
            ty,
            description,
            ..
        } => {
            let s = |x: &Option<quick_junit::XmlString>| {
                x.as_ref()
                    .map(|x| x.as_str().to_string())
                    .unwrap_or_default()
            };
            Some((s(message), s(ty), s(description)))
        }
        other => panic!("{}: unexpected status {other:?}", c.name.as_str()),
    }
}

#[test]
fn junit_scan_has_one_case_per_scan_rule() {
    let out = render_all(Format::Junit, "scan", &findings(), &notes());
    let suite = parse_junit(&out);
    assert_eq!(suite.name.as_str(), "ctrlaudit scan");
    let scan_rules: Vec<_> = RULES.iter().filter(|r| r.has_lens(Lens::Scan)).collect();
    // CA102 and CA403 are live-only: they still get a test case each, so nothing is lost.
    assert_eq!(suite.tests, scan_rules.len() + 2, "{out}");
    assert_eq!(suite.test_cases.len(), suite.tests);
    assert_eq!((suite.failures, suite.errors, suite.skipped), (3, 0, 0));
    for r in &scan_rules {
        let c = case(&suite, &format!("{} {}", r.code, r.name));
        assert_eq!(
            c.classname.as_ref().map(|c| c.as_str()),
            Some("ctrlaudit.scan")
        );
    }
    assert_eq!(failure(case(&suite, "CA001 unparsable-source")), None);
    let (message, ty, text) =
        failure(case(&suite, "CA202 volatile-value-written-every-reconcile")).expect("failure");
    assert_eq!(message, TRICKY, "the message survives escaping");
    assert_eq!(ty, "error");
    assert!(text.contains(
        "src/controller/reconcile.rs:12:5\n  src/main.rs:80:5: the Controller that watches the object it writes"
    ), "{text}");
    assert!(text.contains("help: write the timestamp to status only when something changed"));
    let props: Vec<(&str, &str)> = suite
        .properties
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str()))
        .collect();
    assert!(props.contains(&("files scanned", "42")), "{props:?}");
    assert_eq!(
        suite.system_out.as_ref().map(|s| s.as_str()),
        Some("skipped: src/gen/huge.rs — larger than 2 MiB")
    );
}

#[test]
fn junit_several_findings_of_one_rule_are_one_failure_listing_each() {
    let mut second = source_finding();
    second.severity = Severity::Warning;
    second.message = "second one".into();
    let out = render_all(Format::Junit, "scan", &[second, source_finding()], &[]);
    let suite = parse_junit(&out);
    assert_eq!(suite.failures, 1);
    let (message, ty, text) =
        failure(case(&suite, "CA202 volatile-value-written-every-reconcile")).expect("failure");
    assert!(message.starts_with("2 findings; first: "), "{message}");
    assert_eq!(ty, "error", "the most severe finding names the type");
    assert!(text.contains("warning: second one"), "{text}");
    assert!(text.contains(&format!("error: {TRICKY}")), "{text}");
}

#[test]
fn junit_live_counts() {
    let live: Vec<Finding> = vec![object_finding(), controller_finding()];
    let out = render_all(Format::Junit, "live", &live, &[]);
    let suite = parse_junit(&out);
    assert_eq!(suite.name.as_str(), "ctrlaudit live");
    let live_rules = RULES.iter().filter(|r| r.has_lens(Lens::Live)).count();
    assert_eq!((suite.tests, suite.failures), (live_rules, 2), "{out}");
    let (_, ty, text) = failure(case(&suite, "CA102 convergence-lag")).expect("failure");
    assert_eq!(ty, "warning");
    assert!(text.contains("Widget.example.com default/w1"), "{text}");
    let types: Vec<String> = suite
        .test_cases
        .iter()
        .filter_map(failure)
        .map(|(_, ty, _)| ty)
        .collect();
    assert!(types.contains(&"info".to_string()), "{types:?}");
}

#[test]
fn junit_all_pass() {
    let out = render_all(Format::Junit, "scan", &[], &[]);
    let suite = parse_junit(&out);
    assert_eq!(suite.failures, 0);
    assert!(suite.test_cases.iter().all(|c| failure(c).is_none()));
}

/// The skip's message and text, or `None` for a case that is not skipped.
fn skipped(c: &quick_junit::TestCase) -> Option<(String, String)> {
    match &c.status {
        quick_junit::TestCaseStatus::Skipped {
            message,
            description,
            ..
        } => {
            let s = |x: &Option<quick_junit::XmlString>| {
                x.as_ref()
                    .map(|x| x.as_str().to_string())
                    .unwrap_or_default()
            };
            Some((s(message), s(description)))
        }
        _ => None,
    }
}

#[test]
fn junit_failures_are_the_findings_at_or_above_fail_on() {
    // One finding per rule (an error, a warning, an info): each threshold fails exactly the findings the exit
    // code counts, and the others are skipped cases, not failures.
    let fs = findings();
    for (fail_on, failing, skipping) in [
        (FailOn::Info, 3, 0),
        (FailOn::Warning, 2, 1),
        (FailOn::Error, 1, 2),
        (FailOn::Never, 0, 3),
    ] {
        let out = render_failing_on(Format::Junit, "scan", &fs, &[], fail_on);
        let suite = parse_junit(&out);
        let tripping = fs.iter().filter(|f| fail_on.trips(f.severity)).count();
        assert_eq!(tripping, failing, "{fail_on:?}");
        assert_eq!(
            (suite.failures, suite.errors, suite.skipped),
            (failing, 0, skipping),
            "--fail-on {fail_on:?}:\n{out}"
        );
        let props: Vec<(&str, &str)> = suite
            .properties
            .iter()
            .map(|p| (p.name.as_str(), p.value.as_str()))
            .collect();
        assert!(props.contains(&("fail-on", fail_on.as_str())), "{props:?}");
    }
}

#[test]
fn junit_info_below_fail_on_warning_is_a_skip_that_lists_it() {
    let out = render_failing_on(Format::Junit, "scan", &findings(), &[], FailOn::Warning);
    let suite = parse_junit(&out);
    let ca403 = case(&suite, "CA403 write-rate-near-apiserver-ceiling");
    let (message, text) = skipped(ca403).expect("the info finding's rule is skipped, not failed");
    assert_eq!(message, "1 finding below --fail-on warning");
    assert!(
        text.contains("info: 21.5 writes/s, 90% of the measured ceiling"),
        "{text}"
    );
    assert!(text.contains("manager=widget-controller"), "{text}");
    // The warning still fails; a rule without findings still passes.
    assert!(failure(case(&suite, "CA102 convergence-lag")).is_some());
    assert_eq!(failure(case(&suite, "CA001 unparsable-source")), None);
    assert!(skipped(case(&suite, "CA001 unparsable-source")).is_none());
}

#[test]
fn junit_a_failing_rule_lists_its_findings_below_fail_on_in_system_out() {
    let mut info = source_finding();
    info.severity = Severity::Info;
    info.message = "an info of the same rule".into();
    let out = render_failing_on(
        Format::Junit,
        "scan",
        &[source_finding(), info],
        &[],
        FailOn::Warning,
    );
    let suite = parse_junit(&out);
    assert_eq!((suite.failures, suite.skipped), (1, 0), "{out}");
    let c = case(&suite, "CA202 volatile-value-written-every-reconcile");
    let (message, ty, text) = failure(c).expect("failure");
    assert_eq!(message, TRICKY, "the failure counts only the error");
    assert_eq!(ty, "error");
    assert!(!text.contains("an info of the same rule"), "{text}");
    let system_out = c.system_out.as_ref().map(|s| s.as_str()).unwrap_or("");
    assert!(
        system_out.starts_with("1 finding below --fail-on warning:"),
        "{system_out}"
    );
    assert!(
        system_out.contains("info: an info of the same rule"),
        "{system_out}"
    );
}

#[test]
fn junit_escapes_control_characters() {
    let mut f = source_finding();
    f.message = "bell\u{7} <tag> & \"q\"\nline two".into();
    f.help = "]]> & <![CDATA[".into();
    let out = render_all(Format::Junit, "scan", &[f], &[]);
    assert!(!out.contains('\u{7}'));
    let suite = parse_junit(&out);
    let (message, _, text) =
        failure(case(&suite, "CA202 volatile-value-written-every-reconcile")).expect("failure");
    assert!(message.contains("<tag> & \"q\""), "{message:?}");
    assert!(message.contains("line two"), "{message:?}");
    assert!(text.contains("help: ]]> & <![CDATA["), "{text}");
}

// ---------------------------------------------------------------- github

#[test]
fn github_annotations() {
    let out = render_all(Format::Github, "scan", &findings(), &notes());
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert_eq!(
        lines[0],
        "::error file=src/controller/reconcile.rs,line=12,col=5,endLine=12,endColumn=40,\
         title=CA202 volatile-value-written-every-reconcile::\
         annotation \"example.com/last-sync\" set to <now> & 100%25, every: reconcile \
         (write the timestamp to status only when something changed)\
         %0Asrc/main.rs:80:5: the Controller that watches the object it writes\
         %0Avia reconcile → stamp"
    );
    assert_eq!(
        lines[1],
        "::warning title=CA102 convergence-lag::Widget.example.com default/w1: \
         generation 7 ahead of status.observedGeneration 5 for 300 s \
         (update status.observedGeneration when the spec has been handled)%0Alag = 300 s"
    );
    assert!(
        lines[2].starts_with(
            "::notice title=CA403 write-rate-near-apiserver-ceiling::\
             manager=widget-controller user=system:serviceaccount:ops:widget: \
             21.5 writes/s, 90%25 of the measured ceiling"
        ),
        "{}",
        lines[2]
    );
    assert!(!lines[1].contains("file="));
    assert_eq!(
        lines[3],
        "::notice title=ctrlaudit%3A skipped::src/gen/huge.rs — larger than 2 MiB"
    );
    assert_eq!(
        lines[4],
        "ctrlaudit scan: 3 findings (1 error, 1 warning, 1 info) \
         (files scanned: 42, files parsed: 7, duration: 0.12s)"
    );
}

#[test]
fn github_escapes_properties() {
    let mut f = source_finding();
    if let Subject::Source(s) = &mut f.subject {
        s.file = "src/a,b:c%.rs".into();
    }
    f.message = "one\r\ntwo".into();
    f.help = String::new();
    f.evidence.clear();
    let out = render_all(Format::Github, "scan", &[f], &[]);
    let first = out.lines().next().expect("a line");
    assert_eq!(
        first,
        "::error file=src/a%2Cb%3Ac%25.rs,line=12,col=5,endLine=12,endColumn=40,\
         title=CA202 volatile-value-written-every-reconcile::one%0D%0Atwo"
    );
}

#[test]
fn github_no_findings() {
    let out = render_all(Format::Github, "live", &[], &[]);
    assert_eq!(
        out,
        "ctrlaudit live: no findings (files scanned: 42, files parsed: 7, duration: 0.12s)\n"
    );
}

// ---------------------------------------------------------------- gitlab

/// GitLab's required fields of a Code Quality issue, each of the right JSON type; the severity one of Code
/// Climate's.
fn assert_code_quality_issue(issue: &Value) {
    for key in ["description", "check_name", "fingerprint", "severity"] {
        assert!(
            issue[key].as_str().is_some_and(|s| !s.is_empty()),
            "{key}: {issue}"
        );
    }
    assert!(
        ["info", "minor", "major", "critical", "blocker"]
            .contains(&issue["severity"].as_str().unwrap_or_default()),
        "{issue}"
    );
    assert!(
        issue["location"]["path"]
            .as_str()
            .is_some_and(|p| !p.is_empty()),
        "{issue}"
    );
    assert!(
        issue["location"]["lines"]["begin"]
            .as_u64()
            .is_some_and(|l| l >= 1),
        "{issue}"
    );
}

#[test]
fn gitlab_code_quality_issues() {
    let fs = findings();
    let out = render_all(Format::Gitlab, "scan", &fs, &notes());
    let v = parse_json(&out);
    let issues = v.as_array().expect("a JSON array");
    assert_eq!(issues.len(), 3);
    issues.iter().for_each(assert_code_quality_issue);
    assert_eq!(
        issues[0],
        serde_json::json!({
            "description": format!("CA202: {TRICKY}"),
            "check_name": "CA202",
            "fingerprint": fs[0].fingerprint(),
            "severity": "critical",
            "location": {"path": "src/controller/reconcile.rs", "lines": {"begin": 12, "end": 12}}
        })
    );
    assert_eq!(issues[1]["severity"], "major");
    assert_eq!(
        issues[1]["location"]["path"],
        "Widget.example.com default/w1"
    );
    assert_eq!(issues[2]["severity"], "info");
    // Every fingerprint is the baseline's, so GitLab and --baseline agree on what is the same finding.
    for (issue, f) in issues.iter().zip(&fs) {
        assert_eq!(issue["fingerprint"], f.fingerprint());
    }
    assert_eq!(render_all(Format::Gitlab, "scan", &[], &[]), "[]\n");
}

#[test]
fn gitlab_fingerprints_are_stable_and_unique() {
    let moved = |line: usize| {
        let mut f = source_finding();
        if let Subject::Source(s) = &mut f.subject {
            s.line = line;
            s.end_line = line;
        }
        f
    };
    let fingerprints = |fs: &[Finding]| -> Vec<String> {
        let v = parse_json(&render_all(Format::Gitlab, "scan", fs, &[]));
        v.as_array()
            .expect("array")
            .iter()
            .map(|i| i["fingerprint"].as_str().expect("fingerprint").to_string())
            .collect()
    };
    // A finding that moves to another line keeps its fingerprint.
    assert_eq!(fingerprints(&[moved(12)]), fingerprints(&[moved(40)]));
    // Two findings alike but for the line: two issues, not one, and the pair is the same after both move.
    let two = fingerprints(&[moved(12), moved(30)]);
    assert_eq!(two.len(), 2);
    assert_ne!(two[0], two[1], "GitLab keeps one issue per fingerprint");
    assert_eq!(two[0], source_finding().fingerprint());
    assert_eq!(two, fingerprints(&[moved(14), moved(33)]));
    // Another message is another finding.
    let mut other = moved(12);
    other.message = "something else".into();
    assert_ne!(fingerprints(&[other]), fingerprints(&[moved(12)]));
}
