//! One policy step for every lens: a finding's level is its detector's, then `[rules]` in `ctrlaudit.toml`,
//! then the `[[overrides]]` whose globs match the finding's file, then `-D/--deny`, `-W/--warn` and `--allow` on
//! the command line (which win). A code that names no rule is
//! an input error (exit 2) wherever it is written.

use crate::config::{Config, Level, PathGlobs};
use crate::finding::{Finding, Severity};
use crate::rules;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The level flags of `scan` and `live`. `--allow` has no `-A`: in this kubectl plugin `-A` is
/// `--all-namespaces`, as in kubectl.
/// The `clap` feature makes them flags; the library alone (ctrlaudit-scan) builds them by hand.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct PolicyArgs {
    /// Treat CODE (or rule name) as an error (repeatable, or comma-separated).
    #[cfg_attr(
        feature = "clap",
        arg(short = 'D', long = "deny", value_name = "CODE", value_delimiter = ',')
    )]
    pub deny: Vec<String>,
    /// Treat CODE as a warning.
    #[cfg_attr(
        feature = "clap",
        arg(short = 'W', long = "warn", value_name = "CODE", value_delimiter = ',')
    )]
    pub warn: Vec<String>,
    /// Turn CODE off.
    #[cfg_attr(
        feature = "clap",
        arg(long = "allow", value_name = "CODE", value_delimiter = ',')
    )]
    pub allow: Vec<String>,
}

/// A rule code or name on the command line that names no rule.
#[derive(Debug, thiserror::Error)]
#[error("unknown rule {0:?} in {1}{hint} (see `kubectl ctrlaudit rules`)", hint = rules::did_you_mean(.0))]
pub struct UnknownRule(pub String, pub &'static str);

/// A rule code's level; `None` is off.
type Levels = BTreeMap<&'static str, Option<Severity>>;

/// Every rule's level after configuration and flags.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// `[rules]`.
    levels: Levels,
    /// `[[overrides]]`, in the file's order: a later one wins where both match.
    overrides: Vec<(PathGlobs, Levels)>,
    /// `-D/-W/--allow`, which win over the file.
    flags: Levels,
    /// What relative finding paths are relative to (resolved once).
    cwd: PathBuf,
}

/// Levels by rule code, from codes [`Config::parse`] has already checked.
fn levels_of(rules: &BTreeMap<String, Level>) -> Levels {
    rules
        .iter()
        .filter_map(|(code, level)| rules::find(code).map(|r| (r.code, level.severity())))
        .collect()
}

impl Policy {
    /// `ctrlaudit.toml`'s levels and overrides (whose codes and globs [`Config::parse`] has already checked), then
    /// the flags.
    pub fn new(config: &Config, args: &PolicyArgs) -> Result<Self, UnknownRule> {
        let mut flags = BTreeMap::new();
        for (codes, flag, level) in [
            (&args.deny, "--deny", Some(Severity::Error)),
            (&args.warn, "--warn", Some(Severity::Warning)),
            (&args.allow, "--allow", None),
        ] {
            for c in codes {
                let rule = rules::find(c.trim()).ok_or_else(|| UnknownRule(c.clone(), flag))?;
                flags.insert(rule.code, level);
            }
        }
        let overrides = config
            .overrides
            .iter()
            .map(|o| (config.globs(&o.files), levels_of(&o.rules)))
            .collect();
        let cwd = std::env::current_dir()
            .and_then(std::fs::canonicalize)
            .unwrap_or_default();
        Ok(Self {
            levels: levels_of(&config.rules),
            overrides,
            flags,
            cwd,
        })
    }

    /// The level `[[overrides]]` give `code` at the finding's file, if one that matches it names the rule.
    fn override_level(&self, f: &Finding, code: &str) -> Option<Option<Severity>> {
        if self.overrides.is_empty() {
            return None;
        }
        let path = self.cwd.join(&f.subject.span()?.file);
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        self.overrides
            .iter()
            .rev()
            .find_map(|(globs, levels)| levels.get(code).filter(|_| globs.matches(&path)))
            .copied()
    }

    /// The configuration's levels alone.
    pub fn from_config(config: &Config) -> Self {
        Self::new(config, &PolicyArgs::default()).unwrap_or_default()
    }

    /// Sets each finding's level and drops the findings of rules that are off.
    pub fn apply(&self, findings: &mut Vec<Finding>) {
        findings.retain_mut(|f| {
            let code = f.code.as_str();
            let level = self
                .flags
                .get(code)
                .copied()
                .or_else(|| self.override_level(f, code))
                .or_else(|| self.levels.get(code).copied());
            match level {
                None => true,
                Some(None) => false,
                Some(Some(s)) => {
                    f.severity = s;
                    true
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Lens, Subject};
    use std::path::Path;

    fn finding(code: &str, severity: Severity) -> Finding {
        Finding {
            code: code.into(),
            severity,
            lens: Lens::Scan,
            message: String::new(),
            subject: Subject::Controller {
                manager: None,
                user: None,
                user_agent: None,
                actor: None,
            },
            evidence: Vec::new(),
            help: String::new(),
            objects: Vec::new(),
            when: None,
        }
    }

    #[test]
    fn flags_win_over_the_file_and_off_drops() {
        let cfg = Config::parse(
            "[rules]\nCA203 = \"error\"\nCA304 = \"off\"\n",
            Path::new("ctrlaudit.toml"),
        )
        .expect("valid");
        let args = PolicyArgs {
            warn: vec!["CA203".into()],
            allow: vec!["volatile-value-written-every-reconcile".into()],
            ..PolicyArgs::default()
        };
        let p = Policy::new(&cfg, &args).expect("known codes");
        let mut f = vec![
            finding("CA203", Severity::Info),
            finding("CA304", Severity::Info),
            finding("CA202", Severity::Error),
            finding("CA101", Severity::Error),
        ];
        p.apply(&mut f);
        let got: Vec<_> = f.iter().map(|f| (f.code.as_str(), f.severity)).collect();
        assert_eq!(
            got,
            [("CA203", Severity::Warning), ("CA101", Severity::Error)]
        );
    }

    #[test]
    fn an_unknown_code_is_an_error_naming_the_flag() {
        let args = PolicyArgs {
            deny: vec!["CA999".into()],
            ..PolicyArgs::default()
        };
        let e = Policy::new(&Config::default(), &args).expect_err("unknown");
        assert_eq!(
            e.to_string(),
            "unknown rule \"CA999\" in --deny (see `kubectl ctrlaudit rules`)"
        );
    }
}
