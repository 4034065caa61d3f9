//! `Controller` builder chains across bindings and helper functions, their `.run(..)`, concurrency and
//! predicates; watcher streams consumed outside a Controller; per-namespace builders.

use super::*;

/// A function of the file that returns a `Controller<K>`, and what its body says about the one it builds.
#[derive(Debug, Clone)]
pub(super) struct ControllerBuilder {
    /// The method calls of its body, as stream steps (it builds the stream there, or hands one in).
    pub(super) steps: Vec<StreamStep>,
    pub(super) configured: bool,
    /// `Controller::for_stream(p, ..)` on its parameter at this position: the caller's stream decides.
    pub(super) stream_param: Option<usize>,
}

pub(super) enum ControllerRoot {
    New {
        span: proc_macro2::Span,
        kind: Option<String>,
        stream: Vec<StreamStep>,
        config: ConcurrencyConfig,
    },
    Var(usize),
}

/// The method calls in an expression or block, outermost last, each with the names its arguments use.
pub(super) fn stream_steps<'a>(nodes: impl IntoIterator<Item = StreamNode<'a>>) -> Vec<StreamStep> {
    struct Names(Vec<String>);
    impl<'ast> Visit<'ast> for Names {
        fn visit_ident(&mut self, i: &'ast proc_macro2::Ident) {
            self.0.push(i.to_string());
        }
    }
    struct Steps(Vec<StreamStep>);
    impl<'ast> Visit<'ast> for Steps {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            visit::visit_expr_method_call(self, m);
            let mut names = Names(Vec::new());
            for a in &m.args {
                names.visit_expr(a);
            }
            self.0.push(StreamStep {
                method: m.method.to_string(),
                arg_names: names.0,
            });
        }
    }
    let mut steps = Steps(Vec::new());
    for n in nodes {
        match n {
            StreamNode::Expr(e) => steps.visit_expr(e),
            StreamNode::Block(b) => steps.visit_block(b),
        }
    }
    steps.0
}

/// Where [`stream_steps`] looks.
pub(super) enum StreamNode<'a> {
    Expr(&'a Expr),
    Block(&'a syn::Block),
}
pub(super) fn has_backoff(stmt: &str) -> bool {
    stmt.contains("backoff(") || stmt.contains("StreamBackoff") || stmt.contains("default_backoff")
}
pub(super) fn hands_to_controller(stmt: &str) -> bool {
    stmt.contains("for_stream")
        || stmt.contains("owns_stream")
        || stmt.contains("watches_stream")
        || stmt.contains("Controller::")
}
pub(super) fn consumes(stmt: &str, name: Option<&str>) -> bool {
    let consumers = [
        ".for_each(",
        ".try_for_each(",
        ".next()",
        ".try_next()",
        ".for_each_concurrent(",
        ".collect::<",
        "spawn(",
    ];
    match name {
        None => consumers.iter().any(|c| stmt.contains(c)),
        Some(n) => {
            consumers.iter().any(|c| stmt.contains(&format!("{n}{c}")))
                || stmt.contains(&format!("spawn({n}"))
                || stmt.contains(&format!("pin_mut!({n})")) && stmt.contains("next()")
        }
    }
}
/// Byte offsets of `Api::namespaced(`/`Api::<K>::namespaced_with(` calls in compact text.
pub(super) fn namespaced_api_calls(body: &str) -> Vec<usize> {
    body.match_indices("::namespaced")
        .filter(|(i, _)| {
            let start = i.saturating_sub(48);
            body.get(start..*i)
                .is_some_and(|before| before.contains("Api"))
        })
        .map(|(i, _)| i)
        .collect()
}
/// The span of a `Controller::new(`/`Controller::for_stream(`/`watcher(` call in a block.
pub(super) fn find_controller_build(b: &syn::Block) -> Option<proc_macro2::Span> {
    struct F(Option<proc_macro2::Span>);
    impl<'ast> Visit<'ast> for F {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if self.0.is_none()
                && let Expr::Path(p) = &*c.func
            {
                let t = compact(&p.path);
                if t.ends_with("Controller::new")
                    || t.contains("Controller::for_stream")
                    || t.ends_with("watcher")
                {
                    self.0 = Some(c.span());
                }
            }
            visit::visit_expr_call(self, c);
        }
    }
    let mut f = F(None);
    f.visit_block(b);
    f.0
}
/// Whether a function body (its compact text) builds a Controller/watcher from `Api::namespaced(_, param)`
/// with the namespace taken from one of `params`: where it builds it, if so.
pub(super) fn namespaced_controller_build(
    body: &str,
    params: &[String],
    block: &syn::Block,
) -> Option<proc_macro2::Span> {
    let calls = namespaced_api_calls(body);
    let ns_from_param = params.iter().filter(|p| !p.is_empty()).any(|p| {
        calls.iter().any(|i| {
            let tail: String = body[*i..].chars().take(160).collect();
            let args = tail.split(')').next().unwrap_or("");
            contains_ident(args, p)
        })
    });
    if ns_from_param {
        find_controller_build(block)
    } else {
        None
    }
}

impl<'ast> Extractor<'_, 'ast> {
    /// Flattens `a.b().c()` into its root and the method calls from the root outwards.
    pub(super) fn chain<'e>(e: &'e Expr, out: &mut Vec<&'e syn::ExprMethodCall>) -> &'e Expr {
        match e {
            Expr::MethodCall(m) => {
                let root = Self::chain(&m.receiver, out);
                out.push(m);
                root
            }
            Expr::Await(a) => Self::chain(&a.base, out),
            Expr::Try(t) => Self::chain(&t.expr, out),
            Expr::Paren(p) => Self::chain(&p.expr, out),
            other => other,
        }
    }

    /// Is the type of `Controller::new(..)` (every segment but the constructor) kube's, as far as the file can
    /// tell? Not when it is the crate's own: a path into the crate (`crate::supervisor::Controller`, imported or
    /// written out), or a bare `Controller` that the file declares itself and imports from nowhere. Anything
    /// else — kube's paths, a framework's re-export, a glob import — is taken for kube's.
    fn is_kube_controller_type(
        &self,
        segs: &syn::punctuated::Punctuated<syn::PathSegment, syn::Token![::]>,
    ) -> bool {
        let names: Vec<String> = segs
            .iter()
            .take(segs.len().saturating_sub(1))
            .map(|s| s.ident.to_string())
            .collect();
        let resolved = self.imports.resolve(&names);
        if ["crate::", "self::", "super::"]
            .iter()
            .any(|p| resolved.starts_with(p))
        {
            return false;
        }
        let bare_local = names.len() == 1
            && !self.imports.is_imported(&names[0])
            && self.local_types.contains(&names[0]);
        !bare_local
    }

    pub(super) fn controller_root(&self, root: &Expr) -> Option<ControllerRoot> {
        match root {
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else { return None };
                let segs = &p.path.segments;
                // A crate function that builds and returns the Controller: `controller(api, cfg).run(..)`.
                if let Some(last) = segs.last()
                    && let Some(b) = self.controller_builders.get(&last.ident.to_string())
                {
                    // The builder's own steps, and the stream handed in where the caller built it.
                    let mut stream = b.steps.clone();
                    if let Some(a) = b.stream_param.and_then(|i| c.args.iter().nth(i)) {
                        stream.extend(self.stream_of(a));
                    }
                    return Some(ControllerRoot::New {
                        span: c.span(),
                        kind: None,
                        stream,
                        config: if b.configured {
                            ConcurrencyConfig::Unknown
                        } else {
                            ConcurrencyConfig::Absent
                        },
                    });
                }
                if segs.len() < 2 {
                    return None;
                }
                let ty = &segs[segs.len() - 2];
                let ctor = segs[segs.len() - 1].ident.to_string();
                let resolved = self.imports.resolve(&[ty.ident.to_string()]);
                if ty.ident != "Controller" && !resolved.ends_with("::Controller") {
                    return None;
                }
                if !self.is_kube_controller_type(segs) {
                    return None;
                }
                if !matches!(
                    ctor.as_str(),
                    "new"
                        | "new_with"
                        | "for_stream"
                        | "for_stream_with"
                        | "for_shared_stream"
                        | "for_shared_stream_with"
                ) {
                    return None;
                }
                let turbofish = first_type_argument_kind(&ty.arguments);
                let first = c.args.first();
                let mut kind = turbofish;
                let mut stream = Vec::new();
                if let Some(a) = first {
                    if kind.is_none() {
                        kind = self.api_receiver(a).flatten();
                    }
                    // `Controller::new(api, ..)` takes an `Api`, not a stream: only `for_*` take one.
                    if ctor.starts_with("for_") {
                        stream = self.stream_of(a);
                        if kind.is_none() {
                            let mut text = compact(a);
                            if let Some(v) = root_var(a).and_then(|n| self.var(&n))
                                && let Some(init) = &v.init
                            {
                                text.push_str(&compact(init));
                            }
                            kind = self.kind_in_expr_vars(&text);
                        }
                    }
                }
                Some(ControllerRoot::New {
                    span: c.span(),
                    kind,
                    stream,
                    config: ConcurrencyConfig::Absent,
                })
            }
            Expr::Path(p) if p.path.segments.len() == 1 => {
                let v = self.var(&p.path.segments[0].ident.to_string())?;
                v.controller.map(ControllerRoot::Var)
            }
            _ => None,
        }
    }

    /// The steps of a stream expression, and of the binding's initialiser when it is one.
    fn stream_of(&self, a: &Expr) -> Vec<StreamStep> {
        let init = root_var(a).and_then(|n| self.var(&n)).and_then(|v| v.init);
        stream_steps(std::iter::once(StreamNode::Expr(a)).chain(init.map(StreamNode::Expr)))
    }

    pub(super) fn kind_in_expr_vars(&self, text: &str) -> Option<String> {
        let f = self.fns.last()?;
        f.vars.iter().find_map(|(name, v)| {
            (v.is_api && v.kind.is_some() && contains_ident(text, name))
                .then(|| v.kind.clone())
                .flatten()
        })
    }

    pub(super) fn concurrency_of(&self, arg: &Expr) -> ConcurrencyConfig {
        let mut text = compact(arg);
        if let Some(n) = root_var(arg)
            && let Some(v) = self.var(&n)
        {
            match &v.init {
                Some(i) => text = compact(i),
                None => return ConcurrencyConfig::Unknown,
            }
        }
        if let Some(i) = text.find(".concurrency(") {
            let rest = &text[i + ".concurrency(".len()..];
            let arg: String = rest.chars().take_while(|c| *c != ')').collect();
            return match arg.trim_end_matches("u16").parse::<u64>() {
                Ok(n) if n > 0 => ConcurrencyConfig::Limit(n),
                Ok(_) => ConcurrencyConfig::Default,
                Err(_) => ConcurrencyConfig::Unknown,
            };
        }
        if text.contains("default()") || text.contains("Default::default") {
            ConcurrencyConfig::Default
        } else {
            ConcurrencyConfig::Unknown
        }
    }

    pub(super) fn handle_chain(&mut self, outer: &Expr) -> Option<usize> {
        let mut calls = Vec::new();
        let root = Self::chain(outer, &mut calls);
        self.handle_chain_parts(root, calls)
    }

    /// Records a Controller builder chain: its root and the method calls from the root outwards.
    pub(super) fn handle_chain_parts(
        &mut self,
        root: &Expr,
        calls: Vec<&syn::ExprMethodCall>,
    ) -> Option<usize> {
        let Some(croot) = self.controller_root(root) else {
            self.note_self_run(root, &calls);
            return None;
        };
        let idx = match croot {
            ControllerRoot::New {
                span,
                kind,
                stream,
                config,
            } => {
                let k = key(span);
                if !self.seen_chains.insert(k) {
                    return None;
                }
                let in_fn = self.fn_name();
                self.model.controllers.push(ControllerModel {
                    span: self.span(span),
                    in_fn,
                    kind,
                    stream,
                    config,
                    run: None,
                    stored_in: None,
                });
                self.model.controllers.len() - 1
            }
            ControllerRoot::Var(i) => {
                if let Some(first) = calls.first()
                    && !self.seen_chains.insert(key(first.method.span()))
                {
                    return Some(i);
                }
                i
            }
        };
        for m in calls {
            let name = m.method.to_string();
            match name.as_str() {
                "with_config" => {
                    if let Some(a) = m.args.first() {
                        let c = self.concurrency_of(a);
                        self.model.controllers[idx].config = c;
                    }
                }
                "run" => {
                    let run = self.run_call(m);
                    self.model.controllers[idx].run = Some(run);
                }
                _ => {}
            }
        }
        Some(idx)
    }

    /// What a `.run(reconcile, error_policy, ctx)` call starts.
    fn run_call(&self, m: &syn::ExprMethodCall) -> RunCall {
        let fn_name = |e: Option<&Expr>| -> Option<String> {
            match e? {
                // `controller_pool::reconcile` keeps its module, as a call does (see `call_name`).
                Expr::Path(p) => self
                    .call_name(&p.path)
                    .or_else(|| p.path.segments.last().map(|s| s.ident.to_string())),
                Expr::Closure(c) => first_called_name(&c.body),
                // `backoff_reconciler!(reconcile_kanidm)`: a wrapper macro around the reconcile.
                Expr::Macro(mac) => mac.mac.tokens.clone().into_iter().find_map(|t| match t {
                    TokenTree::Ident(i) => Some(i.to_string()),
                    _ => None,
                }),
                _ => None,
            }
        };
        // An error_policy written inline as a closure is judged where it stands.
        let inline_policy = match m.args.iter().nth(1) {
            Some(Expr::Closure(c)) => {
                let exprs = match &*c.body {
                    Expr::Block(b) => collect_returns(&b.block),
                    other => vec![other.clone()],
                };
                match self.fns.last() {
                    Some(f) => exprs.iter().map(|e| self.requeue_of(e, f)).collect(),
                    None => Vec::new(),
                }
            }
            _ => Vec::new(),
        };
        RunCall {
            span: start_end(self.path, m.method.span(), m.span()),
            reconcile: fn_name(m.args.first()),
            error_policy: match m.args.iter().nth(1) {
                Some(Expr::Closure(_)) => None,
                other => fn_name(other),
            },
            inline_policy,
            reconciler_from: None,
            singleton: false,
        }
    }

    /// `.run(..)` on a Controller a method takes from `self`: recorded for the crate join to link with the
    /// Controller the type was built with (see `ControllerModel::stored_in`).
    fn note_self_run(&mut self, root: &Expr, calls: &[&syn::ExprMethodCall]) {
        let Some(run) = calls
            .iter()
            .find(|m| m.method == "run" && m.args.len() == 3)
        else {
            return;
        };
        let of_self = match root {
            Expr::Field(f) => matches!(&*f.base, Expr::Path(p) if p.path.is_ident("self")),
            Expr::Path(p) => p
                .path
                .get_ident()
                .and_then(|i| self.var(&i.to_string()))
                .is_some_and(|v| v.of_self),
            _ => false,
        };
        let Some(self_ty) = self
            .fns
            .last()
            .and_then(|f| f.model.self_ty.clone())
            .filter(|_| of_self)
        else {
            return;
        };
        let config = calls
            .iter()
            .rev()
            .find(|m| m.method == "with_config")
            .and_then(|m| m.args.first())
            .map_or(ConcurrencyConfig::Absent, |a| self.concurrency_of(a));
        let run = self.run_call(run);
        // The chain is met again at each of its calls: `c.run(..).for_each(..)`, then `c.run(..)`.
        if self.model.self_runs.iter().any(|r| r.run.span == run.span) {
            return;
        }
        let in_fn = self.fn_name();
        self.model.self_runs.push(SelfRun {
            self_ty,
            in_fn,
            run,
            config,
        });
    }

    /// A Controller variable handed to `Self::new(..)` or put in a `Self { .. }` literal: stored in the type.
    pub(super) fn note_stored_controller(&mut self, args: &[&Expr]) {
        let Some(self_ty) = self.fns.last().and_then(|f| f.model.self_ty.clone()) else {
            return;
        };
        for a in args {
            if let Some(i) = root_var(a)
                .and_then(|n| self.var(&n))
                .and_then(|v| v.controller)
            {
                self.model.controllers[i].stored_in = Some(self_ty.clone());
            }
        }
    }
}
