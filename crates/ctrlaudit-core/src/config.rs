//! `ctrlaudit.toml`: rule levels, thresholds and wrapper aliases, found upward from the scanned path.

use crate::finding::Severity;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A rule's level as configured: a severity, or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Error,
    Warning,
    Info,
    Off,
}

impl Level {
    pub fn severity(self) -> Option<Severity> {
        match self {
            Level::Error => Some(Severity::Error),
            Level::Warning => Some(Severity::Warning),
            Level::Info => Some(Severity::Info),
            Level::Off => None,
        }
    }
}

/// Numeric limits the detectors use. Every field has the documented default.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// CA203: a success-path requeue shorter than this is polling.
    pub polling_requeue_secs: f64,
    /// CA204: an error_policy whose every return is a constant requeue shorter than this retries hot.
    pub error_requeue_secs: f64,
    /// CA001: files larger than this are skipped.
    pub max_file_bytes: u64,
    /// CA001: analysis of one file stops after this many seconds ("over budget"), so that no file holds the scan.
    pub max_file_seconds: f64,
    /// CA102 (live)
    pub convergence_lag_secs: f64,
    /// CA202 (live)
    pub churn_writes_per_object_per_min: f64,
    /// CA301 (live)
    pub conflict_share: f64,
    /// CA403 (live)
    pub ceiling_share: f64,
    /// CA402 (live)
    pub series_per_family: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            polling_requeue_secs: 30.0,
            error_requeue_secs: 60.0,
            max_file_bytes: 2_000_000,
            max_file_seconds: 10.0,
            convergence_lag_secs: 120.0,
            churn_writes_per_object_per_min: 6.0,
            conflict_share: 0.05,
            ceiling_share: 0.8,
            series_per_family: 10_000.0,
        }
    }
}

/// `[metrics]`: the controller metric names `live` reads, defaulting to the controller-runtime and client-go
/// names (which the bench variants export too). A kube-rs controller that names its own metrics maps them here,
/// e.g. `reconcile_total = "doc_controller_reconciliations_total"`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct MetricNames {
    /// Counter of reconciles, labelled by controller and result.
    pub reconcile_total: String,
    /// Counter of failed reconciles.
    pub reconcile_errors_total: String,
    /// Histogram of reconcile duration (its `_sum` and `_count` are read).
    pub reconcile_time_seconds: String,
    /// Gauge: the configured worker limit (0 = unbounded).
    pub max_concurrent_reconciles: String,
    /// Gauge: workers busy right now.
    pub active_workers: String,
    /// Counter of work-queue additions, labelled by queue name.
    pub workqueue_adds_total: String,
    /// Gauge: items waiting in the work queue.
    pub workqueue_depth: String,
    /// Counter of the controller's API requests, labelled by method and code.
    pub rest_client_requests_total: String,
    /// The label of `reconcile_total` that carries the outcome.
    pub result_label: String,
    /// The value of `result_label` that means "requeued after a delay" (polling).
    pub requeue_after_result: String,
    /// The label that names the controller (on the reconcile and worker metrics).
    pub controller_label: String,
    /// The label that names the work queue.
    pub queue_label: String,
}

impl Default for MetricNames {
    fn default() -> Self {
        Self {
            reconcile_total: "controller_runtime_reconcile_total".into(),
            reconcile_errors_total: "controller_runtime_reconcile_errors_total".into(),
            reconcile_time_seconds: "controller_runtime_reconcile_time_seconds".into(),
            max_concurrent_reconciles: "controller_runtime_max_concurrent_reconciles".into(),
            active_workers: "controller_runtime_active_workers".into(),
            workqueue_adds_total: "workqueue_adds_total".into(),
            workqueue_depth: "workqueue_depth".into(),
            rest_client_requests_total: "rest_client_requests_total".into(),
            result_label: "result".into(),
            requeue_after_result: "requeue_after".into(),
            controller_label: "controller".into(),
            queue_label: "name".into(),
        }
    }
}

/// The parsed configuration.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(
    title = "ctrlaudit.toml",
    description = "kubectl-ctrlaudit's configuration, found upward from the scanned path (or given with --config): \
        rule levels, detector thresholds, wrapper aliases and the metric names live reads."
)]
pub struct Config {
    /// Rule code (`CA203`, any case) or name (`polling-requeue`) → level.
    pub rules: BTreeMap<String, Level>,
    pub thresholds: Thresholds,
    /// Wrapper function path (or bare name) → the kube `Api` method it wraps (`patch_status`, `list`, …).
    pub aliases: BTreeMap<String, String>,
    /// live: the names under which a controller exports its metrics (kube-rs controllers name their own).
    pub metrics: MetricNames,
    /// scan: paths not read at all, as globs relative to this file's directory (`src/generated/**`,
    /// `vendor`). A glob that names a directory excludes everything under it; `*` stays within one path
    /// component, `**` crosses them.
    pub exclude: Vec<String>,
    /// scan: rule levels for some paths (ruff's per-file-ignores): each `[[overrides]]` names its `files`
    /// (globs, as `exclude`) and `rules`, which win over `[rules]` there; a later override wins over an
    /// earlier one, and the command line's `-D/-W/--allow` over all of them.
    pub overrides: Vec<Override>,
    /// live: what it does not judge (namespaces, field managers, kinds).
    pub live: LiveConfig,
    /// Where it was read from, if anywhere.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// `[live]`: what live leaves out, each a list of globs over whole names (`kube-*`, `helm*`). A finding whose
/// every object is in an excluded namespace or of an excluded kind, or whose controller is an excluded field
/// manager (or user, or user agent), is not reported; a note counts them. One object or CRD is excused with
/// its annotation `ctrlaudit.io/allow: "CA202: reason"` instead.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LiveConfig {
    /// Namespaces whose objects no finding is about (`kube-system`, `team-*`).
    pub exclude_namespaces: Vec<String>,
    /// Field managers, users or user agents not judged (a CI deploy tool, `helm`, `kubectl-client-side-apply`).
    pub exclude_field_managers: Vec<String>,
    /// Kinds not judged: `Secret`, `Kind.group` (`Certificate.cert-manager.io`) or `plural.group`
    /// (`certificates.cert-manager.io`).
    pub exclude_kinds: Vec<String>,
}

/// Globs over whole names (`[live]`): `*` and `?` match any characters, case-sensitive.
#[derive(Debug, Clone)]
pub struct NameGlobs(globset::GlobSet);

impl NameGlobs {
    /// Compiles `patterns`; the error names the pattern that is not a glob.
    pub fn new(patterns: &[String]) -> Result<Self, String> {
        let mut b = globset::GlobSetBuilder::new();
        for p in patterns {
            b.add(globset::Glob::new(p).map_err(|e| format!("`{p}` is not a glob: {e}"))?);
        }
        b.build().map(Self).map_err(|e| e.to_string())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn matches(&self, name: &str) -> bool {
        self.0.is_match(name)
    }
}

impl LiveConfig {
    /// The three lists by their keys, in the order of [`Self::globs`].
    fn lists(&self) -> [(&'static str, &Vec<String>); 3] {
        [
            ("exclude_namespaces", &self.exclude_namespaces),
            ("exclude_field_managers", &self.exclude_field_managers),
            ("exclude_kinds", &self.exclude_kinds),
        ]
    }

    /// The three lists compiled (checked by [`Config::parse`]; a list that does not compile matches nothing).
    pub fn globs(&self) -> [NameGlobs; 3] {
        self.lists().map(|(_, p)| {
            NameGlobs::new(p).unwrap_or_else(|_| NameGlobs(globset::GlobSet::empty()))
        })
    }
}

/// One `[[overrides]]` table: levels for the files its globs match.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Override {
    /// Globs relative to the configuration file's directory (see `exclude`).
    pub files: Vec<String>,
    /// Rule code or name → level, as in `[rules]`.
    #[serde(default)]
    pub rules: BTreeMap<String, Level>,
}

/// Path globs of `ctrlaudit.toml` (`exclude`, `[[overrides]]`), matched against paths relative to the
/// directory of the file that declares them.
#[derive(Debug, Clone)]
pub struct PathGlobs {
    set: globset::GlobSet,
    /// The configuration file's directory, as an absolute path without symlinks.
    base: PathBuf,
}

impl PathGlobs {
    /// Compiles `patterns`; the error names the pattern that is not a glob.
    pub fn new(patterns: &[String], base: &Path) -> Result<Self, String> {
        let mut b = globset::GlobSetBuilder::new();
        for p in patterns {
            let glob = globset::GlobBuilder::new(p.trim_start_matches("./"))
                .literal_separator(true)
                .build()
                .map_err(|e| format!("`{p}` is not a glob: {e}"))?;
            b.add(glob);
        }
        let set = b.build().map_err(|e| e.to_string())?;
        let base = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
        Ok(Self { set, base })
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Whether `abs` (an absolute path) or a directory above it, below the base, matches a glob. A path
    /// outside the base matches none.
    pub fn matches(&self, abs: &Path) -> bool {
        let Ok(rel) = abs.strip_prefix(&self.base) else {
            return false;
        };
        rel.ancestors()
            .filter(|a| !a.as_os_str().is_empty())
            .any(|a| self.set.is_match(a))
    }
}

/// Errors a caller may want to tell apart.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

pub const FILE_NAME: &str = "ctrlaudit.toml";

/// A table of rule levels keyed by code: a rule may be named by code or name, in any case for the code; one
/// that names no rule is an error naming the `table` it is in.
fn rules_by_code(
    rules: BTreeMap<String, Level>,
    table: &str,
    path: &Path,
) -> Result<BTreeMap<String, Level>, ConfigError> {
    rules
        .into_iter()
        .map(|(key, level)| match crate::rules::find(&key) {
            Some(rule) => Ok((rule.code.to_string(), level)),
            None => Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                message: format!(
                    "unknown rule `{key}` in {table}{} (see `kubectl ctrlaudit rules`)",
                    crate::rules::did_you_mean(&key)
                ),
            }),
        })
        .collect()
}

impl Config {
    /// Parses a config file's text; `path` is for messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let mut c: Config = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string().trim().to_string(),
        })?;
        c.rules = rules_by_code(std::mem::take(&mut c.rules), "[rules]", path)?;
        for o in &mut c.overrides {
            o.rules = rules_by_code(std::mem::take(&mut o.rules), "[[overrides]]", path)?;
            if o.files.is_empty() {
                return Err(ConfigError::Invalid {
                    path: path.to_path_buf(),
                    message: "an [[overrides]] table needs `files`, the paths it applies to".into(),
                });
            }
        }
        c.source = Some(path.to_path_buf());
        // Globs are checked here, so that a bad one is an input error before anything runs.
        let base = c.base_dir();
        for globs in std::iter::once(&c.exclude).chain(c.overrides.iter().map(|o| &o.files)) {
            PathGlobs::new(globs, &base).map_err(|message| ConfigError::Invalid {
                path: path.to_path_buf(),
                message,
            })?;
        }
        for (table, globs) in c.live.lists() {
            NameGlobs::new(globs).map_err(|message| ConfigError::Invalid {
                path: path.to_path_buf(),
                message: format!("[live] {table}: {message}"),
            })?;
        }
        Ok(c)
    }

    /// The directory its path globs are relative to: the file's own, else the current directory.
    pub fn base_dir(&self) -> PathBuf {
        self.source
            .as_deref()
            .and_then(Path::parent)
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }

    /// `exclude`, compiled (see [`PathGlobs`]).
    pub fn excluded(&self) -> PathGlobs {
        self.globs(&self.exclude)
    }

    /// Compiles globs that [`Config::parse`] has already checked (a default config has none).
    pub fn globs(&self, patterns: &[String]) -> PathGlobs {
        let base = self.base_dir();
        PathGlobs::new(patterns, &base).unwrap_or_else(|_| PathGlobs {
            set: globset::GlobSet::empty(),
            base,
        })
    }

    /// Reads `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Finds `ctrlaudit.toml` in `start` or its ancestors; the default config if there is none.
    pub fn discover(start: &Path) -> Result<Self, ConfigError> {
        let abs = std::fs::canonicalize(start).unwrap_or_else(|_| start.to_path_buf());
        let mut dir = if abs.is_dir() {
            Some(abs.as_path())
        } else {
            abs.parent()
        };
        while let Some(d) = dir {
            let candidate = d.join(FILE_NAME);
            if candidate.is_file() {
                return Self::load(&candidate);
            }
            dir = d.parent();
        }
        Ok(Self::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_levels_thresholds_aliases() {
        let c = Config::parse(
            "[rules]\nCA203 = \"error\"\nca304 = \"off\"\n[thresholds]\npolling_requeue_secs = 10\n[aliases]\n\"my::apply_status\" = \"patch_status\"\n",
            Path::new("ctrlaudit.toml"),
        )
        .expect("valid");
        assert_eq!(c.rules.get("CA203"), Some(&Level::Error));
        assert_eq!(c.rules.get("CA304"), Some(&Level::Off));
        assert_eq!(c.thresholds.polling_requeue_secs, 10.0);
        assert_eq!(c.thresholds.error_requeue_secs, 60.0);
        assert_eq!(c.aliases.len(), 1);
    }

    #[test]
    fn metric_name_map_overrides_only_what_it_names() {
        let c = Config::parse(
            "[metrics]\nreconcile_total = \"doc_controller_reconciliations_total\"\nresult_label = \"outcome\"\n",
            Path::new("ctrlaudit.toml"),
        )
        .expect("valid");
        assert_eq!(
            c.metrics.reconcile_total,
            "doc_controller_reconciliations_total"
        );
        assert_eq!(c.metrics.result_label, "outcome");
        assert_eq!(c.metrics.workqueue_depth, "workqueue_depth");
        assert_eq!(Config::default().metrics, MetricNames::default());
        assert!(Config::parse("[metrics]\nreconciles = \"x\"\n", Path::new("x")).is_err());
    }

    #[test]
    fn live_exclusions_are_name_globs_checked_when_read() {
        let c = Config::parse(
            "[live]\nexclude_namespaces = [\"kube-*\"]\nexclude_kinds = [\"Secret\"]\n",
            Path::new("ctrlaudit.toml"),
        )
        .expect("valid");
        let [ns, managers, kinds] = c.live.globs();
        assert!(ns.matches("kube-system") && !ns.matches("shop"));
        assert!(managers.is_empty());
        assert!(kinds.matches("Secret") && !kinds.matches("Secrets"));
        let e = Config::parse(
            "[live]\nexclude_field_managers = [\"helm[\"]\n",
            Path::new("ctrlaudit.toml"),
        )
        .expect_err("a bad glob");
        assert!(
            e.to_string()
                .contains("[live] exclude_field_managers: `helm[` is not a glob"),
            "{e}"
        );
    }

    #[test]
    fn path_globs_match_below_their_base_and_under_a_matched_directory() {
        let base = Path::new("/nonexistent-base");
        let g = PathGlobs::new(
            &["gen".into(), "./src/*.rs".into(), "**/legacy/**".into()],
            base,
        )
        .expect("globs");
        assert!(g.matches(Path::new("/nonexistent-base/gen/op/src/main.rs")));
        assert!(g.matches(Path::new("/nonexistent-base/src/main.rs")));
        // `*` stays within one component; `**` crosses them.
        assert!(!g.matches(Path::new("/nonexistent-base/src/a/main.rs")));
        assert!(g.matches(Path::new("/nonexistent-base/x/legacy/y/z.rs")));
        // Outside the base, nothing matches; nor does the base itself.
        assert!(!g.matches(Path::new("/elsewhere/gen/main.rs")));
        assert!(!g.matches(base));
        assert!(PathGlobs::new(&["a[b".into()], base).is_err());
    }

    #[test]
    fn rejects_unknown_rule_and_key() {
        assert!(Config::parse("[rules]\nCA999 = \"off\"\n", Path::new("x")).is_err());
        assert!(Config::parse("[thresholds]\nnope = 1\n", Path::new("x")).is_err());
        assert!(Config::parse("[rules]\nCA203 = \"loud\"\n", Path::new("x")).is_err());
    }
}
