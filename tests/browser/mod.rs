//! Opens an HTML file in headless Chromium (Debian's `chromium`, which test.sh installs where missing) over the
//! DevTools protocol and reports what a reader would see: console errors, tables, charts, text, a screenshot.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::protocol::cdp::{Log, Page, Runtime};
use headless_chrome::{Browser, LaunchOptions};

/// What the page showed once loaded.
#[derive(Debug)]
pub struct Rendered {
    /// Console errors, log entries at level error and uncaught exceptions.
    pub errors: Vec<String>,
    pub tables: u64,
    pub table_rows: u64,
    /// Width and height as laid out, of each `figure svg`.
    pub charts: Vec<(f64, f64)>,
    pub findings: u64,
    /// `document.body.innerText`.
    pub text: String,
    /// A PNG of the whole page.
    pub png: Vec<u8>,
}

/// The browser binary: `$CHROMIUM`, else the first of chromium, chromium-browser, google-chrome on PATH.
pub fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "no Chromium found (chromium, chromium-browser or google-chrome on PATH, or $CHROMIUM): \
         ./test.sh installs Debian's chromium, or `apt-get install chromium`"
    );
}

/// Loads `file` in a fresh headless Chromium at 1280 px wide and reads the page back.
pub fn render(file: &Path) -> Rendered {
    let options = LaunchOptions::default_builder()
        .path(Some(chromium()))
        // Root in CI containers: Chromium's sandbox refuses to start as root.
        .sandbox(false)
        .window_size(Some((1280, 900)))
        .idle_browser_timeout(Duration::from_secs(300))
        .build()
        .unwrap();
    let browser = Browser::new(options).unwrap();
    let tab = browser.new_tab().unwrap();
    // A loaded 2-core machine starts Chromium slowly: a bound, not a wait.
    tab.set_default_timeout(Duration::from_secs(120));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let sink = errors.clone();
    tab.add_event_listener(Arc::new(move |event: &Event| {
        let line = match event {
            Event::LogEntryAdded(e) if e.params.entry.level == Log::LogEntryLevel::Error => {
                Some(format!("log: {}", e.params.entry.text))
            }
            Event::RuntimeConsoleAPICalled(e)
                if e.params.Type == Runtime::ConsoleAPICalledEventTypeOption::Error =>
            {
                let args: Vec<String> = e
                    .params
                    .args
                    .iter()
                    .map(|a| match &a.value {
                        Some(serde_json::Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => a.description.clone().unwrap_or_default(),
                    })
                    .collect();
                Some(format!("console.error: {}", args.join(" ")))
            }
            Event::RuntimeExceptionThrown(e) => {
                let d = &e.params.exception_details;
                let what = d.exception.as_ref().and_then(|x| x.description.clone());
                Some(format!(
                    "exception: {} {}",
                    d.text,
                    what.unwrap_or_default()
                ))
            }
            _ => None,
        };
        if let Some(line) = line {
            sink.lock().unwrap().push(line);
        }
    }))
    .unwrap();
    tab.enable_log().unwrap();
    tab.enable_runtime().unwrap();
    let url = format!("file://{}", file.canonicalize().unwrap().display());
    tab.navigate_to(&url)
        .unwrap()
        .wait_until_navigated()
        .unwrap();
    let probe = tab
        .evaluate(
            r#"JSON.stringify({
                tables: document.querySelectorAll('table').length,
                rows: document.querySelectorAll('tbody tr').length,
                charts: [...document.querySelectorAll('figure svg')].map(s => {
                    const r = s.getBoundingClientRect(); return [r.width, r.height];
                }),
                findings: document.querySelectorAll('article.finding').length,
                text: document.body.innerText,
                width: document.documentElement.scrollWidth,
                height: document.documentElement.scrollHeight,
            })"#,
            false,
        )
        .unwrap();
    let json: serde_json::Value =
        serde_json::from_str(probe.value.unwrap().as_str().unwrap()).unwrap();
    let png = tab
        .call_method(Page::CaptureScreenshot {
            format: Some(Page::CaptureScreenshotFormatOption::Png),
            quality: None,
            clip: Some(Page::Viewport {
                x: 0.0,
                y: 0.0,
                width: json["width"].as_f64().unwrap(),
                height: json["height"].as_f64().unwrap(),
                scale: 1.0,
            }),
            from_surface: Some(true),
            capture_beyond_viewport: Some(true),
            optimize_for_speed: None,
        })
        .unwrap()
        .data;
    use base64::Engine as _;
    let png = base64::engine::general_purpose::STANDARD
        .decode(png)
        .unwrap();
    let errors = errors.lock().unwrap().clone();
    Rendered {
        errors,
        tables: json["tables"].as_u64().unwrap(),
        table_rows: json["rows"].as_u64().unwrap(),
        charts: json["charts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c[0].as_f64().unwrap(), c[1].as_f64().unwrap()))
            .collect(),
        findings: json["findings"].as_u64().unwrap(),
        text: json["text"].as_str().unwrap().to_string(),
        png,
    }
}

/// The width and height a PNG's header gives.
pub fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&png[16..20]), be(&png[20..24]))
}

/// Where a test keeps its screenshot: `docs/` when blessing (README shows it), else the target dir.
pub fn save_screenshot(name: &str, png: &[u8]) -> PathBuf {
    let dir = if std::env::var_os("CTRLAUDIT_BLESS").is_some() {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs")
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(name);
    std::fs::write(&path, png).unwrap();
    path
}
