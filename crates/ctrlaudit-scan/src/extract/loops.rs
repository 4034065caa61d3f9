//! Loops that matter to controllers: loops that sleep, and loops that spawn a task per item.

use super::*;

impl<'ast> Extractor<'_, 'ast> {
    /// Records a `loop`/`while` whose body sleeps, with what it does to the API server.
    pub(super) fn record_sleeping_loop(&mut self, span: proc_macro2::Span, body: &syn::Block) {
        // Most loops neither sleep nor tick: their source says so before any text is made of them (a comment
        // may name `sleep`, whitespace may split `. tick ()`, but neither word can appear in the compact text
        // without appearing in the source).
        if self
            .block_source(body)
            .is_some_and(|src| !src.contains("sleep") && !src.contains("tick"))
        {
            return;
        }
        let t = self.block_text(body);
        if !(t.contains("sleep(") || t.contains(".tick()")) {
            return;
        }
        let writes = [
            ".replace(",
            ".replace_status(",
            ".patch(",
            ".patch_status(",
            ".create(",
        ]
        .iter()
        .any(|w| t.contains(w));
        let Some(f) = self.fns.last() else { return };
        let reads = f.vars.iter().any(|(n, v)| {
            v.is_api
                && ApiMethod::ALL
                    .iter()
                    .filter(|m| m.is_read())
                    .any(|m| t.contains(&format!("{n}.{m}(")))
        }) || (t.contains("Api::") && (t.contains(".list(") || t.contains(".get(")));
        let span = self.span(span);
        let in_fn = self.fn_name();
        self.model.sleeping_loops.push(SleepingLoop {
            span,
            in_fn,
            reads,
            writes,
            error_signs: source_text::error_signs(&t),
        });
    }

    /// Records a `for` loop whose body spawns tasks or collects futures, with what it does per iteration.
    /// `body` is the loop body's compact text.
    pub(super) fn record_spawning_loop(&mut self, f: &syn::ExprForLoop, body: &str) {
        let spawns = [
            "spawn(",
            ".push(",
            "JoinSet",
            "FuturesUnordered",
            "join_all",
        ]
        .iter()
        .any(|s| body.contains(s));
        if !spawns {
            return;
        }
        let mut loop_vars = Vec::new();
        pat_idents(&f.pat, &mut loop_vars);
        let iterates = format!("{} {}", loop_vars.join(" "), compact(&f.expr));
        let calls = namespaced_api_calls(body);
        let namespaced_api_from_loop_var = calls.iter().any(|i| {
            let args: String = body[*i..].chars().take_while(|c| *c != ';').collect();
            loop_vars.iter().any(|v| contains_ident(&args, v))
        });
        let builds_controller = find_controller_build(&f.body).map(|s| self.span(s));
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
        let mut found = Calls(Vec::new(), &loop_vars);
        found.visit_block(&f.body);
        let calls_with_loop_var: Vec<(String, Span)> = found
            .0
            .into_iter()
            .map(|(n, s)| (n, self.span(s)))
            .collect();
        if let Some(fc) = self.fns.last_mut() {
            fc.model.spawning_loops.push(SpawningLoop {
                iterates,
                loop_vars,
                namespaced_api_from_loop_var,
                builds_controller,
                calls_with_loop_var,
            });
        }
    }
}
