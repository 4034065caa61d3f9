//! The rule registry: one typed static per rule (`rules::CA202`), its doc embedded from `rules/`, and
//! [`RULES`], every rule sorted by code. Code elsewhere names a rule by its static (`rules::CA202.code`),
//! so a mistyped code is a compile error, not a rule that silently never matches.

use crate::finding::{Lens, Severity};

/// Static metadata of one rule. The detectors live in `crates/ctrlaudit-scan/src/rules/` and `src/live/detectors/`,
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
    /// `rules/<CODE>-<name>.md`, compiled in so that `rules CODE` works anywhere.
    doc: &'static str,
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
        self.doc
    }
}

pub const REPOSITORY_URL: &str = "https://github.com/kubectl-ctrlaudit/kubectl-ctrlaudit";

use Lens::{Bench, Live, Scan};
use Severity::{Error, Info, Warning};

/// Declares each rule's static and [`RULES`]. The code is the static's name and the doc's file name is
/// derived from code and name, so neither can drift from the other: a doc missing or misnamed fails the
/// build (`include_str!`).
macro_rules! rules {
    ($($code:ident $name:literal { $($field:ident: $value:expr),* $(,)? })*) => {
        $(
            #[doc = concat!("`", stringify!($code), "` ", $name, " (`rules/", stringify!($code), "-", $name, ".md`).")]
            pub static $code: Rule = Rule {
                code: stringify!($code),
                name: $name,
                doc: include_str!(concat!("../rules/", stringify!($code), "-", $name, ".md")),
                $($field: $value),*
            };
        )*
        /// Every rule, sorted by code. Codes are never reused.
        pub static RULES: &[&Rule] = &[$(&$code),*];
    };
}

rules! {
    CA001 "unparsable-source" {
        summary: "a file could not be read or parsed; the rest of the tree was scanned",
        default_severity: Warning,
        lenses: &[Scan],
        bench_pair: None,
        origin: "tool",
    }
    CA002 "unused-suppression" {
        summary: "an allow comment that matches no finding (or has no reason)",
        default_severity: Warning,
        lenses: &[Scan],
        bench_pair: None,
        origin: "tool",
    }
    CA101 "status-written-through-main-resource" {
        summary: "status sent with patch/replace of the main resource is dropped by the API server",
        default_severity: Error,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-status-on-main"], &["good"]),
        origin: "seed 1: status silently dropped, 0/N Ready",
    }
    CA102 "convergence-lag" {
        summary: "generation ahead of status.observedGeneration, or not Ready, for longer than a threshold",
        default_severity: Warning,
        lenses: &[Live],
        bench_pair: None,
        origin: "live: objects that never converge",
    }
    CA201 "reconcile-without-generation-predicate" {
        summary: "a Controller without a generation predicate reconciles again on its own status and metadata writes",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-no-predicate"], &["good"]),
        origin: "seed 1, experiment 1",
    }
    CA202 "volatile-value-written-every-reconcile" {
        summary: "a timestamp or nonce written to the reconciled object on every reconcile: an endless loop",
        default_severity: Error,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-annotation-loop"], &["good"]),
        origin: "seed 1: timestamp annotation, endless reconcile loop",
    }
    CA203 "polling-requeue" {
        summary: "a short requeue on the success path polls instead of waiting for changes",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-poll"], &["good"]),
        origin: "seed 2: poll-based workspace deletion (kcp#4047)",
    }
    CA204 "error-requeue-without-backoff" {
        summary: "error_policy returns one constant short requeue: failing objects retry hot",
        default_severity: Warning,
        lenses: &[Scan],
        bench_pair: None,
        origin: "kube-rs has no per-object error backoff",
    }
    CA205 "watcher-without-backoff" {
        summary: "a watcher consumed outside a Controller without a backoff re-lists in a hot loop on errors",
        default_severity: Warning,
        lenses: &[Scan],
        bench_pair: None,
        origin: "kube-rs watcher recovers with no delay unless a backoff is added",
    }
    CA206 "field-ownership-fight" {
        summary: "two field managers keep setting one field to different values: it flips forever",
        default_severity: Error,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-fight"], &["good-one-owner"]),
        origin: "server-side apply field ownership; an operator and an HPA on replicas",
    }
    CA301 "replace-without-conflict-handling" {
        summary: "a replace (PUT with resourceVersion) whose 409 Conflict is propagated, not retried",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: Some(BenchPair {
            bad: &["good-update"],
            good: &["good"],
            other_writer: true,
        }),
        origin: "seed 1, experiment 3: 409 conflicts",
    }
    CA302 "unbounded-reconcile-concurrency" {
        summary: "a Controller run without a concurrency limit (kube-rs default 0 = unbounded)",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["unbounded"], &["good-single", "good"]),
        origin: "seed 1, experiment 2",
    }
    CA303 "uncached-read-in-reconcile" {
        summary: "an API get/list on every reconcile instead of reading the reflector Store",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-uncached"], &["good"]),
        origin: "LIST/GET per reconcile instead of a Store",
    }
    CA304 "sequential-writes-in-loop" {
        summary: "API writes awaited one at a time in a loop",
        default_severity: Info,
        lenses: &[Scan],
        bench_pair: None,
        origin: "seed 2: sequential bootstrap, ~30 s saved by parallel tiers",
    }
    CA305 "blocking-call-in-async-reconcile" {
        summary: "a blocking call (thread::sleep, std::fs, blocking HTTP, std Mutex across .await) in async reconcile",
        default_severity: Warning,
        lenses: &[Scan],
        bench_pair: None,
        origin: "blocking calls stall the tokio worker that runs every other reconcile",
    }
    CA401 "controller-per-tenant" {
        summary: "one Controller or watcher per namespace/tenant multiplies memory, tasks and watches",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["per-tenant"], &["shared"]),
        origin: "seed 2: per-workspace GC/quota controllers, 9.8 -> 3.1 MiB per workspace",
    }
    CA402 "unbounded-metric-label" {
        summary: "a metric label fed by an object name, namespace, uid or error text: series grow without bound",
        default_severity: Warning,
        lenses: &[Scan, Live, Bench],
        bench_pair: BenchPair::new(&["bad-cardinality"], &["good"]),
        origin: "seed 2: ~140,000 series from per-workspace labels",
    }
    CA403 "write-rate-near-apiserver-ceiling" {
        summary: "a controller's write rate is close to the API server's measured write ceiling",
        default_severity: Warning,
        lenses: &[Live],
        bench_pair: BenchPair::new(&[], &[]),
        origin: "seed 1: ~24 writes/s etcd ceiling on Kind",
    }
}

/// Looks a rule up by code (case-insensitive) or by name.
pub fn find(code_or_name: &str) -> Option<&'static Rule> {
    RULES
        .iter()
        .copied()
        .find(|r| r.code.eq_ignore_ascii_case(code_or_name) || r.name == code_or_name)
}

/// The rule code or name closest to what was typed, when one is close enough to be what was meant: for the
/// "did you mean" of an unknown rule.
pub fn suggest(typed: &str) -> Option<&'static str> {
    let typed = typed.trim();
    RULES
        .iter()
        .flat_map(|r| [r.code, r.name])
        .map(|candidate| {
            let score =
                strsim::jaro_winkler(&typed.to_ascii_lowercase(), &candidate.to_ascii_lowercase());
            (score, candidate)
        })
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// " (did you mean `X`?)" for an unknown rule, or nothing.
pub fn did_you_mean(typed: &str) -> String {
    suggest(typed).map_or_else(String::new, |s| format!(" (did you mean `{s}`?)"))
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

    #[test]
    fn suggests_the_closest_rule_only_when_close() {
        assert_eq!(suggest("CA2O3"), Some("CA203"));
        assert_eq!(suggest("ca203 "), Some("CA203"));
        assert_eq!(suggest("polling-requeu"), Some("polling-requeue"));
        assert_eq!(suggest("zzzz"), None);
        assert_eq!(did_you_mean("zzzz"), "");
    }

    use super::*;

    #[test]
    fn sorted_and_unique() {
        for w in RULES.windows(2) {
            assert!(w[0].code < w[1].code, "{} !< {}", w[0].code, w[1].code);
        }
    }
}
