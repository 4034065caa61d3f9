//! The walk itself: the `syn::visit::Visit` implementation that dispatches each node to the extraction steps.

use super::*;

impl<'ast> Visit<'ast> for Extractor<'_, 'ast> {
    fn visit_expr(&mut self, e: &'ast Expr) {
        if !self.budget.spent() {
            visit::visit_expr(self, e);
        }
    }

    fn visit_item(&mut self, i: &'ast syn::Item) {
        if !self.budget.spent() {
            visit::visit_item(self, i);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_code(&m.attrs) {
            visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if is_test_code(&f.attrs) {
            return;
        }
        self.enter_fn(f.sig.ident.to_string(), None, &f.sig, f.sig.ident.span());
        if let Some(ctx) = self.fns.last_mut() {
            ctx.free_fn = true;
        }
        visit::visit_item_fn(self, f);
        self.exit_fn(&f.block);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let self_ty = compact(&i.self_ty);
        let outer = std::mem::replace(
            &mut self.impl_generics,
            i.generics
                .type_params()
                .map(|t| t.ident.to_string())
                .collect(),
        );
        for item in &i.items {
            if let syn::ImplItem::Fn(f) = item {
                self.enter_fn(
                    f.sig.ident.to_string(),
                    Some(self_ty.clone()),
                    &f.sig,
                    f.sig.ident.span(),
                );
                visit::visit_impl_item_fn(self, f);
                self.exit_fn(&f.block);
            } else {
                visit::visit_impl_item(self, item);
            }
        }
        self.impl_generics = outer;
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.enter_fn(f.sig.ident.to_string(), None, &f.sig, f.sig.ident.span());
            visit::visit_trait_item_fn(self, f);
            self.exit_fn(block);
        }
    }

    fn visit_stmt(&mut self, s: &'ast Stmt) {
        self.stmt_stack.push(s);
        visit::visit_stmt(self, s);
        self.stmt_stack.pop();
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        self.block_writes.push(Written::Nothing);
        let saved = self.guards;
        let saved_params = self.guard_params.len();
        for (i, s) in b.stmts.iter().enumerate() {
            self.visit_stmt(s);
            // `if nothing_changed { return ... }` guards everything after it in this block.
            if let Stmt::Expr(Expr::If(ifx), _) = s
                && ifx.else_branch.is_none()
                && is_write_guard(&ifx.cond)
                && contains_return(&ifx.then_branch)
            {
                self.push_guard(&ifx.cond);
            }
            if let Stmt::Local(l) = s
                && let Some(init) = &l.init
                && let Some((_, diverge)) = &init.diverge
                && contains_return(diverge)
            {
                // `let Some(x) = … else { return }`: a presence guard.
                self.guards += 1;
                self.guard_params.push(None);
            }
            // A sync guard held across a later `.await` in the same block.
            if let Stmt::Local(l) = s {
                self.note_sync_guard(l, &b.stmts[i + 1..]);
            }
        }
        self.guards = saved;
        self.guard_params.truncate(saved_params);
        self.block_writes.pop();
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        visit::visit_local(self, l);
        let mut names = Vec::new();
        pat_idents(&l.pat, &mut names);
        let Some(init) = &l.init else {
            return;
        };
        let expr = &*init.expr;
        let ty_api = match &l.pat {
            Pat::Type(pt) => api_kind_of_type(&pt.ty),
            _ => None,
        };
        let api = ty_api.or_else(|| {
            let mut calls = Vec::new();
            let root = Self::chain(expr, &mut calls);
            match root {
                Expr::Call(c) if calls.iter().all(|m| m.method == "clone") => {
                    self.api_constructor(c)
                }
                other if calls.is_empty() || calls.iter().all(|m| m.method == "clone") => {
                    self.api_receiver(other)
                }
                _ => None,
            }
        });
        // The initialiser printed once for the three token searches below.
        let tokens = expr.to_token_stream();
        let volatile = if yields_plain(expr) {
            Vec::new()
        } else {
            self.find_volatile_in([tokens.clone()])
        };
        let vars = self.fns.last().map(|f| &f.vars);
        let from_param = vars.and_then(|v| param_in_tokens(tokens.clone(), v));
        let whole_param = vars.and_then(|v| whole_param_in_tokens(tokens, v));
        let status_set = self.has_status(expr, 0) && names.len() == 1;
        let controller = if let Expr::Path(_) | Expr::MethodCall(_) | Expr::Call(_) = expr {
            let mut calls = Vec::new();
            let root = Self::chain(expr, &mut calls);
            match self.controller_root(root) {
                // `let controller = Controller::new(api, cfg);` with nothing chained yet: recorded here, so that
                // `controller.run(..)` further down finds it.
                Some(ControllerRoot::New { span, .. }) => {
                    let at = to_span(self.path, span);
                    match self.model.controllers.iter().position(|c| c.span == at) {
                        Some(i) => Some(i),
                        None => self.handle_chain(expr),
                    }
                }
                Some(ControllerRoot::Var(i)) => Some(i),
                None => None,
            }
        } else {
            None
        };
        let of_self = matches!(expr, Expr::Path(p) if p.path.is_ident("self"));
        let object_kind = self.fns.last().and_then(|f| f.model.object_kind.clone());
        if let Some(f) = self.fns.last_mut() {
            for n in &names {
                let mut v = Var {
                    init: (names.len() == 1).then_some(expr),
                    volatile: volatile.clone(),
                    from_param,
                    whole_param,
                    status_set,
                    controller,
                    of_self,
                    ..Default::default()
                };
                if let Some(kind) = &api {
                    v.is_api = true;
                    v.kind = kind.clone().or_else(|| object_kind.clone());
                }
                f.vars.insert(n.clone(), v);
            }
        }
    }

    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        visit::visit_expr_assign(self, a);
        self.note_phase_assign(a);
        let Some(root) = root_var(&a.left) else {
            return;
        };
        let lhs = compact(&a.left);
        let volatile = if yields_plain(&a.right) {
            Vec::new()
        } else {
            self.find_volatile(&[&a.right])
        };
        let sets_status = lhs.ends_with(".status") && compact(&a.right) != "None";
        if let Some(f) = self.fns.last_mut()
            && let Some(v) = f.vars.get_mut(&root)
        {
            v.hold(volatile);
            if sets_status {
                v.status_set = true;
            }
        }
        // `c = c.owns(..)` on a controller variable.
        if let Expr::MethodCall(_) = &*a.right {
            self.handle_chain(&a.right);
        }
    }

    fn visit_expr_try(&mut self, t: &'ast syn::ExprTry) {
        if let Some(k) = call_key(propagation_target(&t.expr)) {
            self.propagated.insert(k);
        }
        visit::visit_expr_try(self, t);
    }

    fn visit_expr_await(&mut self, a: &'ast syn::ExprAwait) {
        if let Some(k) = call_key(&a.base) {
            self.awaited.insert(k);
        }
        visit::visit_expr_await(self, a);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let method = m.method.to_string();
        if matches!(method.as_str(), "unwrap" | "expect")
            && let Some(k) = call_key(propagation_target(&m.receiver))
        {
            self.propagated.insert(k);
        }
        // A chain is flattened once, at its outermost call: its inner calls are met again as the walk goes down
        // the receivers, and flattening each of them anew costs the square of the chain's length.
        if !self.chain_inner.remove(&std::ptr::from_ref(m).addr()) {
            let mut calls = Vec::new();
            let root = Self::chain(&m.receiver, &mut calls);
            self.chain_inner
                .extend(calls.iter().map(|c| std::ptr::from_ref(*c).addr()));
            calls.push(m);
            self.handle_chain_parts(root, calls);
        }
        self.handle_api_call(m);
        if is_write_like(&method) || changes_state(&method) {
            self.mark_write(&method);
        }
        self.record_volatile_args(method.clone(), m.args.iter());
        let plain = self.deletion_path == 0 && self.error_path == 0;
        let callee = match &*m.receiver {
            Expr::Path(p) if p.path.is_ident("self") => Callee::SelfMethod(method.clone()),
            _ => Callee::Method(method.clone()),
        };
        let type_args = m.turbofish.as_ref().map(|t| turbofish(&t.args));
        self.push_call(
            callee,
            type_args.unwrap_or_default(),
            to_pos(m.method.span()),
        );
        if plain {
            self.record_api_arg_call(
                &method,
                true,
                m.args.iter(),
                start_end(self.path, m.method.span(), m.paren_token.span.close()),
                key(m.method.span()),
            );
        }
        // `annotations.insert(KEY, Utc::now()..)` makes `annotations` volatile, under that key.
        if !ApiMethod::named(&method).is_some_and(ApiMethod::is_write)
            && !is_fallback(&method)
            && let Some(root) = root_var(&m.receiver)
        {
            let args: Vec<&Expr> = m.args.iter().collect();
            let mut found = self.find_volatile(&args);
            if !found.is_empty() {
                let named = match args.first() {
                    Some(Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    })) if args.len() > 1 => Some(s.value()),
                    Some(e) if args.len() > 1 => Some(
                        compact(e)
                            .trim_matches('"')
                            .trim_end_matches(".into()")
                            .trim_end_matches(".to_string()")
                            .trim_matches('"')
                            .to_string(),
                    ),
                    _ => None,
                };
                for v in &mut found {
                    if v.key.is_none() {
                        v.key = named.clone();
                    }
                }
                if let Some(f) = self.fns.last_mut()
                    && let Some(v) = f.vars.get_mut(&root)
                {
                    v.hold(found);
                }
            }
        }
        self.record_resolved_call(Callee::Method(method.clone()), m.method.span());
        self.check_metric_call(&method, &m.receiver, &m.args);
        // The closure of an error-mapping method runs on the error path only.
        let error_args = match method.as_str() {
            "map_err" | "or_else" | "unwrap_or_else" | "inspect_err" => m.args.len(),
            "map_or_else" => 1,
            _ => 0,
        };
        self.visit_expr(&m.receiver);
        for (i, a) in m.args.iter().enumerate() {
            if i < error_args {
                self.visit_on_error_path(a);
            } else {
                self.visit_expr(a);
            }
        }
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        let mut spawn_blocking = false;
        let mut retry = false;
        if let Expr::Path(p) = &*c.func {
            let called = self.record_call_name(&p.path);
            // In a function that returns an Action, a call may be what builds it (`requeue::short_retry()`).
            if called.is_some() && self.fns.last().is_some_and(|f| f.model.returns_action) {
                self.record_requeue(&Expr::Call(c.clone()));
            }
            if let Some(name) = called {
                self.record_api_arg_call(
                    &name,
                    false,
                    c.args.iter(),
                    to_span(self.path, call_extent(c)),
                    key(c.func.span()),
                );
            }
            let name = last_ident(&p.path);
            if is_write_like(&name) || changes_state(&name) {
                self.mark_write(&name);
            }
            self.record_volatile_args(last_ident(&p.path), c.args.iter());
            self.note_param_call(&p.path, c.args.iter());
            if p.path.segments.first().is_some_and(|s| s.ident == "Self") {
                let args: Vec<&Expr> = c.args.iter().collect();
                self.note_stored_controller(&args);
            }
            let resolved = self.resolve_call_path(&p.path);
            let last = last_ident(&p.path);
            spawn_blocking = matches!(last.as_str(), "spawn_blocking" | "block_in_place");
            retry = last.to_ascii_lowercase().contains("retry");
            // From the path to the closing parenthesis, without printing the call to find its extent.
            let start = p
                .path
                .segments
                .first()
                .map_or_else(|| c.paren_token.span.open(), |s| s.ident.span());
            let whole = start.join(c.paren_token.span.close()).unwrap_or(start);
            self.record_resolved_call(Callee::Path(resolved.clone()), whole);
            // Requeues.
            if last == "requeue" && compact(&p.path).ends_with("Action::requeue") {
                self.record_requeue(&Expr::Call(c.clone()));
            }
            // Watcher streams.
            if self.is_kube_fn(&p.path, &["watcher", "metadata_watcher"]) {
                let span = self.span(c.span());
                let (stmt, bound) = match self.stmt_stack.last() {
                    Some(st) => {
                        let bound = match st {
                            Stmt::Local(l) => pat_ident(&l.pat),
                            _ => None,
                        };
                        (compact(*st), bound)
                    }
                    None => (String::new(), None),
                };
                if let Some(f) = self.fns.last_mut() {
                    f.watcher_candidates.push((span, bound, stmt));
                }
            }
            self.handle_alias_call(c, &resolved, &last);
            if last == "new"
                && compact(&p.path).ends_with("KeyValue::new")
                && let Some(v) = c.args.iter().nth(1)
            {
                self.check_label_value(v);
            }
        }
        if spawn_blocking {
            self.blocking_ok += 1;
        }
        if retry {
            self.retry_closure += 1;
        }
        let err_value = matches!(&*c.func, Expr::Path(p) if last_ident(&p.path) == "Err");
        self.error_path += usize::from(err_value);
        self.err_values += usize::from(err_value);
        visit::visit_expr_call(self, c);
        self.err_values -= usize::from(err_value);
        self.error_path -= usize::from(err_value);
        if spawn_blocking {
            self.blocking_ok -= 1;
        }
        if retry {
            self.retry_closure -= 1;
        }
    }

    fn visit_expr_struct(&mut self, s: &'ast syn::ExprStruct) {
        if compact(&s.path).ends_with("ReconcilerAction") {
            self.record_requeue(&Expr::Struct(s.clone()));
        }
        self.note_struct_literal(s);
        self.note_phase_fields(s);
        visit::visit_expr_struct(self, s);
    }

    fn visit_expr_macro(&mut self, m: &'ast syn::ExprMacro) {
        self.check_metric_macro(&m.mac);
        self.note_log(&m.mac);
        visit::visit_expr_macro(self, m);
    }

    fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
        self.check_metric_macro(&m.mac);
        self.note_log(&m.mac);
        visit::visit_stmt_macro(self, m);
    }

    fn visit_expr_if(&mut self, i: &'ast syn::ExprIf) {
        let top_level = self.branches == 0 && self.current_scope().is_none();
        let calls_before = self.api_call_count();
        self.visit_expr(&i.cond);
        let checks_by_reading = self.read_since(calls_before);
        // One text of the condition for the three tests that read it.
        let cond_text = compact(&i.cond);
        let guard = is_write_guard_text(&i.cond, &cond_text);
        if guard {
            self.push_guard(&i.cond);
        }
        self.branches += 1;
        let on_error = is_error_condition(&i.cond);
        self.error_path += usize::from(on_error);
        let deleting = deletion_condition(&i.cond, &cond_text);
        self.deletion_path += usize::from(deleting == Some(true));
        self.change_branches.push(signals_change(&cond_text));
        let (then_cond, else_cond) = Self::branch_conds(&i.cond, &cond_text);
        self.conditions.push(Some(then_cond));
        let then_fails = block_fails(&i.then_branch);
        let mut wrote = vec![self.in_arm(then_fails, |s| s.visit_block(&i.then_branch))];
        self.conditions.pop();
        self.change_branches.pop();
        self.deletion_path -= usize::from(deleting == Some(true));
        self.error_path -= usize::from(on_error);
        if let Some((_, e)) = &i.else_branch {
            self.deletion_path += usize::from(deleting == Some(false));
            self.conditions.push(else_cond);
            wrote.push(self.in_arm(arm_fails(e), |s| s.visit_expr(e)));
            self.conditions.pop();
            self.deletion_path -= usize::from(deleting == Some(false));
        } else {
            // No else: the branch may not run at all.
            wrote.push(false);
        }
        self.branches -= 1;
        self.every_arm_wrote(&wrote);
        if guard {
            self.pop_guard();
        }
        // `if api.get_opt(name).await?.is_some() { return Ok(()) }`: what follows runs only to put it in place.
        // Not in a function that returns an Action: a reconcile's early returns (suspended, parent missing) leave
        // the rest of it to run on every other pass.
        if top_level
            && checks_by_reading
            && i.else_branch.is_none()
            && contains_return(&i.then_branch)
            && let Some(f) = self.fns.last_mut()
            && !f.model.returns_action
        {
            f.guarded_reads = Some(Vec::new());
        }
    }

    fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
        self.visit_expr(&m.expr);
        // `match phase { Phase::Completed => .. }`: `phase` holds one of an enum's variants.
        if let Expr::Path(p) = &*m.expr
            && let Some(name) = p.path.get_ident()
            && m.arms.iter().any(|a| is_variant_pattern(&a.pat))
            && let Some(f) = self.fns.last_mut()
        {
            f.enum_vars.insert(name.to_string());
        }
        self.record_dispatch(m);
        self.branches += 1;
        let mut wrote = Vec::new();
        for arm in &m.arms {
            if let Some((_, g)) = &arm.guard {
                self.visit_expr(g);
            }
            let deleting = is_cleanup_pattern(&arm.pat);
            self.deletion_path += usize::from(deleting);
            if is_err_pattern(&arm.pat) {
                self.visit_on_error_path(&arm.body);
            } else {
                let names = variant_names(&arm.pat);
                let frame = !names.is_empty();
                if frame {
                    self.variants.push(names);
                }
                wrote.push(self.in_phase_arm(&arm.pat, |s| {
                    s.in_arm(arm_fails(&arm.body), |s| s.visit_expr(&arm.body))
                }));
                if frame {
                    self.variants.pop();
                }
            }
            self.deletion_path -= usize::from(deleting);
        }
        self.branches -= 1;
        self.every_arm_wrote(&wrote);
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        let range = matches!(&*f.expr, Expr::Range(_));
        // The body's text is made only when its source names something `record_spawning_loop` looks for, or
        // the loop may be a retry: each word it looks for appears in the source wherever it appears in the text.
        let wanted = range
            || self.block_source(&f.body).is_none_or(|src| {
                ["spawn", "push", "JoinSet", "FuturesUnordered", "join_all"]
                    .iter()
                    .any(|w| src.contains(w))
            });
        let body = if wanted {
            self.block_text(&f.body)
        } else {
            String::new()
        };
        self.record_spawning_loop(f, &body);
        self.visit_expr(&f.expr);
        // `for attempt in 1..=n { … 409 … }` is a bounded retry, not an iteration over objects.
        let retry = range && tells_conflict(&source_text::error_signs(&body));
        let scope = if retry { Scope::Loop } else { Scope::For };
        self.with_scope(scope, |s| s.visit_block(&f.body));
    }

    fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
        let is_let = matches!(&*w.cond, Expr::Let(_));
        if !is_let {
            self.record_sleeping_loop(w.while_token.span, &w.body);
        }
        self.visit_expr(&w.cond);
        self.with_scope(Scope::While, |s| s.visit_block(&w.body));
    }

    fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
        self.record_sleeping_loop(l.loop_token.span, &l.body);
        self.with_scope(Scope::Loop, |s| s.visit_block(&l.body));
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        let saved = self.branches;
        self.branches = 0;
        self.with_scope(Scope::Closure, |s| visit::visit_expr_closure(s, c));
        self.branches = saved;
    }

    fn visit_expr_return(&mut self, r: &'ast syn::ExprReturn) {
        // Judged with the bindings as they stand here: a later `let` of the same name is another value.
        if let Some(e) = &r.expr
            && self.current_scope() != Some(Scope::Closure)
            && self
                .fns
                .last()
                .is_some_and(|f| f.model.returns_volatile.is_some())
        {
            let carries = self
                .find_volatile(&[e])
                .first()
                .is_some_and(|v| v.via.is_none());
            if let Some(f) = self.fns.last_mut() {
                f.returns_carry.push(carries);
            }
        }
        self.note_return(r);
        visit::visit_expr_return(self, r);
    }

    fn visit_expr_async(&mut self, a: &'ast syn::ExprAsync) {
        self.with_scope(Scope::Closure, |s| visit::visit_expr_async(s, a));
    }
}
