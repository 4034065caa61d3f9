//! Blocking in async code that a statement shows: a std lock guard taken and held across a later `.await`.

use super::*;

impl Extractor<'_, '_> {
    /// `let g = m.lock().unwrap();` followed, in the same block and before `drop(g)`, by an `.await`: the guard
    /// is held across it (`rest` is what follows the statement).
    pub(super) fn note_sync_guard(&mut self, l: &syn::Local, rest: &[Stmt]) {
        let Some(init) = &l.init else {
            return;
        };
        let t = compact(&init.expr);
        // The guard itself, not a block that takes and drops one inside.
        let is_chain = matches!(&*init.expr, Expr::MethodCall(_) | Expr::Try(_));
        let sync_lock = is_chain
            && [".lock()", ".write()", ".read()"].iter().any(|l| {
                t.ends_with(l)
                    || t.ends_with(&format!("{l}.unwrap()"))
                    || t.ends_with(&format!("{l}?"))
                    || t.contains(&format!("{l}.expect("))
            })
            && !t.contains(".await");
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
                f.model.blocking.push(Site {
                    span,
                    what: format!("std Mutex guard `{g}` held across .await"),
                    in_fn: f.model.name.clone(),
                });
            }
        }
    }
}
