//! Loops that matter to controllers: a read-and-sleep loop, and a loop over namespaces that starts a controller
//! per tenant.

use super::*;

impl<'ast> Extractor<'_, 'ast> {
    pub(super) fn check_poll_loop(&mut self, span: proc_macro2::Span, body: &syn::Block) {
        let t = compact(body);
        let sleeps = t.contains("sleep(") || t.contains(".tick()");
        // A loop that writes, or handles 409, is a retry with a pause, not polling.
        let writes = [
            ".replace(",
            ".replace_status(",
            ".patch(",
            ".patch_status(",
            ".create(",
        ]
        .iter()
        .any(|w| t.contains(w));
        if !sleeps || writes || handles_conflict(&t) {
            return;
        }
        let Some(f) = self.fns.last() else { return };
        let reads = f.vars.iter().any(|(n, v)| {
            v.is_api
                && READ_METHODS
                    .iter()
                    .any(|m| t.contains(&format!("{n}.{m}(")))
        }) || (t.contains("Api::") && (t.contains(".list(") || t.contains(".get(")));
        if reads {
            let span = self.span(span);
            let in_fn = self.fn_name();
            self.model.poll_loops.push(Site {
                span,
                what: "loop".into(),
                in_fn,
            });
        }
    }

    pub(super) fn check_tenant_loop(&mut self, f: &syn::ExprForLoop) {
        let body = compact(&f.body);
        let spawns = [
            "spawn(",
            ".push(",
            "JoinSet",
            "FuturesUnordered",
            "join_all",
        ]
        .iter()
        .any(|s| body.contains(s));
        let mut loop_vars = Vec::new();
        pat_idents(&f.pat, &mut loop_vars);
        if !spawns {
            return;
        }
        // Only loops over namespaces or tenants: one watcher per kind is how controllers are built.
        let iter_text =
            format!("{} {}", loop_vars.join(" "), compact(&f.expr)).to_ascii_lowercase();
        let tenantish = [
            "namespace",
            "tenant",
            "workspace",
            "team",
            "project",
            "cluster",
            "org",
        ]
        .iter()
        .any(|w| iter_text.contains(w))
            || loop_vars
                .iter()
                .any(|v| v == "ns" || v.starts_with("ns_") || v.ends_with("_ns"));
        let calls = namespaced_api_calls(&body);
        let ns_from_loop = calls.iter().any(|i| {
            let args: String = body[*i..].chars().take_while(|c| *c != ';').collect();
            loop_vars.iter().any(|v| contains_ident(&args, v))
        });
        if ns_from_loop {
            if let Some(span) = find_controller_build(&f.body) {
                let span = self.span(span);
                let in_fn = self.fn_name();
                if let Some(fc) = self.fns.last_mut() {
                    fc.model.tenant_controllers.push(Site {
                        span,
                        what: "Controller".into(),
                        in_fn,
                    });
                }
            }
            return;
        }
        if !tenantish {
            return;
        }
        // One call away: `spawn(run_tenant(client.clone(), ns))`.
        struct Calls<'v>(Vec<(String, proc_macro2::Span)>, &'v [String]);
        impl<'ast> Visit<'ast> for Calls<'_> {
            fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
                if let Expr::Path(p) = &*c.func
                    && let Some(last) = p.path.segments.last()
                {
                    let args = compact(&c.args);
                    if self.1.iter().any(|v| contains_ident(&args, v)) {
                        self.0.push((last.ident.to_string(), c.span()));
                    }
                }
                visit::visit_expr_call(self, c);
            }
        }
        let mut calls = Calls(Vec::new(), &loop_vars);
        calls.visit_block(&f.body);
        let list: Vec<(String, Span)> = calls
            .0
            .into_iter()
            .map(|(n, s)| (n, self.span(s)))
            .collect();
        if let Some(fc) = self.fns.last_mut() {
            fc.model.tenant_loop_calls.extend(list);
        }
    }
}
