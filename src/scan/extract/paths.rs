//! Where a value returned from a reconcile or error_policy sits: success or error path, after a change or not,
//! and the requeue durations it carries.

use super::*;

impl<'ast> Extractor<'_, 'ast> {
    /// In a branch, right after a change: a write-like call earlier in the innermost block, or a branch taken on
    /// a write or a changed flag.
    pub(super) fn after_change_on_branch(&self) -> bool {
        self.branches > 0
            && (self.block_writes.last() == Some(&true)
                || self.change_branches.last() == Some(&true))
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
        let on_error = self.error_path > 0;
        let after_change =
            self.block_writes.last() == Some(&true) || self.change_branches.last() == Some(&true);
        let r = self.fns.last().and_then(|f| self.requeue_of(e, f));
        if let (Some(mut r), Some(f)) = (r, self.fns.last_mut()) {
            r.conditional = conditional;
            r.on_error = on_error;
            r.after_change = after_change;
            f.model.requeues.push(r);
        }
    }

    pub(super) fn requeue_of(&self, e: &Expr, ctx: &FnCtx) -> Option<Requeue> {
        let locals = |n: &str| ctx.vars.get(n).and_then(|v| v.init.clone());
        match e {
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else { return None };
                let t = compact(&p.path);
                if t.ends_with("Action::requeue") {
                    let arg = c.args.first()?;
                    let (secs, unresolved) = self.const_duration(arg, &locals);
                    return Some(Requeue {
                        span: self.span(c.span()),
                        secs,
                        unresolved,
                        conditional: false,
                        on_error: false,
                        after_change: false,
                        text: compact(c),
                    });
                }
                if (t == "Ok" || t.ends_with("::Ok")) && c.args.len() == 1 {
                    return self.requeue_of(&c.args[0], ctx);
                }
                None
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
                let (secs, unresolved) = self.const_duration(d, &locals);
                Some(Requeue {
                    span: self.span(f.span()),
                    secs,
                    unresolved,
                    conditional: false,
                    on_error: false,
                    after_change: false,
                    text: compact(f),
                })
            }
            _ => None,
        }
    }

    /// A requeue duration in seconds if this file makes it a constant; otherwise its text for the
    /// crate join, unless it is jittered (then it is deliberately not a constant).
    pub(super) fn const_duration(
        &self,
        arg: &Expr,
        locals: &dyn Fn(&str) -> Option<Expr>,
    ) -> (Option<f64>, Option<String>) {
        let text = compact(arg);
        if text.contains("rand") || text.contains("jitter") {
            return (None, None);
        }
        match duration_secs(arg, &self.consts, locals) {
            Some(s) => (Some(s), None),
            None => (None, Some(text)),
        }
    }
}
