//! `kubectl ctrlaudit bench` arguments, and their validation into a [`Plan`] before anything touches a cluster.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::catalog::{self, VariantSpec};

/// `kubectl ctrlaudit bench`: run built-in good/bad controllers against the cluster and measure the cost.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    /// Variants to run side by side, comma-separated (see --list).
    #[arg(long, value_delimiter = ',', value_name = "A,B,…")]
    pub variants: Vec<String>,
    /// Run the pair of variants that isolates this rule, e.g. CA202.
    #[arg(long, value_name = "CODE")]
    pub rule: Option<String>,
    /// Reproduce an experiment: 1, 2, 3, 4, tenants or speed (see --list).
    #[arg(long, value_name = "NAME")]
    pub experiment: Option<String>,
    /// Widgets per variant (the tenant designs spread them over --tenants namespaces; speed creates N twice).
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub objects: u64,
    /// Observation window, e.g. 60s, 2m.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "60s",
        allow_hyphen_values = true
    )]
    pub duration: String,
    /// Simulated work per reconcile (an async sleep), e.g. 10ms.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "10ms",
        allow_hyphen_values = true
    )]
    pub work: String,
    /// Tenant namespaces for the per-tenant and shared designs.
    #[arg(long, value_name = "T", default_value_t = 20)]
    pub tenants: u32,
    /// Another writer: spec writes per second per namespace on a hot set of 3 objects, during the first 3/4 of
    /// the window (default: 20 for experiment 3 and CA301, else 0).
    #[arg(long, value_name = "PER_SECOND", allow_hyphen_values = true)]
    pub churn: Option<f64>,
    /// After the window, keep running and measuring until every variant has settled (no reconcile for 5 s,
    /// nothing queued, no worker busy), for at most this long; 0s ends at the window. A variant that never
    /// settles (a loop) runs to the limit and is reported as not settled.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "0s",
        allow_hyphen_values = true
    )]
    pub settle: String,
    /// Leave the run's namespaces and Widgets in place at the end (to inspect them with kubectl); the report
    /// prints the command that removes them. Ctrl-C and errors still clean up.
    #[arg(long)]
    pub keep: bool,
    /// Length of the API server write-ceiling probe before the run; 0s skips it.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5s",
        allow_hyphen_values = true
    )]
    pub probe: String,
    /// Where the CSVs, the chart and report.json go (default: ./ctrlaudit-bench/<run id>).
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// After deleting its namespaces, finalize the ones still Terminating (for control planes without a
    /// namespace controller, such as testenv; on a real cluster leave this off).
    #[arg(long)]
    pub finalize_namespaces: bool,
    /// Delete what an interrupted run left behind (its namespaces and Widgets; the CRD if that run created
    /// it), then exit.
    #[arg(long, value_name = "RUN_ID")]
    pub cleanup: Option<String>,
    /// List the variants, rule pairs and experiments, then exit.
    #[arg(long)]
    pub list: bool,
    #[command(subcommand)]
    pub internal: Option<Internal>,
}

/// Modes the harness starts itself in (hidden).
#[derive(Debug, Subcommand)]
pub enum Internal {
    /// Create one Widget the way `kubectl apply -f` does (GET, then POST with the last-applied annotation),
    /// in the namespace given with -n: one process per object, for the speed comparison.
    #[command(name = "create-one", hide = true)]
    CreateOne {
        #[arg(long)]
        name: String,
        #[arg(long)]
        run: String,
    },
    /// Run a tenant design in this process until stdin closes; prints `listening ADDR` first.
    #[command(name = "child", hide = true)]
    Child {
        #[arg(long)]
        variant: String,
        #[arg(long, value_delimiter = ',')]
        namespaces: Vec<String>,
        #[arg(long)]
        selector: String,
        #[arg(long, default_value = "10ms")]
        work: String,
    },
}

/// A usage error: the message says what was expected and what was found (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// What a run does, validated.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `experiment 1`, `rule CA202`, `variants good,bad-poll`.
    pub title: String,
    /// File-name-safe version of the title (chart name).
    pub slug: String,
    pub kind: PlanKind,
    pub variants: Vec<&'static VariantSpec>,
    pub objects: u64,
    pub duration: Duration,
    pub work: Duration,
    pub tenants: u32,
    pub churn: f64,
    /// How long past the window to wait for every variant to settle (zero: not at all).
    pub settle: Duration,
    pub keep: bool,
    pub probe: Duration,
    pub output_dir: Option<PathBuf>,
    pub finalize_namespaces: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanKind {
    /// Run variants for a window.
    Variants,
    /// Only the write-ceiling probe (CA403).
    ProbeOnly,
    /// The creation-speed comparison.
    Speed,
}

/// Limits that catch typos (`--objects 2000000`, `--duration 60h`) before they load a cluster for hours.
pub const MAX_OBJECTS: u64 = 100_000;
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);
pub const MAX_WORK: Duration = Duration::from_secs(60);
pub const MAX_PROBE: Duration = Duration::from_secs(300);
pub const MAX_SETTLE: Duration = Duration::from_secs(3600);
pub const MAX_TENANTS: u32 = 2_000;
pub const MAX_CHURN: f64 = 1_000.0;

/// Parses a duration flag (the grammar of [`crate::duration`]); the error names the flag.
pub fn parse_duration(flag: &str, text: &str) -> Result<Duration, UsageError> {
    crate::duration::parse(text).map_err(|e| usage(format!("--{flag} {e}")))
}

fn bounded(flag: &str, text: &str, min: Duration, max: Duration) -> Result<Duration, UsageError> {
    let d = parse_duration(flag, text)?;
    if d < min {
        return Err(usage(format!(
            "--{flag} {text}: must be at least {}",
            crate::duration::format(min)
        )));
    }
    if d > max {
        return Err(usage(format!(
            "--{flag} {text}: more than the limit of {}; a typo?",
            crate::duration::format(max)
        )));
    }
    Ok(d)
}

fn known_variants() -> String {
    catalog::VARIANTS
        .iter()
        .map(|v| v.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl BenchArgs {
    /// Validates the arguments into a plan. Every usage problem is reported here, before any cluster call.
    pub fn plan(&self) -> Result<Plan, UsageError> {
        let chosen = [
            !self.variants.is_empty(),
            self.rule.is_some(),
            self.experiment.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if chosen == 0 {
            return Err(usage(
                "choose what to run: --variants A,B, --rule CODE or --experiment 1|2|3|4|tenants|speed (see --list)",
            ));
        }
        if chosen > 1 {
            return Err(usage(
                "--variants, --rule and --experiment are alternatives: give exactly one",
            ));
        }
        let mut kind = PlanKind::Variants;
        let mut default_churn = 0.0;
        let (title, names): (String, Vec<String>) = if let Some(code) = &self.rule {
            let Some(rule) = crate::rules::find(code) else {
                return Err(usage(format!(
                    "unknown rule {code:?}{} (see `kubectl ctrlaudit rules`)",
                    crate::rules::did_you_mean(code)
                )));
            };
            let Some(pair) = catalog::rule_pair(rule.code) else {
                let with: Vec<&str> = catalog::rule_pairs().map(|p| p.code).collect();
                return Err(usage(format!(
                    "rule {} has no bench pair; rules with one: {}",
                    rule.code,
                    with.join(", ")
                )));
            };
            if pair.variants.is_empty() {
                kind = PlanKind::ProbeOnly;
            }
            default_churn = pair.churn;
            (
                format!("rule {}", rule.code),
                pair.variants.iter().map(|s| s.to_string()).collect(),
            )
        } else if let Some(name) = &self.experiment {
            let Some(e) = catalog::experiment(name.trim()) else {
                let names: Vec<&str> = catalog::EXPERIMENTS.iter().map(|e| e.name).collect();
                return Err(usage(format!(
                    "unknown experiment {name:?}; known: {}",
                    names.join(", ")
                )));
            };
            if e.name == "speed" {
                kind = PlanKind::Speed;
            }
            default_churn = e.churn;
            (
                format!("experiment {}", e.name),
                e.variants.iter().map(|s| s.to_string()).collect(),
            )
        } else {
            let names: Vec<String> = self
                .variants
                .iter()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            if names.is_empty() {
                return Err(usage(format!(
                    "--variants is empty; known: {}",
                    known_variants()
                )));
            }
            (format!("variants {}", names.join(",")), names)
        };
        let mut variants = Vec::new();
        for n in &names {
            let Some(spec) = catalog::variant(n) else {
                return Err(usage(format!(
                    "unknown variant {n:?}; known: {}",
                    known_variants()
                )));
            };
            if variants.iter().any(|v: &&VariantSpec| v.name == spec.name) {
                return Err(usage(format!("variant {n:?} is listed twice")));
            }
            variants.push(spec);
        }
        if self.objects == 0 {
            return Err(usage("--objects 0: a bench needs at least one object"));
        }
        if self.objects > MAX_OBJECTS {
            return Err(usage(format!(
                "--objects {}: more than the limit of {MAX_OBJECTS}; a typo?",
                self.objects
            )));
        }
        let duration = bounded(
            "duration",
            &self.duration,
            Duration::from_secs(1),
            MAX_DURATION,
        )?;
        let work = bounded("work", &self.work, Duration::ZERO, MAX_WORK)?;
        let probe = bounded("probe", &self.probe, Duration::ZERO, MAX_PROBE)?;
        let settle = bounded("settle", &self.settle, Duration::ZERO, MAX_SETTLE)?;
        if kind == PlanKind::ProbeOnly && probe.is_zero() {
            return Err(usage(
                "--rule CA403 is the write-ceiling probe: --probe 0s would measure nothing",
            ));
        }
        if self.tenants == 0 || self.tenants > MAX_TENANTS {
            return Err(usage(format!(
                "--tenants {}: expected 1 to {MAX_TENANTS}",
                self.tenants
            )));
        }
        let churn = self.churn.unwrap_or(default_churn);
        if !churn.is_finite() || !(0.0..=MAX_CHURN).contains(&churn) {
            return Err(usage(format!(
                "--churn {churn}: expected 0 to {MAX_CHURN} writes per second"
            )));
        }
        // Variant lists make long names: the chart of a --variants run is variants.svg.
        let slug_source = if self.variants.is_empty() {
            title.as_str()
        } else {
            "variants"
        };
        let slug = slug_source
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect::<String>();
        Ok(Plan {
            title,
            slug,
            kind,
            variants,
            objects: self.objects,
            duration,
            work,
            tenants: self.tenants,
            churn,
            settle,
            keep: self.keep,
            probe,
            output_dir: self.output_dir.clone(),
            finalize_namespaces: self.finalize_namespaces,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct T {
        #[command(flatten)]
        a: BenchArgs,
    }

    fn plan(args: &[&str]) -> Result<Plan, UsageError> {
        let mut v = vec!["bench"];
        v.extend_from_slice(args);
        T::try_parse_from(v).expect("clap parses").a.plan()
    }

    fn err(args: &[&str]) -> String {
        plan(args).expect_err("should be a usage error").0
    }

    #[test]
    fn duration_errors_name_the_flag() {
        let e = parse_duration("work", "5 parsecs")
            .expect_err("not a duration")
            .0;
        assert!(e.starts_with("--work \"5 parsecs\": unknown unit"), "{e}");
        assert_eq!(
            parse_duration("work", "10ms").ok(),
            Some(Duration::from_millis(10))
        );
    }

    #[test]
    fn valid_plans() {
        let p = plan(&["--experiment", "1"]).expect("experiment 1");
        assert_eq!(p.variants.len(), 5);
        assert_eq!(p.objects, 200);
        assert_eq!(p.duration, Duration::from_secs(60));
        assert_eq!(p.churn, 0.0);
        let p = plan(&["--rule", "ca301", "--objects", "50", "--duration", "30s"]).expect("CA301");
        assert_eq!(p.churn, catalog::DEFAULT_CHURN);
        assert_eq!(p.title, "rule CA301");
        let p = plan(&["--variants", "good,bad-poll", "--work", "0"]).expect("variants");
        assert_eq!(p.variants[1].name, "bad-poll");
        assert_eq!(p.work, Duration::ZERO);
        assert_eq!(
            plan(&["--rule", "CA403"]).expect("probe").kind,
            PlanKind::ProbeOnly
        );
        assert_eq!(
            plan(&["--experiment", "speed"]).expect("speed").kind,
            PlanKind::Speed
        );
        assert_eq!(plan(&["--rule", "CA202"]).expect("slug").slug, "rule-ca202");
        let p = plan(&["--rule", "CA202"]).expect("defaults");
        assert_eq!((p.settle, p.keep), (Duration::ZERO, false));
        let p = plan(&["--rule", "CA202", "--settle", "2m", "--keep"]).expect("settle");
        assert_eq!((p.settle, p.keep), (Duration::from_secs(120), true));
    }

    #[test]
    fn bad_input_is_a_clear_usage_error() {
        assert!(err(&[]).contains("choose what to run"));
        assert!(err(&["--rule", "CA201", "--experiment", "1"]).contains("alternatives"));
        assert!(err(&["--variants", "good,nope"]).contains("unknown variant \"nope\""));
        assert!(err(&["--variants", "good,good"]).contains("twice"));
        assert!(err(&["--rule", "CA999"]).contains("unknown rule"));
        assert!(err(&["--rule", "CA204"]).contains("has no bench pair"));
        assert!(err(&["--experiment", "9"]).contains("unknown experiment"));
        assert!(err(&["--rule", "CA201", "--objects", "0"]).contains("at least one object"));
        assert!(err(&["--rule", "CA201", "--objects", "1000000"]).contains("limit"));
        assert!(err(&["--rule", "CA201", "--duration", "-5s"]).contains("negative"));
        assert!(err(&["--rule", "CA201", "--duration", "0s"]).contains("at least 1s"));
        assert!(err(&["--rule", "CA201", "--duration", "400h"]).contains("limit"));
        assert!(err(&["--rule", "CA201", "--duration", "soon"]).contains("--duration"));
        assert!(err(&["--rule", "CA201", "--churn", "-1"]).contains("--churn"));
        assert!(err(&["--rule", "CA201", "--tenants", "0"]).contains("--tenants"));
        assert!(err(&["--rule", "CA403", "--probe", "0s"]).contains("measure nothing"));
        assert!(err(&["--rule", "CA201", "--settle", "-1s"]).contains("--settle"));
        assert!(err(&["--rule", "CA201", "--settle", "2d"]).contains("--settle"));
        assert!(err(&["--rule", "CA201", "--settle", "9h"]).contains("limit"));
    }
}
