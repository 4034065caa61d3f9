//! One file per rule detector. Each takes the joined crate ([`Ctx`]) and pushes its findings.

use super::unit::{FnId, Unit};
use crate::finding::{Evidence, Finding, Lens, Span};
use crate::registry::Rule;
use std::collections::{BTreeMap, HashSet};

/// Declares the detector modules and [`run_all`], which runs each in this order: adding a rule is one line here
/// (and its metadata line in ctrlaudit-core's registry).
macro_rules! detectors {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Runs every scan detector over a unit.
        pub fn run_all(unit: &Unit<'_>) -> Vec<Finding> {
            let cx = Ctx::new(unit);
            let mut out = Vec::new();
            $($module::check(&cx, &mut out);)*
            out
        }
    };
}

detectors! {
    ca101_status_written_through_main_resource,
    ca201_reconcile_without_generation_predicate,
    ca202_volatile_value_written_every_reconcile,
    ca203_polling_requeue,
    ca204_error_requeue_without_backoff,
    ca205_watcher_without_backoff,
    ca206_field_ownership_fight,
    ca301_replace_without_conflict_handling,
    ca302_unbounded_reconcile_concurrency,
    ca303_uncached_read_in_reconcile,
    ca304_sequential_writes_in_loop,
    ca305_blocking_call_in_async_reconcile,
    ca401_controller_per_tenant,
    ca402_unbounded_metric_label,
}

/// What every detector sees: the unit and the reachability computed once for all of them.
#[derive(Debug)]
pub struct Ctx<'u> {
    pub unit: &'u Unit<'u>,
    /// Functions reachable from a reconcile, with the call path.
    pub reach: BTreeMap<FnId, Vec<String>>,
    /// Those of `reach` reached only through calls on an error path.
    pub error_only: HashSet<FnId>,
    /// Those of `reach` reached on passes that change nothing (see [`Unit::reach_routine`]).
    pub routine: HashSet<FnId>,
    pub policies: HashSet<FnId>,
}

impl<'u> Ctx<'u> {
    pub fn new(unit: &'u Unit<'u>) -> Self {
        let (reach, error_only) = unit.reach();
        Self {
            reach,
            error_only,
            routine: unit.reach_routine(),
            policies: unit.error_policies(),
            unit,
        }
    }

    /// Evidence naming the call path from reconcile when the site is not in reconcile itself.
    pub fn call_path(&self, id: FnId) -> Vec<Evidence> {
        match self.reach.get(&id) {
            Some(p) if p.len() > 1 => vec![Evidence::CallPath {
                functions: p.clone(),
            }],
            _ => Vec::new(),
        }
    }

    pub fn via(&self, id: FnId) -> String {
        match self.reach.get(&id) {
            Some(p) if p.len() > 1 => format!(" (via {})", p.join(" → ")),
            _ => String::new(),
        }
    }
}

/// A scan finding at `span` with the rule's default severity.
pub fn finding(rule: &Rule, span: Span, message: String, help: impl Into<String>) -> Finding {
    Finding {
        code: rule.code.to_string(),
        severity: rule.default_severity,
        lens: Lens::Scan,
        message,
        subject: crate::finding::Subject::Source(span),
        evidence: Vec::new(),
        help: help.into(),
        objects: Vec::new(),
    }
}

/// Formats seconds the way people write them: `5s`, `500ms`, `2m`.
pub fn secs_text(s: f64) -> String {
    if s < 1.0 {
        format!("{}ms", (s * 1000.0).round())
    } else if s >= 60.0 && (s % 60.0) == 0.0 {
        format!("{}m", s / 60.0)
    } else {
        format!("{s}s")
    }
}
