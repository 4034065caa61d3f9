//! One file per rule detector. Each takes the joined crate ([`Ctx`]) and pushes its findings.

use super::unit::{FnId, Unit};
use crate::finding::{Evidence, Finding, Lens, Severity, Span, When, WhenKind};
use crate::registry::Rule;
use crate::sema::{ApiCall, GuardKind, Lang};
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
    /// Those of `reach` that only a timer reaches (see [`Unit::reach_on_timers_only`]): once per period, not per
    /// event.
    pub timer_only: HashSet<FnId>,
}

impl<'u> Ctx<'u> {
    pub fn new(unit: &'u Unit<'u>) -> Self {
        let (reach, error_only) = unit.reach();
        Self {
            reach,
            error_only,
            routine: unit.reach_routine(),
            policies: unit.error_policies(),
            timer_only: unit.reach_on_timers_only(),
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

    /// On which path the API call `call` in function `id` runs: deletion and error paths first, then a
    /// transition step, the condition of the branch it is on, the way its function is reached.
    pub fn when_call<M>(&self, id: FnId, call: &ApiCall<M>) -> When {
        if call.on_deletion {
            return When::new(WhenKind::Deletion);
        }
        if call.on_error || self.error_only.contains(&id) {
            return When::new(WhenKind::ErrorRetry);
        }
        let condition = call.guard.as_ref().map(|g| g.text.clone());
        if call.then_writes_on_branch || call.after_change_on_branch || call.leaves_phase {
            return When {
                path: WhenKind::Transition,
                condition,
            };
        }
        if let Some(g) = &call.guard {
            let path = match g.kind {
                GuardKind::SpecChange => WhenKind::SpecChange,
                GuardKind::Drift => WhenKind::Drift,
                GuardKind::Other => WhenKind::Branch,
            };
            return When { path, condition };
        }
        self.when_fn(id)
    }

    /// On which path the body of function `id` runs: an error policy's on an error retry; otherwise from how
    /// reconcile reaches it: only through an error path, only through a transition step, or on every pass.
    /// Start-up code (not reached from reconcile) is [`WhenKind::Startup`].
    pub fn when_fn(&self, id: FnId) -> When {
        // The Controller runs its error policy after each failed reconcile.
        if self.policies.contains(&id) {
            return When::new(WhenKind::ErrorRetry);
        }
        if !self.reach.contains_key(&id) {
            When::new(WhenKind::Startup)
        } else if self.error_only.contains(&id) {
            When::new(WhenKind::ErrorRetry)
        } else if !self.routine.contains(&id) {
            When::new(WhenKind::Transition)
        } else {
            When::new(WhenKind::EveryReconcile)
        }
    }

    /// On which path line `line` of file `file` runs: its function's (see [`Self::when_fn`]); code in no
    /// function is [`WhenKind::Startup`].
    pub fn when_at(&self, file: usize, line: usize) -> When {
        self.unit
            .fn_at(file, line)
            .map_or(When::new(WhenKind::Startup), |id| self.when_fn(id))
    }

    /// The language of file `file`: whose terms a finding's advice is written in.
    pub fn lang(&self, file: usize) -> Lang {
        self.unit.files.get(file).map_or(Lang::Rust, |f| f.lang)
    }

    pub fn via(&self, id: FnId) -> String {
        match self.reach.get(&id) {
            Some(p) if p.len() > 1 => format!(" (via {})", p.join(" → ")),
            _ => String::new(),
        }
    }
}

/// A scan finding at `span` on path `when`, with the rule's default severity (see [`per_pass`]).
pub fn finding(
    rule: &Rule,
    span: Span,
    when: When,
    message: String,
    help: impl Into<String>,
) -> Finding {
    Finding {
        when: Some(when),
        ..about_source(rule, span, message, help)
    }
}

/// A finding about the source itself rather than a controller's behaviour (CA001, CA002): on no path.
pub fn about_source(rule: &Rule, span: Span, message: String, help: impl Into<String>) -> Finding {
    Finding {
        code: rule.code.to_string(),
        severity: rule.default_severity,
        lens: Lens::Scan,
        message,
        subject: crate::finding::Subject::Source(span),
        evidence: Vec::new(),
        help: help.into(),
        objects: Vec::new(),
        when: None,
    }
}

/// For a rule whose cost is paid each time its path runs (a read, a write, a requeue per pass): the default
/// severity is for the steady state — every reconcile, or a branch whose condition holds on every pass — and the
/// rarer paths (a spec change, a transition, drift, deletion, an error retry) are `info`. Rules whose cost is per
/// occurrence (a status dropped, a 409, a blocked thread, a series created) keep their severity on every path.
pub fn per_pass(mut f: Finding) -> Finding {
    let steady = f.when.as_ref().is_none_or(|w| {
        matches!(
            w.path,
            WhenKind::EveryReconcile | WhenKind::Branch | WhenKind::Startup
        )
    });
    if !steady {
        f.severity = Severity::Info;
    }
    f
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
