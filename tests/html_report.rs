//! `-o html` opened in headless Chromium: the page a user shares renders without console errors, with every
//! finding, its evidence and its rule doc, and nothing fetched from the network. (bench's report.html is opened
//! the same way by bench_testenv, on a real run.)
#![allow(clippy::unwrap_used)]

mod browser;

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_kubectl-ctrlaudit");

fn live_replay(fixture: &str, format: &str) -> String {
    let out = Command::new(BIN)
        .args(["live", "--replay"])
        .arg(format!(
            "{}/fixtures/live/{fixture}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .args(["-o", format])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
#[ignore = "needs chromium: ./test.sh installs and runs it"]
fn live_html_renders_every_finding_with_its_rule_doc() {
    let json: serde_json::Value =
        serde_json::from_str(&live_replay("annotation-loop", "json")).unwrap();
    let findings = json["findings"].as_array().unwrap();
    assert!(!findings.is_empty());

    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("live.html");
    std::fs::write(&page, live_replay("annotation-loop", "html")).unwrap();
    let r = browser::render(&page);

    assert!(r.errors.is_empty(), "console errors: {:?}", r.errors);
    assert_eq!(r.findings, findings.len() as u64, "{}", r.text);
    for f in findings {
        let code = f["code"].as_str().unwrap();
        assert!(r.text.contains(code), "{code} missing:\n{}", r.text);
    }
    assert!(
        r.text.contains("bench.ctrlaudit.io/last-reconciled"),
        "{}",
        r.text
    );
    assert!(r.text.contains("help: "), "{}", r.text);
    // The rule docs are on the page, folded: their summaries show.
    assert!(
        r.text
            .contains("CA202 volatile-value-written-every-reconcile"),
        "{}",
        r.text
    );
    let (w, h) = browser::png_size(&r.png);
    assert!(w >= 1000 && h >= 600, "screenshot {w}x{h}");
    browser::save_screenshot("live-report.png", &r.png);
}

/// The check above can fail: a page with a script error and a missing image is reported.
#[test]
#[ignore = "needs chromium: ./test.sh installs and runs it"]
fn the_browser_check_reports_console_errors() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("broken.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><table><tr><td>x</td></tr></table>\
         <img src=\"missing.png\"><script>console.error('planted'); undefinedFn();</script></body></html>",
    )
    .unwrap();
    let r = browser::render(&page);
    let all = r.errors.join("\n");
    assert!(all.contains("planted"), "{all}");
    assert!(all.contains("undefinedFn"), "{all}");
    assert!(
        all.contains("missing.png") || all.contains("ERR_FILE_NOT_FOUND"),
        "{all}"
    );
    assert_eq!(r.tables, 1);
}
