//! Every rule has its doc with the required sections, and the doc's ```rust,bad and ```go,bad examples raise
//! the rule while the ```rust,good and ```go,good ones do not.
#![allow(clippy::unwrap_used)]

use ctrlaudit::config::Config;
use ctrlaudit::finding::Lens;
use ctrlaudit::rules::RULES;

const SECTIONS: &[&str] = &[
    "## What it is",
    "## Why it is bad",
    "## Bad example",
    "## Good example",
    "## How scan detects it",
    "## How live detects it",
    "## How bench measures it",
    "## Configuration",
];

/// (info string, body) of every fenced block.
fn blocks(doc: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(String, String)> = None;
    for line in doc.lines() {
        let t = line.trim_start();
        match (&mut cur, t.strip_prefix("```")) {
            (None, Some(info)) => cur = Some((info.trim().to_string(), String::new())),
            (Some(_), Some(rest)) if rest.trim().is_empty() => out.extend(cur.take()),
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

#[test]
fn every_rule_has_a_doc_with_all_sections_in_order() {
    for r in RULES {
        let path = std::path::Path::new("rules").join(r.doc_file());
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(text, r.doc(), "{}: embedded doc is stale", r.code);
        assert!(
            text.starts_with(&format!("# {} {}", r.code, r.name)),
            "{}: doc must start with `# {} {}`",
            r.code,
            r.code,
            r.name
        );
        let mut last = 0;
        for s in SECTIONS {
            let at = text
                .find(&format!("\n{s}\n"))
                .unwrap_or_else(|| panic!("{}: missing section {s}", r.code));
            assert!(at > last, "{}: section {s} out of order", r.code);
            last = at;
        }
    }
}

#[test]
fn bad_examples_fire_and_good_examples_do_not() {
    let config = Config::default();
    let mut checked = 0;
    for r in RULES
        .iter()
        .filter(|r| r.has_lens(Lens::Scan) && !matches!(r.code, "CA001" | "CA002"))
    {
        let bs = blocks(r.doc());
        let bad: Vec<_> = bs.iter().filter(|(i, _)| i == "rust,bad").collect();
        let good: Vec<_> = bs.iter().filter(|(i, _)| i == "rust,good").collect();
        assert!(
            !bad.is_empty() && !good.is_empty(),
            "{}: needs ```rust,bad and ```rust,good examples",
            r.code
        );
        for (_, src) in bad {
            let f = ctrlaudit::scan::scan_source("bad.rs", src, &config);
            assert!(
                f.iter().any(|f| f.code == r.code),
                "{}: bad example does not fire; got {:?}",
                r.code,
                f.iter().map(|f| (&f.code, &f.message)).collect::<Vec<_>>()
            );
            checked += 1;
        }
        for (_, src) in good {
            let f = ctrlaudit::scan::scan_source("good.rs", src, &config);
            assert!(
                !f.iter().any(|f| f.code == r.code || f.code == "CA001"),
                "{}: good example fires: {:?}",
                r.code,
                f.iter().map(|f| (&f.code, &f.message)).collect::<Vec<_>>()
            );
            checked += 1;
        }
    }
    assert!(checked >= 26, "only {checked} examples checked");
}

/// The scan rules judged in Go source: each has ```go,bad and ```go,good examples in its doc's "In Go" section;
/// the others say there why not (yet).
const GO_RULES: &[&str] = &[
    "CA101", "CA201", "CA202", "CA203", "CA204", "CA301", "CA303", "CA305", "CA402",
];

#[test]
fn go_examples_fire_both_ways_and_every_scan_rule_says_what_it_does_in_go() {
    let config = Config::default();
    let mut with_examples = Vec::new();
    for r in RULES
        .iter()
        .filter(|r| r.has_lens(Lens::Scan) && !matches!(r.code, "CA001" | "CA002"))
    {
        let doc = r.doc();
        let at = doc
            .find("\n## In Go (controller-runtime)\n")
            .unwrap_or_else(|| panic!("{}: no `## In Go (controller-runtime)` section", r.code));
        assert!(
            at < doc.find("\n## How scan detects it\n").unwrap(),
            "{}: the Go section goes before `## How scan detects it`",
            r.code
        );
        let bs = blocks(doc);
        let bad: Vec<_> = bs.iter().filter(|(i, _)| i == "go,bad").collect();
        let good: Vec<_> = bs.iter().filter(|(i, _)| i == "go,good").collect();
        if bad.is_empty() && good.is_empty() {
            continue;
        }
        assert!(
            !bad.is_empty() && !good.is_empty(),
            "{}: needs both ```go,bad and ```go,good",
            r.code
        );
        with_examples.push(r.code);
        for (_, src) in bad {
            let f = ctrlaudit::scan::scan_source("bad.go", src, &config);
            assert!(
                f.iter().any(|f| f.code == r.code),
                "{}: Go bad example does not fire; got {:?}",
                r.code,
                f.iter().map(|f| (&f.code, &f.message)).collect::<Vec<_>>()
            );
        }
        for (_, src) in good {
            let f = ctrlaudit::scan::scan_source("good.go", src, &config);
            assert!(
                !f.iter().any(|f| f.code == r.code || f.code == "CA001"),
                "{}: Go good example fires: {:?}",
                r.code,
                f.iter().map(|f| (&f.code, &f.message)).collect::<Vec<_>>()
            );
        }
    }
    assert_eq!(with_examples, GO_RULES);
}

const TABLE_START: &str = "<!-- rules-table:start (generated from crates/ctrlaudit-core/src/rules.rs; CTRLAUDIT_BLESS=1 cargo test --test rule_docs rewrites it) -->\n";
const TABLE_END: &str = "<!-- rules-table:end -->";

/// README's rule table is the registry's: a rule renamed, re-levelled or given a bench pair in `crates/ctrlaudit-core/src/rules.rs`
/// changes README too (with `CTRLAUDIT_BLESS=1` the test writes the new table instead of failing).
#[test]
fn readme_table_is_the_registry() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let start = readme
        .find(TABLE_START)
        .expect("README has the rules-table markers")
        + TABLE_START.len();
    let end = readme[start..]
        .find(TABLE_END)
        .expect("README has the end marker")
        + start;
    let want = ctrlaudit::rules::markdown_table();
    if readme[start..end] == want {
        return;
    }
    if std::env::var_os("CTRLAUDIT_BLESS").is_some() {
        let fixed = format!("{}{want}{}", &readme[..start], &readme[end..]);
        std::fs::write("README.md", fixed).unwrap();
        return;
    }
    panic!(
        "README's rule table differs from crates/ctrlaudit-core/src/rules.rs; run `CTRLAUDIT_BLESS=1 cargo test --test rule_docs` or paste:\n{want}"
    );
}

/// A newcomer finds where a rule is detected by its name alone: `ca202_volatile_value_written_every_reconcile.rs`
/// under each lens that has it (scan's tool rules CA001 and CA002 come from the pipeline, not a detector).
#[test]
fn every_rule_has_a_detector_file_named_after_it_in_each_lens() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for r in RULES {
        let file = format!("{}_{}.rs", r.code.to_lowercase(), r.name.replace('-', "_"));
        for (lens, dir) in [
            (Lens::Scan, "crates/ctrlaudit-scan/src/rules"),
            (Lens::Live, "src/live/detectors"),
        ] {
            if !r.has_lens(lens) || r.origin == "tool" {
                continue;
            }
            let path = root.join(dir).join(&file);
            assert!(
                path.is_file(),
                "{} has no detector at {}",
                r.code,
                path.display()
            );
        }
    }
}
