//! The catalogue: every bench variant, the pair that isolates each rule, and the seed's experiments.

use super::variants::Code;

/// One runnable variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VariantSpec {
    pub name: &'static str,
    pub code: Code,
    /// Worker limit (`controller::Config::concurrency`); 0 = the kube-rs default, unbounded.
    pub workers: u16,
    /// `watcher::Config::streaming_lists()` (experiment 4).
    pub streaming_lists: bool,
    /// The rule this variant shows, for bad variants.
    pub rule: Option<&'static str>,
    /// Runs in a process of its own, over several tenant namespaces (the CA401 designs).
    pub tenant_design: bool,
    pub summary: &'static str,
}

const fn v(
    name: &'static str,
    code: Code,
    workers: u16,
    rule: Option<&'static str>,
    summary: &'static str,
) -> VariantSpec {
    VariantSpec {
        name,
        code,
        workers,
        streaming_lists: false,
        rule,
        tenant_design: matches!(code, Code::PerTenant | Code::Shared),
        summary,
    }
}

/// `base` listing through streaming lists (WatchList), described as such: the list says what each variant is.
const fn watchlist(mut s: VariantSpec, name: &'static str, summary: &'static str) -> VariantSpec {
    s.name = name;
    s.streaming_lists = true;
    s.summary = summary;
    s
}

const GOOD: VariantSpec = v(
    "good",
    Code::Good,
    5,
    None,
    "generation predicate, patch_status (merge), observedGeneration, 5 workers",
);
const GOOD_SINGLE: VariantSpec = v("good-single", Code::Good, 1, None, "good with 1 worker");

/// Every variant, in the order tables list them.
pub static VARIANTS: &[VariantSpec] = &[
    GOOD,
    GOOD_SINGLE,
    v(
        "good-update",
        Code::GoodUpdate,
        5,
        Some(crate::rules::CA301.code),
        "replace_status + retry on 409 (get, retry), 5 workers",
    ),
    v(
        "good-update-single",
        Code::GoodUpdate,
        1,
        Some(crate::rules::CA301.code),
        "good-update with 1 worker",
    ),
    watchlist(
        GOOD,
        "good-watchlist",
        "good, its initial list streamed in the watch (WatchList, sendInitialEvents) instead of LIST + WATCH",
    ),
    watchlist(
        GOOD_SINGLE,
        "good-single-watchlist",
        "good-single, its initial list streamed in the watch (WatchList) instead of LIST + WATCH",
    ),
    v(
        "bad-no-predicate",
        Code::BadNoPredicate,
        5,
        Some(crate::rules::CA201.code),
        "good without the generation predicate",
    ),
    v(
        "bad-annotation-loop",
        Code::BadAnnotationLoop,
        5,
        Some(crate::rules::CA202.code),
        "no predicate + timestamp annotation on every reconcile, 5 workers",
    ),
    v(
        "bad-annotation-loop-single",
        Code::BadAnnotationLoop,
        1,
        Some(crate::rules::CA202.code),
        "bad-annotation-loop with 1 worker",
    ),
    v(
        "bad-status-on-main",
        Code::BadStatusOnMain,
        5,
        Some(crate::rules::CA101.code),
        "status patched through the main resource (dropped by the API server)",
    ),
    v(
        "bad-poll",
        Code::BadPoll,
        5,
        Some(crate::rules::CA203.code),
        "requeue after 1 s on success",
    ),
    v(
        "bad-uncached",
        Code::BadUncached,
        5,
        Some(crate::rules::CA303.code),
        "LIST of the namespace in every reconcile",
    ),
    v(
        "unbounded",
        Code::Unbounded,
        0,
        Some(crate::rules::CA302.code),
        "no with_config: concurrency 0 = unbounded",
    ),
    v(
        "per-tenant",
        Code::PerTenant,
        5,
        Some(crate::rules::CA401.code),
        "one Controller per tenant namespace (own process)",
    ),
    v(
        "shared",
        Code::Shared,
        5,
        None,
        "one cluster-wide Controller for all tenants (own process)",
    ),
    v(
        "bad-cardinality",
        Code::BadCardinality,
        5,
        Some(crate::rules::CA402.code),
        "good + per-object metric labels (namespace, name)",
    ),
    v(
        "good-one-owner",
        Code::GoodOneOwner,
        5,
        None,
        "good + a scaler that owns spec.count (server-side apply); the operator leaves it alone",
    ),
    v(
        "bad-fight",
        Code::BadFight,
        5,
        Some(crate::rules::CA206.code),
        "good-one-owner where the operator also forces spec.count to another value",
    ),
];

/// A variant by name.
pub fn variant(name: &str) -> Option<&'static VariantSpec> {
    VARIANTS.iter().find(|v| v.name == name)
}

/// What a rule's bench pair runs, from the rule registry (the one place a pair is defined).
#[derive(Debug, Clone)]
pub struct RulePair {
    pub code: &'static str,
    pub variants: Vec<&'static str>,
    /// Spec writes per second per namespace by another writer (the conflict pair needs one).
    pub churn: f64,
}

/// Every rule with a bench pair, by code.
pub fn rule_pairs() -> impl Iterator<Item = RulePair> {
    crate::rules::RULES.iter().filter_map(|r| {
        r.bench_pair.map(|p| RulePair {
            code: r.code,
            variants: p.variants().collect(),
            churn: if p.other_writer { DEFAULT_CHURN } else { 0.0 },
        })
    })
}

/// The conflict experiments' other writer: spec writes per second per namespace, on a small hot set.
pub const DEFAULT_CHURN: f64 = 20.0;

/// One of the seed's experiments.
#[derive(Debug, Clone, Copy)]
pub struct Experiment {
    pub name: &'static str,
    pub title: &'static str,
    pub variants: &'static [&'static str],
    pub churn: f64,
}

pub static EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "1",
        title: "anti-patterns vs best practices (predicate × workers, status on the main resource)",
        variants: &[
            "good",
            "good-single",
            "bad-annotation-loop",
            "bad-annotation-loop-single",
            "bad-status-on-main",
        ],
        churn: 0.0,
    },
    Experiment {
        name: "2",
        title: "worker count: 1 vs 5 vs unbounded",
        variants: &["good-single", "good", "unbounded"],
        churn: 0.0,
    },
    Experiment {
        name: "3",
        title: "status by patch vs replace + retry on conflict, with another writer",
        variants: &["good", "good-single", "good-update", "good-update-single"],
        churn: DEFAULT_CHURN,
    },
    Experiment {
        name: "4",
        title: "streaming lists (WatchList) vs LIST+WATCH; start the API server with ConcurrentWatchObjectDecode",
        variants: &[
            "good",
            "good-single",
            "good-watchlist",
            "good-single-watchlist",
        ],
        churn: 0.0,
    },
    Experiment {
        name: "tenants",
        title: "one controller per tenant vs one shared controller (kcp's per-workspace controllers)",
        variants: &["per-tenant", "shared"],
        churn: 0.0,
    },
    Experiment {
        name: "speed",
        title: "creating N Widgets: the harness vs a sequential one-process-per-object loop (kubectl apply)",
        variants: &[],
        churn: 0.0,
    },
];

/// An experiment by name.
pub fn experiment(name: &str) -> Option<&'static Experiment> {
    EXPERIMENTS.iter().find(|e| e.name == name)
}

/// A rule's pair by code (case-insensitive).
pub fn rule_pair(code: &str) -> Option<RulePair> {
    rule_pairs().find(|p| p.code.eq_ignore_ascii_case(code))
}

/// The `--list` text.
pub fn listing() -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_header(["variant", "rule", "workers", "what"]);
    for s in VARIANTS {
        let workers = match s.workers {
            0 => "unbounded".to_string(),
            n if s.tenant_design => format!("{n} per controller"),
            n => n.to_string(),
        };
        t.add_row([
            s.name.to_string(),
            s.rule.unwrap_or("").to_string(),
            workers,
            s.summary.to_string(),
        ]);
    }
    let mut out = format!("{t}\n\nRule pairs (--rule CODE):\n");
    for p in rule_pairs() {
        let what = if p.variants.is_empty() {
            "the API server write-ceiling probe".to_string()
        } else {
            p.variants.join(" vs ")
        };
        let churn = if p.churn > 0.0 {
            format!(" (with --churn {})", p.churn)
        } else {
            String::new()
        };
        out.push_str(&format!("  {}  {what}{churn}\n", p.code));
    }
    out.push_str("\nExperiments (--experiment NAME):\n");
    for e in EXPERIMENTS {
        out.push_str(&format!("  {:<8} {}\n", e.name, e.title));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_references_resolve() {
        for (i, a) in VARIANTS.iter().enumerate() {
            assert!(
                VARIANTS[i + 1..].iter().all(|b| b.name != a.name),
                "{}",
                a.name
            );
            // Namespace names embed the variant name: keep it DNS-1123 and short.
            assert!(
                a.name.len() <= 30 && a.name.bytes().all(|c| c.is_ascii_lowercase() || c == b'-')
            );
        }
        for p in rule_pairs() {
            for n in &p.variants {
                assert!(variant(n).is_some(), "{}: {n}", p.code);
            }
        }
        for e in EXPERIMENTS {
            for n in e.variants {
                assert!(variant(n).is_some(), "experiment {}: {n}", e.name);
            }
        }
    }

    #[test]
    fn a_pair_shows_its_rule_on_the_bad_side_only() {
        for r in crate::rules::RULES {
            let Some(p) = r.bench_pair else {
                assert!(
                    VARIANTS.iter().all(|v| v.rule != Some(r.code)),
                    "{} has variants but no pair",
                    r.code
                );
                continue;
            };
            for n in p.bad {
                assert_eq!(variant(n).map(|v| v.rule), Some(Some(r.code)), "{n}");
            }
            for n in p.good {
                assert_eq!(variant(n).map(|v| v.rule), Some(None), "{n}");
            }
            assert_eq!(
                r.has_lens(crate::finding::Lens::Bench),
                !p.bad.is_empty(),
                "{}: the bench lens and the bench pair disagree",
                r.code
            );
        }
    }
}
