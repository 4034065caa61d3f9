//! The rule registry: every rule's metadata in one static list, sorted by code.

use crate::finding::{Lens, Severity};

/// Static metadata of one rule. The detectors live in `scan/rules/` and `live/detectors/`,
/// the docs in `rules/<CODE>-<name>.md`.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub code: &'static str,
    pub name: &'static str,
    pub summary: &'static str,
    pub default_severity: Severity,
    pub lenses: &'static [Lens],
    /// The bench variants that isolate the rule, if any: where `bench --rule CODE`, `rules` and the
    /// README's table read them from.
    pub bench_pair: Option<BenchPair>,
    pub origin: &'static str,
}

/// What `bench --rule CODE` runs: the variants that show the anti-pattern, the ones they are compared
/// with, and whether the comparison needs another writer on the objects (the conflict experiment). Both
/// lists empty: the measurement is the API server's write-ceiling probe itself.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct BenchPair {
    pub bad: &'static [&'static str],
    pub good: &'static [&'static str],
    pub other_writer: bool,
}

impl BenchPair {
    const fn new(bad: &'static [&'static str], good: &'static [&'static str]) -> Option<Self> {
        Some(Self {
            bad,
            good,
            other_writer: false,
        })
    }

    /// Every variant it runs, the bad ones first.
    pub fn variants(&self) -> impl Iterator<Item = &'static str> {
        self.bad.iter().chain(self.good).copied()
    }

    /// "bad-poll vs good", as the catalogue and README show it.
    pub fn label(&self) -> String {
        if self.bad.is_empty() && self.good.is_empty() {
            return "the API server write-ceiling probe".to_string();
        }
        let mut s = self.variants().collect::<Vec<_>>().join(" vs ");
        if self.other_writer {
            s.push_str(", with another writer");
        }
        s
    }
}

impl Rule {
    pub fn has_lens(&self, lens: Lens) -> bool {
        self.lenses.contains(&lens)
    }

    /// File name of the rule's doc in `rules/`.
    pub fn doc_file(&self) -> String {
        format!("{}-{}.md", self.code, self.name)
    }

    /// Where the doc is published; used as SARIF `helpUri`.
    pub fn help_uri(&self) -> String {
        format!("{}/blob/main/rules/{}", REPOSITORY_URL, self.doc_file())
    }

    /// The rule's doc, compiled into the binary so that `rules CODE` works anywhere.
    pub fn doc(&self) -> &'static str {
        DOCS.iter()
            .find(|(code, _)| *code == self.code)
            .map(|(_, doc)| *doc)
            .unwrap_or("")
    }
}

pub const REPOSITORY_URL: &str = "https://github.com/kubectl-ctrlaudit/kubectl-ctrlaudit";

use Lens::{Bench, Live, Scan};
use Severity::{Error, Info, Warning};

/// Every rule, sorted by code. Codes are never reused.
pub static RULES: &[Rule] = &[
    Rule {
        code: "CA001",
        name: "unparsable-source",
        summary: "a file could not be read or parsed; the rest of the tree was scanned",
        default_severity: Warning,
        lenses: &[Scan],
        bench_pair: None,
        origin: "tool",
    },
    Rule {
        code: "CA002",
        name: "unused-suppression",
        summary: "an allow comment that matches no finding (or has no reason)",
        default_severity: Warning,
        lenses: &[Scan],
        bench_pair: None,
        origin: "tool",
    },
    Rule {
        code: "CA101",
        name: "status-written-through-main-resource",
        summary: "status sent with patch/replace of the main resource is dropped by the API server",
        default_severity: Error,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-status-on-main"], &["good"]),
        origin: "seed 1: status silently dropped, 0/N Ready",
    },
    Rule {
        code: "CA102",
        name: "convergence-lag",
        summary: "generation ahead of status.observedGeneration, or not Ready, for longer than a threshold",
        default_severity: Warning,
        lenses: &[Live],
        bench_pair: None,
        origin: "live: objects that never converge",
    },
    Rule {
        code: "CA201",
        name: "reconcile-without-generation-predicate",
        summary: "a Controller without a generation predicate reconciles again on its own status and metadata writes",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-no-predicate"], &["good"]),
        origin: "seed 1, experiment 1",
    },
    Rule {
        code: "CA202",
        name: "volatile-value-written-every-reconcile",
        summary: "a timestamp or nonce written to the reconciled object on every reconcile: an endless loop",
        default_severity: Error,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-annotation-loop"], &["good"]),
        origin: "seed 1: timestamp annotation, endless reconcile loop",
    },
    Rule {
        code: "CA203",
        name: "polling-requeue",
        summary: "a short requeue on the success path polls instead of waiting for changes",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-poll"], &["good"]),
        origin: "seed 2: poll-based workspace deletion (kcp#4047)",
    },
    Rule {
        code: "CA204",
        name: "error-requeue-without-backoff",
        summary: "error_policy returns one constant short requeue: failing objects retry hot",
        default_severity: Warning,
        lenses: &[Scan],
        bench_pair: None,
        origin: "kube-rs has no per-object error backoff",
    },
    Rule {
        code: "CA205",
        name: "watcher-without-backoff",
        summary: "a watcher consumed outside a Controller without a backoff re-lists in a hot loop on errors",
        default_severity: Warning,
        lenses: &[Scan],
        bench_pair: None,
        origin: "kube-rs watcher recovers with no delay unless a backoff is added",
    },
    Rule {
        code: "CA206",
        name: "field-ownership-fight",
        summary: "two field managers keep setting one field to different values: it flips forever",
        default_severity: Error,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-fight"], &["good-one-owner"]),
        origin: "server-side apply field ownership; an operator and an HPA on replicas",
    },
    Rule {
        code: "CA301",
        name: "replace-without-conflict-handling",
        summary: "a replace (PUT with resourceVersion) whose 409 Conflict is propagated, not retried",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: Some(BenchPair {
            bad: &["good-update"],
            good: &["good"],
            other_writer: true,
        }),
        origin: "seed 1, experiment 3: 409 conflicts",
    },
    Rule {
        code: "CA302",
        name: "unbounded-reconcile-concurrency",
        summary: "a Controller run without a concurrency limit (kube-rs default 0 = unbounded)",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["unbounded"], &["good-single", "good"]),
        origin: "seed 1, experiment 2",
    },
    Rule {
        code: "CA303",
        name: "uncached-read-in-reconcile",
        summary: "an API get/list on every reconcile instead of reading the reflector Store",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-uncached"], &["good"]),
        origin: "LIST/GET per reconcile instead of a Store",
    },
    Rule {
        code: "CA304",
        name: "sequential-writes-in-loop",
        summary: "API writes awaited one at a time in a loop",
        default_severity: Info,
        lenses: &[Scan],
        bench_pair: None,
        origin: "seed 2: sequential bootstrap, ~30 s saved by parallel tiers",
    },
    Rule {
        code: "CA305",
        name: "blocking-call-in-async-reconcile",
        summary: "a blocking call (thread::sleep, std::fs, blocking HTTP, std Mutex across .await) in async reconcile",
        default_severity: Warning,
        lenses: &[Scan],
        bench_pair: None,
        origin: "blocking calls stall the tokio worker that runs every other reconcile",
    },
    Rule {
        code: "CA401",
        name: "controller-per-tenant",
        summary: "one Controller or watcher per namespace/tenant multiplies memory, tasks and watches",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["per-tenant"], &["shared"]),
        origin: "seed 2: per-workspace GC/quota controllers, 9.8 -> 3.1 MiB per workspace",
    },
    Rule {
        code: "CA402",
        name: "unbounded-metric-label",
        summary: "a metric label fed by an object name, namespace, uid or error text: series grow without bound",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-cardinality"], &["good"]),
        origin: "seed 2: ~140,000 series from per-workspace labels",
    },
    Rule {
        code: "CA403",
        name: "write-rate-near-apiserver-ceiling",
        summary: "a controller's write rate is close to the API server's measured write ceiling",
        default_severity: Warning,
        lenses: &[Live],
        bench_pair: BenchPair::new(&[], &[]),
        origin: "seed 1: ~24 writes/s etcd ceiling on Kind",
    },
];

/// The rule docs, embedded at build time.
static DOCS: &[(&str, &str)] = &[
    ("CA001", include_str!("../rules/CA001-unparsable-source.md")),
    (
        "CA002",
        include_str!("../rules/CA002-unused-suppression.md"),
    ),
    (
        "CA101",
        include_str!("../rules/CA101-status-written-through-main-resource.md"),
    ),
    ("CA102", include_str!("../rules/CA102-convergence-lag.md")),
    (
        "CA201",
        include_str!("../rules/CA201-reconcile-without-generation-predicate.md"),
    ),
    (
        "CA202",
        include_str!("../rules/CA202-volatile-value-written-every-reconcile.md"),
    ),
    ("CA203", include_str!("../rules/CA203-polling-requeue.md")),
    (
        "CA204",
        include_str!("../rules/CA204-error-requeue-without-backoff.md"),
    ),
    (
        "CA205",
        include_str!("../rules/CA205-watcher-without-backoff.md"),
    ),
    (
        "CA206",
        include_str!("../rules/CA206-field-ownership-fight.md"),
    ),
    (
        "CA301",
        include_str!("../rules/CA301-replace-without-conflict-handling.md"),
    ),
    (
        "CA302",
        include_str!("../rules/CA302-unbounded-reconcile-concurrency.md"),
    ),
    (
        "CA303",
        include_str!("../rules/CA303-uncached-read-in-reconcile.md"),
    ),
    (
        "CA304",
        include_str!("../rules/CA304-sequential-writes-in-loop.md"),
    ),
    (
        "CA305",
        include_str!("../rules/CA305-blocking-call-in-async-reconcile.md"),
    ),
    (
        "CA401",
        include_str!("../rules/CA401-controller-per-tenant.md"),
    ),
    (
        "CA402",
        include_str!("../rules/CA402-unbounded-metric-label.md"),
    ),
    (
        "CA403",
        include_str!("../rules/CA403-write-rate-near-apiserver-ceiling.md"),
    ),
];

/// Looks a rule up by code (case-insensitive) or by name.
pub fn find(code_or_name: &str) -> Option<&'static Rule> {
    RULES
        .iter()
        .find(|r| r.code.eq_ignore_ascii_case(code_or_name) || r.name == code_or_name)
}

/// The catalogue as the Markdown table README shows between its `rules-table` markers (a test keeps
/// them equal, so the table changes where the rule does).
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| code | name | severity | lenses | bench pair | what |\n|---|---|---|---|---|---|\n",
    );
    for r in RULES {
        let lenses: Vec<&str> = r.lenses.iter().map(|l| l.as_str()).collect();
        let pair = r.bench_pair.map(|p| p.label()).unwrap_or_default();
        out.push_str(&format!(
            "| {} | [{}](rules/{}) | {} | {} | {} | {} |\n",
            r.code,
            r.name,
            r.doc_file(),
            r.default_severity.as_str(),
            lenses.join(", "),
            pair,
            r.summary
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_unique() {
        for w in RULES.windows(2) {
            assert!(w[0].code < w[1].code, "{} !< {}", w[0].code, w[1].code);
        }
    }
}
