//! Where a value returned from a reconcile or error_policy sits: success or error path, after a change or not,
//! and the requeue durations it carries.

use super::*;

impl<'ast> Extractor<'_, 'ast> {
    /// In a branch, right after a change: a write-like call earlier in the innermost block, or a branch taken on
    /// a write or a changed flag.
    pub(super) fn after_change_on_branch(&self) -> bool {
        self.branches > 0
            && (self.block_writes.last() >= Some(&Written::Write)
                || self.change_branches.last() == Some(&true))
    }

    /// Visits an `if`/`match` arm with its own [`ArmFrame`]; what no write followed in it is handed to the arm
    /// around it.
    ///
    /// An arm that `fails` (ends in `return Err(..)`) is a failure's path: what it read and called is not judged as
    /// every pass. In a function returning `Result<_, Action>`, `Err` is also how it says "come back later", so
    /// there the arm must log an error too.
    pub(super) fn in_arm(&mut self, fails: bool, visit: impl FnOnce(&mut Self)) -> bool {
        let depth = self.branches;
        if let Some(f) = self.fns.last_mut() {
            f.arms.push(ArmFrame {
                depth,
                ..Default::default()
            });
        }
        visit(self);
        let Some(f) = self.fns.last_mut() else {
            return false;
        };
        let Some(done) = f.arms.pop() else {
            return false;
        };
        if fails && (!f.err_is_action || done.logs_error) {
            for i in done.reads {
                if let Some(c) = f.model.api_calls.get_mut(i) {
                    c.on_error = true;
                }
            }
            for i in done.calls {
                if let Some(c) = f.model.calls.get_mut(i) {
                    c.ctx.path = CallPath::Error;
                }
            }
            return done.wrote;
        }
        // What an arm did after its own write follows a change, not precedes one: the arm around it does not get it.
        if let Some(outer) = f.arms.last_mut()
            && !done.wrote
        {
            outer.reads.extend(done.reads);
            outer.calls.extend(done.calls);
        }
        done.wrote
    }

    /// After an `if`/`else`, or a two-way `match` on an outcome (`Ok`/`Err` with the error arm aside), whose every
    /// arm changed state: the decision as a whole is a state write where it stands. A match over many states is a
    /// dispatch, where one arm is usually the steady state that writes on every pass.
    pub(super) fn every_arm_wrote(&mut self, wrote: &[bool]) {
        if (1..=2).contains(&wrote.len()) && wrote.iter().all(|w| *w) {
            self.note_state_write();
        }
    }

    /// Adds an API call to the current function, noting a read for the arm and guard it is under, or a state
    /// write.
    pub(super) fn push_api_call(&mut self, call: ApiCall) {
        let (is_read, changes_state) = (call.is_read(), call.changes_state());
        let Some(f) = self.fns.last_mut() else {
            return;
        };
        f.model.api_calls.push(call);
        let index = f.model.api_calls.len() - 1;
        if let Some(arm) = f.arms.last_mut()
            && is_read
        {
            arm.reads.push(index);
        }
        if let Some(g) = f.guarded_reads.as_mut()
            && is_read
        {
            g.push(index);
        }
        if changes_state {
            self.note_state_write();
        }
    }

    /// Records a call of a function or method with where it is made; one on the routine path is noted for the
    /// arm it is in (see [`Self::note_call`]).
    pub(super) fn push_call(&mut self, callee: Callee, type_args: Vec<String>, at: Pos) {
        let path = if self.deletion_path > 0 {
            CallPath::Deletion
        } else if self.error_path > 0 {
            CallPath::Error
        } else {
            CallPath::Routine
        };
        let routine = path == CallPath::Routine;
        let ctx = CallCtx {
            path,
            in_loop: routine && matches!(self.current_scope(), Some(Scope::Loop | Scope::While)),
            transition: false,
            variants: if routine {
                self.variants.last().cloned().unwrap_or_default()
            } else {
                Vec::new()
            },
            phase_arm: if routine {
                self.phase_arms
                    .iter()
                    .flat_map(|(arm, _)| arm.iter().cloned())
                    .collect()
            } else {
                Vec::new()
            },
            never_retries: false,
            on_goroutine: false,
            // Rust controllers run on kube-runtime's Controller; timer loops are not read.
            periodic: false,
            handed_on: false,
            // Rust's conflict handling is judged per function (`handles_conflict`).
            in_conflict_retry: false,
        };
        let name = callee.name().to_string();
        let Some(f) = self.fns.last_mut() else {
            return;
        };
        f.model.calls.push(Call {
            callee,
            at,
            type_args,
            ctx,
            args: Vec::new(),
        });
        if routine {
            let index = f.model.calls.len() - 1;
            self.note_call(index, &name);
        }
    }

    /// Notes a routine call of a crate function, which may itself change state, for the arm it is in: a step of
    /// a change when the arm goes on to write (see [`CallCtx::transition`]).
    fn note_call(&mut self, index: usize, name: &str) {
        // A call that moves the object to another phase (`transition_to_releasing`, `set_phase`) is the step
        // itself: what it reads runs once. One that writes a status (`patch_status_with_condition`) may run on
        // every pass: what it reads runs whenever the arm does.
        let moves_phase = name.starts_with("transition") || name.contains("phase");
        if changes_state(name) && !moves_phase {
            self.note_state_write();
        }
        if let Some(f) = self.fns.last_mut() {
            // After a delete on this branch: waiting for it to go, recreating: a step of that change.
            let after_delete = f.arms.last().is_some_and(|a| a.deleted);
            if after_delete {
                if let Some(c) = f.model.calls.get_mut(index) {
                    c.ctx.transition = true;
                }
            } else if let Some(arm) = f.arms.last_mut() {
                arm.calls.push(index);
            }
        }
        if moves_phase {
            self.note_state_write();
        }
    }

    /// A state write at the current arm's own depth: what the arm read or called before it is a transition step.
    fn note_state_write(&mut self) {
        let branches = self.branches;
        let Some(f) = self.fns.last_mut() else {
            return;
        };
        let Some(arm) = f.arms.last_mut() else {
            return;
        };
        if arm.depth != branches {
            return;
        }
        arm.wrote = true;
        for i in arm.reads.drain(..) {
            if let Some(c) = f.model.api_calls.get_mut(i) {
                c.then_writes_on_branch = true;
            }
        }
        for i in arm.calls.drain(..) {
            if let Some(c) = f.model.calls.get_mut(i) {
                c.ctx.transition = true;
            }
        }
    }

    /// A log macro in the current arm that reports an error marks the arm as a failure's (see
    /// `ArmFrame::logs_error`).
    pub(super) fn note_log(&mut self, mac: &syn::Macro) {
        let name = last_ident(&mac.path);
        let logs_error = match name.as_str() {
            "error" => true,
            "warn" | "info" | "debug" | "trace" | "event" => {
                mac.tokens.to_string().to_lowercase().contains("error")
            }
            _ => false,
        };
        if logs_error && let Some(arm) = self.fns.last_mut().and_then(|f| f.arms.last_mut()) {
            arm.logs_error = true;
        }
    }

    /// `match phase { A::B => .., _ => f(..).await }`: the catch-all hands `f` what the other arms did not take.
    pub(super) fn record_dispatch(&mut self, m: &syn::ExprMatch) {
        let Some(rest) = m
            .arms
            .iter()
            .find(|a| matches!(a.pat, Pat::Wild(_)) && a.guard.is_none())
        else {
            return;
        };
        let mut body = &*rest.body;
        loop {
            body = match body {
                Expr::Await(a) => &a.base,
                Expr::Try(t) => &t.expr,
                Expr::Paren(p) => &p.expr,
                _ => break,
            };
        }
        let Expr::Call(c) = body else {
            return;
        };
        let Expr::Path(p) = &*c.func else {
            return;
        };
        let Some(callee) = self.call_name(&p.path) else {
            return;
        };
        let handled: Vec<String> = m
            .arms
            .iter()
            .filter(|a| a.guard.is_none())
            .flat_map(|a| variant_names(&a.pat))
            .collect();
        if handled.is_empty() {
            return;
        }
        if let Some(f) = self.fns.last_mut() {
            f.model.dispatches.push(Dispatch {
                callee: Callee::Path(callee),
                handled,
            });
        }
    }

    /// How many API calls the current function has made so far (see [`Self::read_since`]).
    pub(super) fn api_call_count(&self) -> usize {
        self.fns.last().map_or(0, |f| f.model.api_calls.len())
    }

    /// Has the current function made a read since it had made `count` API calls?
    pub(super) fn read_since(&self, count: usize) -> bool {
        self.fns.last().is_some_and(|f| {
            f.model
                .api_calls
                .get(count..)
                .is_some_and(|new| new.iter().any(ApiCall::is_read))
        })
    }

    /// A write at a function's top level after an "already in place" guard (see `FnCtx::guarded_reads`): the
    /// reads between them belong to the creation step.
    pub(super) fn note_top_level_write(&mut self) {
        if self.branches > 0 || self.current_scope().is_some() {
            return;
        }
        let Some(f) = self.fns.last_mut() else {
            return;
        };
        for i in f
            .guarded_reads
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
        {
            if let Some(c) = f.model.api_calls.get_mut(i) {
                c.then_writes_on_branch = true;
            }
        }
    }

    /// Visits `e` as part of an error path.
    pub(super) fn visit_on_error_path(&mut self, e: &'ast Expr) {
        self.error_path += 1;
        self.visit_expr(e);
        self.error_path -= 1;
    }

    /// Records the requeue `e` builds (an `Action::requeue` or a `ReconcilerAction`) in the current fn,
    /// marked conditional when it stands inside a branch.
    pub(super) fn record_requeue(&mut self, e: &Expr) {
        let conditional = self.branches > 0;
        // `Err(..)` alone is how a `Result<_, Action>` says "not yet"; an error path needs an error around it.
        let logged_error = self
            .fns
            .last()
            .and_then(|f| f.arms.last())
            .is_some_and(|a| a.logs_error);
        let on_error = self.error_path > self.err_values || (self.err_values > 0 && logged_error);
        let in_err_value = self.err_values > 0;
        // After an idempotent apply the object is as it was: a short requeue is still a timer.
        let after_change = self.block_writes.last() == Some(&Written::StateChange)
            || self.change_branches.last() == Some(&true);
        let after_write = self.block_writes.last() >= Some(&Written::Write);
        let r = self.fns.last().and_then(|f| self.requeue_of(e, f));
        if let (Some(mut r), Some(f)) = (r, self.fns.last_mut()) {
            r.conditional = conditional;
            r.on_error = on_error;
            r.in_err_value = in_err_value;
            r.after_change = after_change;
            r.after_write = after_write;
            r.variants = self.variants.last().cloned().unwrap_or_default();
            f.model.requeues.push(r);
        }
    }

    pub(super) fn requeue_of(&self, e: &Expr, ctx: &FnCtx) -> Option<Requeue> {
        let locals = |n: &str| ctx.vars.get(n).and_then(|v| v.init);
        match e {
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else { return None };
                let t = compact(&p.path);
                if t.ends_with("Action::requeue") {
                    let arg = c.args.first()?;
                    let (secs, duration) = self.const_duration(arg, &locals);
                    return Some(Requeue {
                        span: self.span(c.span()),
                        secs,
                        duration,
                        text: compact(c),
                        ..Default::default()
                    });
                }
                if (t == "Ok" || t.ends_with("::Ok")) && c.args.len() == 1 {
                    return self.requeue_of(&c.args[0], ctx);
                }
                // A function of the crate or a dependency that may build the Action (`requeue::heartbeat()`).
                let via = self.call_name(&p.path)?;
                Some(Requeue {
                    span: self.span(c.span()),
                    via: Some(Callee::Path(via)),
                    via_args: c.args.iter().map(|a| lower::value(a, &locals)).collect(),
                    text: compact(c),
                    ..Default::default()
                })
            }
            Expr::Struct(s) if compact(&s.path).ends_with("ReconcilerAction") => {
                let f = s
                    .fields
                    .iter()
                    .find(|f| matches!(&f.member, syn::Member::Named(i) if i == "requeue_after"))?;
                let d = match &f.expr {
                    Expr::Call(c) if compact(&c.func) == "Some" => c.args.first()?,
                    _ => return None,
                };
                let (secs, duration) = self.const_duration(d, &locals);
                Some(Requeue {
                    span: self.span(f.span()),
                    secs,
                    duration,
                    text: compact(f),
                    ..Default::default()
                })
            }
            _ => None,
        }
    }

    /// A requeue duration in seconds if this file makes it a constant; otherwise the lowered value for the crate
    /// join, unless it is jittered (then it is deliberately not a constant). A local the duration names is read
    /// through its initialiser (`let delay = err.retry_after().unwrap_or(DEFAULT); Action::requeue(delay)`).
    pub(super) fn const_duration(
        &self,
        arg: &Expr,
        locals: lower::Locals<'_>,
    ) -> (Option<f64>, Option<Value>) {
        let v = lower::value(arg, locals);
        if v.is_jittered() {
            return (None, None);
        }
        match v.secs(&self.consts, &unbound) {
            Some(s) => (Some(s), None),
            None => (None, Some(v)),
        }
    }
}

/// The condition of an `if` branch being walked: classified at once, rendered as text only for the API calls
/// under it (most branches have none).
#[derive(Debug, Clone, Copy)]
pub(super) struct Cond<'ast> {
    expr: &'ast Expr,
    kind: GuardKind,
    /// The `else` of `expr`.
    negated: bool,
}

impl<'ast> Extractor<'_, 'ast> {
    /// The conditions of the two branches of `if cond`: the `then`'s, and the `else`'s — none when the `then` is
    /// the exception (a spec change, a drift), for then the `else` is the steady state, nor for `if let`, whose
    /// negation says nothing worth printing.
    pub(super) fn branch_conds(
        cond: &'ast Expr,
        cond_text: &str,
    ) -> (Cond<'ast>, Option<Cond<'ast>>) {
        let kind = guard_kind(cond_text);
        let then = Cond {
            expr: cond,
            kind,
            negated: false,
        };
        let otherwise =
            (kind == GuardKind::Other && !matches!(cond, Expr::Let(_))).then_some(Cond {
                negated: true,
                ..then
            });
        (then, otherwise)
    }

    /// The guard that says most about when the node being visited runs: the innermost spec-change or drift
    /// condition around it, else the innermost condition.
    pub(super) fn innermost_guard(&self) -> Option<Guard> {
        let mut around = self.conditions.iter().rev().flatten();
        let innermost = around.clone().next().copied();
        let c = around
            .find(|c| c.kind != GuardKind::Other)
            .copied()
            .or(innermost)?;
        Some(self.guard_of(c))
    }

    /// A condition as a [`Guard`]: its text as written (`if let Some(x) = y` reads "`y` is `Some(x)`").
    fn guard_of(&self, c: Cond<'ast>) -> Guard {
        let text = match c.expr {
            Expr::Let(l) => format!("{} is {}", self.written(&*l.expr), self.written(&*l.pat)),
            e => self.written(e),
        };
        let text = if text.trim().is_empty() {
            compact(c.expr)
        } else {
            text
        };
        let text = if c.negated {
            format!("!({text})")
        } else {
            text
        };
        Guard {
            kind: c.kind,
            text: cut(text, Guard::MAX_TEXT),
        }
    }

    /// A node's text as written in the source, whitespace collapsed; empty when the source is not at hand.
    fn written(&self, node: &impl Spanned) -> String {
        self.source
            .and_then(|s| s.get(node.span().byte_range()))
            .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    }
}

/// What a condition asks, from its compact text: a generation, a spec hash, or the spec compared with the one
/// last acted on is a spec change; a `!=`, an absent object or a flag named for a difference is drift; anything
/// else is a plain branch.
fn guard_kind(cond_text: &str) -> GuardKind {
    let t = cond_text.to_ascii_lowercase();
    let compares = t.contains("!=") || t.contains("==") || t.contains(".ne(") || t.contains(".eq(");
    // The spec compared with what was last acted on; a spec field compared with the actual state is drift.
    let last_spec = t.contains("spec")
        && compares
        && [
            "last_",
            "previous",
            "applied_spec",
            "observed_spec",
            "old_spec",
        ]
        .iter()
        .any(|w| t.contains(w));
    if t.contains("generation")
        || t.contains("spec_hash")
        || t.contains("spec_changed")
        || last_spec
    {
        return GuardKind::SpecChange;
    }
    let differs = [
        "!=",
        ".ne(",
        "needs_update",
        "need_update",
        "needs_sync",
        "drift",
        "differ",
        "out_of_sync",
        "mismatch",
        "is_none()",
        "!exists",
    ];
    // Whether a child is already being deleted says nothing of drift.
    if t.contains("deletion_timestamp") {
        return GuardKind::Other;
    }
    if differs.iter().any(|w| t.contains(w)) || t.starts_with("!") && t.contains(".eq(") {
        return GuardKind::Drift;
    }
    GuardKind::Other
}

/// `text` cut to `max` characters, an ellipsis marking the cut.
fn cut(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        return text;
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_are_told_apart_by_what_they_ask() {
        for spec in [
            "obj.status.observed_generation!=obj.metadata.generation",
            "spec_hash!=last_hash",
            "obj.spec!=last_applied_spec",
        ] {
            assert_eq!(guard_kind(spec), GuardKind::SpecChange, "{spec}");
        }
        for drift in [
            "observed!=tenant.spec.labels",
            "needs_update",
            "existing.is_none()",
            "!current.data.eq(&desired.data)",
        ] {
            assert_eq!(guard_kind(drift), GuardKind::Drift, "{drift}");
        }
        for other in [
            "letSome(tls)=obj.spec.tls",
            "child.metadata.deletion_timestamp.is_none()",
            "replicas==0",
        ] {
            assert_eq!(guard_kind(other), GuardKind::Other, "{other}");
        }
    }

    #[test]
    fn a_long_condition_is_cut_with_an_ellipsis() {
        assert_eq!(cut("abc".into(), 3), "abc");
        assert_eq!(cut("abcdef".into(), 4), "abc…");
    }
}
