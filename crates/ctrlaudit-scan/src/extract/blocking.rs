//! Blocking in async code: calls by their resolved path (which of them block is CA305's to say), and a std lock
//! guard taken and held across a later `.await`, which a statement shows.

use super::*;

impl Extractor<'_, '_> {
    /// Records a call by its resolved path or method name, for the rules that judge other libraries' calls.
    pub(super) fn record_resolved_call(&mut self, callee: Callee, span: proc_macro2::Span) {
        let off_runtime = self.blocking_ok > 0;
        let at = to_pos(span);
        if let Some(f) = self.fns.last_mut() {
            f.model.resolved_calls.push(ResolvedCall {
                callee,
                at,
                off_runtime,
                repeats_write: false,
                never_retries: false,
                kept: false,
            });
        }
    }

    /// `let g = m.lock().unwrap();` followed, in the same block and before `drop(g)`, by an `.await`: the guard
    /// is held across it (`rest` is what follows the statement).
    pub(super) fn note_sync_guard(&mut self, l: &syn::Local, rest: &[Stmt]) {
        let Some(init) = &l.init else {
            return;
        };
        let sync_lock = is_sync_guard(&init.expr) && !has_await(&init.expr);
        let Some(g) = pat_ident(&l.pat).filter(|_| sync_lock) else {
            return;
        };
        let mut across = false;
        for r in rest {
            let rt = compact(r);
            if rt.contains(&format!("drop({g})")) {
                break;
            }
            if rt.contains(".await") {
                across = true;
                break;
            }
        }
        if across && self.blocking_ok == 0 {
            let span = self.span(l.span());
            if let Some(f) = self.fns.last_mut() {
                f.model.guards_across_await.push(Site {
                    span,
                    what: format!("std Mutex guard `{g}` held across .await"),
                    in_fn: f.model.name.clone(),
                });
            }
        }
    }
}

/// `m.lock()`, `m.write().unwrap()`, `m.read().expect("..")?`: the guard of a std lock itself, not a value taken
/// through one (`m.lock().unwrap().clone()`).
fn is_sync_guard(e: &Expr) -> bool {
    let mut e = e;
    loop {
        match e {
            Expr::Try(t) => e = &t.expr,
            Expr::MethodCall(m) if m.method == "unwrap" || m.method == "expect" => e = &m.receiver,
            Expr::MethodCall(m) => {
                return m.args.is_empty()
                    && (m.method == "lock" || m.method == "write" || m.method == "read");
            }
            _ => return false,
        }
    }
}

/// Whether an expression awaits anywhere inside (a tokio lock's `.lock().await` is not a std guard).
fn has_await(e: &Expr) -> bool {
    struct A(bool);
    impl<'ast> Visit<'ast> for A {
        fn visit_expr_await(&mut self, _: &'ast syn::ExprAwait) {
            self.0 = true;
        }
    }
    let mut a = A(false);
    a.visit_expr(e);
    a.0
}
