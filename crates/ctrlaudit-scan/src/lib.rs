//! ctrlaudit-scan: static analysis of Rust (kube-rs) controller source. Walks the paths, reads files in
//! parallel, skips files that cannot matter with a literal prefilter, parses the rest with syn into
//! per-file models, joins them per crate, and runs one detector per rule. No cluster, no async runtime:
//! `cargo tree -p ctrlaudit-scan` holds no tokio, kube or hyper (tests/layers.rs).

pub mod baseline;
pub mod changed;
pub mod crd_yaml;
pub mod deps;
pub mod depth;
pub mod extract;
mod file;
pub mod golang;
pub mod imports;
pub mod rules;
pub mod select;
pub mod sema;
pub mod suppress;
mod tree;
pub mod unit;

pub(crate) use ctrlaudit_core::rules as registry;
pub(crate) use ctrlaudit_core::{Note, config, finding, policy, regular_file};

use aho_corasick::AhoCorasick;
use config::Config;
use finding::{Finding, Suppressed, sort_findings};
use policy::Policy;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use file::{FileOutcome, analyze_text, library_models, process_file};
use select::{Selection, Skip};
use tree::{cargo_root, display, unit_of, walk};

/// The stack of every thread that parses and judges a file: reserved, not used, beyond what a file needs.
/// `depth::MAX_BRACKETS` and `depth::MAX_CHAIN` keep the deepest accepted file well inside it.
const STACK_BYTES: usize = 64 << 20;

/// What a scan is asked to do.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    pub paths: Vec<PathBuf>,
    pub config: Config,
    /// Rule levels: `ctrlaudit.toml`, then `-D/-W/--allow`.
    pub policy: Policy,
    pub threads: Option<usize>,
    /// Read the source of the crate's kube-using dependencies when it is on this machine (see [`deps`]).
    pub deps: bool,
}

/// What a scan found.
#[derive(Debug, Default)]
pub struct ScanResult {
    pub findings: Vec<Finding>,
    /// The findings inline allow comments suppressed, with their reasons: for SARIF, never for the exit code.
    pub suppressed: Vec<Suppressed>,
    pub notes: Vec<Note>,
    pub stats: ScanStats,
}

#[derive(Debug, Default, Clone)]
pub struct ScanStats {
    pub files_seen: usize,
    pub rust_files: usize,
    /// Go files seen (tests, generated and vendored code included).
    pub go_files: usize,
    pub lines: usize,
    pub parsed: usize,
    pub units: usize,
    /// Dependencies whose source was read (see [`deps`]).
    pub libraries: usize,
    pub seconds: f64,
}

impl ScanStats {
    pub fn as_pairs(&self) -> Vec<(String, String)> {
        let mut pairs = vec![("rust files".into(), self.rust_files.to_string())];
        // Shown once there is Go: a Rust-only scan's line stays as it was.
        if self.go_files > 0 {
            pairs.push(("go files".into(), self.go_files.to_string()));
        }
        pairs.extend([
            ("lines".into(), self.lines.to_string()),
            ("parsed".into(), self.parsed.to_string()),
            ("crates".into(), self.units.to_string()),
            ("dependencies read".into(), self.libraries.to_string()),
            ("time".into(), format!("{:.2}s", self.seconds)),
        ]);
        pairs
    }
}

/// Errors that end a scan before it starts (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("path not found: {0}")]
    MissingPath(String),
    #[error("cannot start worker threads: {0}")]
    Threads(String),
    #[error("cannot build the literal prefilter: {0}")]
    Prefilter(String),
    #[error(
        "[aliases] in {config}: `{wrapper}` = `{method}` names no kube `Api` method (one of: {known})"
    )]
    UnknownAliasMethod {
        config: String,
        wrapper: String,
        method: String,
        known: String,
    },
}

/// Every `[aliases]` entry names a method kube-rs's `Api` has: a misspelt one would count no call, silently.
fn check_aliases(config: &Config) -> Result<(), ScanError> {
    for (wrapper, method) in &config.aliases {
        if sema::ApiMethod::named(method).is_none() {
            return Err(ScanError::UnknownAliasMethod {
                config: config
                    .source
                    .as_ref()
                    .map_or_else(|| "the configuration".into(), |p| p.display().to_string()),
                wrapper: wrapper.clone(),
                method: method.clone(),
                known: sema::ApiMethod::ALL
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    Ok(())
}

/// A literal that any file worth parsing contains (cheap test before paying for syn).
const NEEDLES: &[&str] = &[
    "kube",
    "k8s_openapi",
    "Controller",
    "Api",
    "Action",
    "reconcile",
    "watcher",
    "CustomResource",
    "sleep",
    "fs::",
    "block_on",
    "lock()",
    "Command",
    "label",
    "counter!",
    "gauge!",
    "histogram!",
    "KeyValue",
    "requeue",
    "blocking",
    // A helper that stamps a status value (`fn condition(..)` with `Utc::now()`) may live in a file that
    // names nothing of kube: see `extract::flow::VOLATILE`.
    "Utc::now",
    "Local::now",
    "Timestamp::now",
    "Zoned::now",
    "SystemTime::now",
    "now_utc",
    "new_v4",
    "now_v7",
    // Durations and numbers a requeue names may be consts of a settings file, or helpers returning a
    // `Duration`, in a file that names nothing else here (`const RECHECK_SECS: u64 = 5;`).
    "Duration",
    "const ",
    "static ",
];
/// A crate none of whose files use kube has no kube-rs controller in it (k8s-openapi alone is
/// types, not a client).
const UNIT_NEEDLES: &[&str] = &[
    "kube::",
    "kube_runtime",
    "kube_client",
    "kube_core",
    "kube::{",
];

/// CRD declarations from the crate's `src/` files that were not among the scanned paths, so that
/// `scan src/controllers` still knows that a kind declared in `src/crd.rs` has the status
/// subresource. Only files that mention `CustomResource` are parsed; their code is not judged.
fn crd_context(root: &Path, scanned: &[PathBuf], config: &Config) -> Vec<sema::FileModel> {
    let src = root.join("src");
    if !root.join("Cargo.toml").is_file() || !src.is_dir() {
        return Vec::new();
    }
    let scanned: std::collections::HashSet<PathBuf> = scanned
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let mut out = Vec::new();
    for entry in ignore::WalkBuilder::new(&src).build().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if scanned.contains(&abs) {
            continue;
        }
        // Only a regular file within the cap: a FIFO named `*.rs` must not block the scan.
        let Ok(text) = regular_file::read_to_string(path, config.thresholds.max_file_bytes) else {
            continue;
        };
        if !text.contains("CustomResource") {
            continue;
        }
        // The CRD types only; what this file gets wrong is reported where it is scanned, not here.
        let name = display(path);
        let analyzed = analyze_text(&name, &text, &BTreeMap::new(), file::deadline(config), None);
        if let Some(m) = analyzed.model {
            out.push(sema::FileModel {
                path: name,
                crds: m.crds,
                ..Default::default()
            });
        }
    }
    out
}

/// What one crate gave: its findings, the findings its allow comments suppressed, notes, files parsed.
type UnitResult = (Vec<Finding>, Vec<Suppressed>, Vec<Note>, usize);

/// A crate to analyse: its root, `.rs` files, CRD YAML, and whether its lines are still to be counted.
type CrateFiles = (PathBuf, Vec<PathBuf>, Vec<PathBuf>, bool);

/// Runs a scan.
pub fn scan(opts: &ScanOptions) -> Result<ScanResult, ScanError> {
    let started = Instant::now();
    let config = &opts.config;
    check_aliases(config)?;
    let mut walked = walk(&opts.paths, &config.excluded())?;
    let needles = AhoCorasick::new(NEEDLES).map_err(|e| ScanError::Prefilter(e.to_string()))?;
    let unit_needles =
        AhoCorasick::new(UNIT_NEEDLES).map_err(|e| ScanError::Prefilter(e.to_string()))?;

    // Group files by crate, and keep only crates that use kube at all.
    let mut cache = HashMap::new();
    let mut units: BTreeMap<PathBuf, (Vec<PathBuf>, Vec<PathBuf>)> = BTreeMap::new();
    for p in &walked.rust {
        let Some(unit) = unit_of(p, &mut cache) else {
            walked.tests += 1;
            continue;
        };
        units.entry(unit).or_default().0.push(p.clone());
    }
    // CRD YAML anywhere under a crate's directory joins that crate.
    for p in &walked.yaml {
        let dir = p.parent().unwrap_or(Path::new("."));
        if let Some(root) = cargo_root(dir, &mut cache)
            && let Some(u) = units.get_mut(&root)
        {
            u.1.push(p.clone());
        }
    }
    let go = golang::module::units(&walked.go, &walked.yaml, config.thresholds.max_file_bytes);
    let pool = rayon::ThreadPoolBuilder::new()
        .stack_size(STACK_BYTES)
        .num_threads(opts.threads.unwrap_or(0))
        .build();
    let pool = pool.map_err(|e| ScanError::Threads(e.to_string()))?;
    let lines = std::sync::atomic::AtomicUsize::new(0);
    let max_bytes = config.thresholds.max_file_bytes;
    let count_lines = |b: &[u8]| {
        lines.fetch_add(bytecount_lines(b), std::sync::atomic::Ordering::Relaxed);
    };
    // Each crate is analysed or counted under its reason (`select`): nothing is left out in silence.
    let selector = select::Selector::default();
    let decided: Vec<Result<CrateFiles, (Skip, PathBuf)>> = pool.install(|| {
        units
            .into_par_iter()
            .map(|(root, (rs, yaml))| {
                match selector.select(&root) {
                    Selection::Skip(why) => Err((why, root)),
                    // Their lines are counted as they are analysed (`process_file`), not read here.
                    Selection::Direct | Selection::Through(_) => Ok((root, rs, yaml, true)),
                    // Outside any crate, or a graph no lock file shows: a file that names a kube path decides.
                    Selection::Source => {
                        let hits = rs
                            .iter()
                            .filter(|p| {
                                regular_file::read(p, max_bytes).is_ok_and(|b| {
                                    count_lines(&b);
                                    unit_needles.is_match(&b)
                                })
                            })
                            .count();
                        if hits > 0 {
                            Ok((root, rs, yaml, false))
                        } else {
                            Err((Skip::NoKubePath, root))
                        }
                    }
                }
            })
            .collect()
    });
    let mut relevant = Vec::new();
    let mut skipped: BTreeMap<Skip, Vec<PathBuf>> = BTreeMap::new();
    relevant.extend(go.analysed);
    let go_packages = go.packages;
    for (why, root) in go.skipped {
        skipped.entry(why).or_default().push(root);
    }
    for d in decided {
        match d {
            Ok(unit) => relevant.push(unit),
            Err((why, root)) => skipped.entry(why).or_default().push(root),
        }
    }
    let mut result = ScanResult {
        notes: walked.notes,
        ..Default::default()
    };
    // Which configuration judged this scan: a stray `ctrlaudit.toml` in a parent directory must leave a trace.
    if let Some(source) = &config.source {
        result.notes.push(Note {
            subject: display(source),
            message: "configuration used (rule levels, thresholds, aliases, exclude, overrides)"
                .into(),
        });
    }
    if !walked.excluded.is_empty() {
        result.notes.push(excluded_note(&walked.excluded, config));
    }
    result
        .notes
        .extend(skip_notes(&skipped, walked.tests, go.not_judged));
    result.stats.files_seen = walked.files_seen;
    result.stats.rust_files = walked.rust.len();
    result.stats.go_files = walked.go.len();
    result.stats.units = relevant.len();
    // Each kube-using dependency on disk is read once, whichever crates share it.
    // On the pool: each reads and parses a manifest and a lock file (a large lock is tens of milliseconds).
    let lib_roots: Vec<Vec<PathBuf>> = pool.install(|| {
        relevant
            .par_iter()
            .map(|(root, files, _, _)| {
                if opts.deps && !golang::module::is_go_unit(files) {
                    let lock = selector.lock_of(root);
                    deps::library_roots(root, lock.as_ref().map(|(d, l)| (d.as_path(), &**l)))
                } else {
                    Vec::new()
                }
            })
            .collect()
    });
    let unique: BTreeSet<PathBuf> = lib_roots.iter().flatten().cloned().collect();
    let libraries: HashMap<PathBuf, Vec<sema::FileModel>> = pool.install(|| {
        unique
            .into_par_iter()
            .map(|r| {
                let models = library_models(&r, config, &needles);
                (r, models)
            })
            .collect()
    });
    result.stats.libraries = libraries.len();
    let unit_results: Vec<UnitResult> = pool.install(|| {
        relevant
            .par_iter()
            .zip(lib_roots.par_iter())
            .map(|((root, rs, yaml, uncounted), libs)| {
                let count = |b: &[u8]| {
                    if *uncounted {
                        count_lines(b);
                    }
                };
                let outcomes: Vec<(String, FileOutcome)> = rs
                    .par_iter()
                    .map(|p| (display(p), process_file(p, config, &needles, &count)))
                    .collect();
                let mut models = Vec::new();
                let mut sups = Vec::new();
                let mut findings = Vec::new();
                // CA001 is about the scanner's input, not the code: no allow comment applies to it (see its doc).
                let mut unparsed = Vec::new();
                let mut notes = Vec::new();
                for (p, (name, o)) in rs.iter().zip(outcomes) {
                    match o {
                        FileOutcome::Analyzed(a) => {
                            let a = *a;
                            unparsed.extend(a.ca001);
                            if let Some(mut m) = a.model {
                                m.package = go_packages.get(p).cloned();
                                models.push(m);
                            }
                            sups.push((name, a.suppressions));
                        }
                        FileOutcome::Finding(f) => unparsed.push(*f),
                        FileOutcome::Note(n) => notes.push(n),
                        FileOutcome::Skipped => {}
                    }
                }
                let mut yaml_kinds = HashMap::new();
                for y in yaml {
                    match crd_yaml::read(y, &display(y), max_bytes) {
                        crd_yaml::YamlFile::Kinds(kinds) => yaml_kinds.extend(kinds),
                        crd_yaml::YamlFile::Rejected(f) => unparsed.push(*f),
                        crd_yaml::YamlFile::Skipped(n) => notes.push(n),
                    }
                }
                let parsed = models.len();
                if !golang::module::is_go_unit(rs) {
                    models.extend(crd_context(root, rs, config));
                }
                let u = unit::join(
                    &mut models,
                    libs.iter()
                        .filter_map(|r| libraries.get(r))
                        .flatten()
                        .collect(),
                    yaml_kinds,
                    config,
                    selector.dependency_names(root),
                );
                // A dependency's code is not this crate's to change: what it does is reported where this crate
                // calls it.
                findings.extend(
                    rules::run_all(&u)
                        .into_iter()
                        .filter(|f| f.subject.span().is_none_or(|s| !u.is_library_file(&s.file))),
                );
                let mut suppressed = Vec::new();
                for (name, s) in &sups {
                    let extra = suppress::apply_keeping(name, s, &mut findings, &mut suppressed);
                    findings.extend(extra);
                }
                findings.append(&mut unparsed);
                (findings, suppressed, notes, parsed)
            })
            .collect()
    });
    for (f, s, n, parsed) in unit_results {
        result.findings.extend(f);
        result.suppressed.extend(s);
        result.notes.extend(n);
        result.stats.parsed += parsed;
    }
    opts.policy.apply(&mut result.findings);
    sort_findings(&mut result.findings);
    result.findings.dedup();
    suppress::apply_policy(&opts.policy, &mut result.suppressed);
    result
        .notes
        .sort_by(|a, b| a.subject.cmp(&b.subject).then(a.message.cmp(&b.message)));
    result.stats.lines = lines.into_inner();
    result.stats.seconds = started.elapsed().as_secs_f64();
    Ok(result)
}

/// One note per reason a crate or file was not analysed, with its count and the first few paths.
fn skip_notes(
    skipped: &BTreeMap<Skip, Vec<PathBuf>>,
    tests: usize,
    go_skipped: usize,
) -> Vec<Note> {
    const SHOWN: usize = 3;
    let cwd = std::env::current_dir().ok();
    let mut notes: Vec<Note> = skipped
        .iter()
        .map(|(why, roots)| {
            let mut shown: Vec<String> = roots
                .iter()
                .take(SHOWN)
                .map(|r| {
                    // Units are canonical paths; shown relative to where the scan was run, as findings are.
                    let rel = cwd.as_ref().and_then(|c| r.strip_prefix(c).ok());
                    display(rel.unwrap_or(r))
                })
                .collect();
            if roots.len() > SHOWN {
                shown.push(format!("and {} more", roots.len() - SHOWN));
            }
            let (one, many) = match why {
                Skip::NoKubePath => ("crate or file", "crates or files"),
                Skip::NoKube | Skip::KubeItself => ("crate", "crates"),
                Skip::NoGoController => ("Go module", "Go modules"),
                Skip::NoGoImport => ("Go file", "Go files"),
            };
            Note {
                subject: plural(roots.len(), one, many),
                message: format!("{}: {}", why.reason(), shown.join(", ")),
            }
        })
        .collect();
    if tests > 0 {
        notes.push(Note {
            subject: plural(tests, "file", "files"),
            message:
                "integration tests (`tests/`) are test code, like `#[cfg(test)]`, and not judged"
                    .into(),
        });
    }
    if go_skipped > 0 {
        notes.push(Note {
            subject: plural(go_skipped, "Go file", "Go files"),
            message: "tests (`_test.go`), generated code (`zz_generated.*`), `vendor/` and `testdata/` are not judged"
                .into(),
        });
    }
    notes
}

/// The note for the paths `exclude` left out: how many, the first few, and which file said so.
fn excluded_note(excluded: &[String], config: &Config) -> Note {
    const SHOWN: usize = 3;
    let mut shown: Vec<String> = excluded.iter().take(SHOWN).cloned().collect();
    if excluded.len() > SHOWN {
        shown.push(format!("and {} more", excluded.len() - SHOWN));
    }
    let file = config
        .source
        .as_deref()
        .map_or_else(|| "ctrlaudit.toml".to_string(), display);
    Note {
        subject: plural(excluded.len(), "path", "paths"),
        message: format!(
            "skipped: excluded by `exclude` in {file}: {}",
            shown.join(", ")
        ),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn bytecount_lines(b: &[u8]) -> usize {
    b.iter().filter(|c| **c == b'\n').count()
}

/// Scans a single in-memory source as if it were a file named `name` (docs, tests, fuzzing).
pub fn scan_source(name: &str, text: &str, config: &Config) -> Vec<Finding> {
    scan_sources(&[(name, text)], config)
}

/// Scans in-memory sources as the files of one crate (`(name, text)` each): a CRD type in one, the reconcile in
/// another are judged together, as a scan of the crate's folder would.
pub fn scan_sources(files: &[(&str, &str)], config: &Config) -> Vec<Finding> {
    // The stack of a scan's worker threads, whoever calls (a test thread has 2 MB): the depth budget of
    // `depth` is sized for it.
    std::thread::scope(|s| {
        match std::thread::Builder::new()
            .stack_size(STACK_BYTES)
            .spawn_scoped(s, || judge_sources(files, config))
        {
            Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            // No thread to be had: the caller's own stack, as before.
            Err(_) => judge_sources(files, config),
        }
    })
}

fn judge_sources(files: &[(&str, &str)], config: &Config) -> Vec<Finding> {
    let mut findings = Vec::new();
    // As in `scan`: no allow comment applies to CA001.
    let mut unparsed = Vec::new();
    let mut parsed = Vec::new();
    let mut models = Vec::new();
    for (name, text) in files {
        let a = if name.ends_with(".go") {
            file::analyze_go_text(name, text)
        } else {
            analyze_text(name, text, &config.aliases, file::deadline(config), None)
        };
        unparsed.extend(a.ca001);
        if let Some(m) = a.model {
            parsed.push((*name, a.suppressions));
            models.push(m);
        }
    }
    if !parsed.is_empty() {
        let u = unit::join(
            &mut models,
            Vec::new(),
            HashMap::new(),
            config,
            Default::default(),
        );
        findings.extend(rules::run_all(&u));
        for (name, sups) in &parsed {
            let extra = suppress::apply(name, sups, &mut findings);
            findings.extend(extra);
        }
    }
    findings.append(&mut unparsed);
    Policy::from_config(config).apply(&mut findings);
    sort_findings(&mut findings);
    findings.dedup();
    findings
}
