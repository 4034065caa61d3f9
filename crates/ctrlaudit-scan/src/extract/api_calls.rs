//! Calls of kube `Api` methods (and of configured wrappers): the receiver's kind, the verb and subresource, the
//! body, and the context of the call (loop, retry, error path, conflict handling).

use super::*;

/// Name prefixes of calls that change something: the kube write verbs and the helpers operators wrap them in
/// (`ensure_secret`, `patch_phase`, `add_finalizer`, `scale_desired`).
pub(super) const WRITE_LIKE_PREFIXES: &[&str] = &[
    "patch", "apply", "create", "update", "ensure", "delete", "remove", "add_", "set_", "write",
    "scale", "replace", "upsert",
];
pub(super) fn is_write_like(name: &str) -> bool {
    ApiMethod::named(name).is_some_and(ApiMethod::is_write)
        || WRITE_LIKE_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// A call that moves an object to a new state rather than re-applying what it should look like: `create`, a status
/// write, or a crate function that writes a status or phase (`set_phase`, `update_status`) or says it transitions.
/// An idempotent apply or scale every pass is not one.
pub(super) fn changes_state(name: &str) -> bool {
    matches!(name, "create" | "patch_status" | "replace_status")
        || name.starts_with("transition")
        || (is_write_like(name) && (name.contains("status") || name.contains("phase")))
}

impl<'ast> Extractor<'_, 'ast> {
    pub(super) fn resolve_call_path(&self, p: &syn::Path) -> String {
        self.imports.resolve(&path_segments(p))
    }

    /// Does this expression denote a kube `Api`? Returns its kind if known.
    pub(super) fn api_receiver(&self, e: &Expr) -> Option<Option<String>> {
        match e {
            Expr::Path(p) if p.path.segments.len() == 1 => {
                let v = self.var(&p.path.segments[0].ident.to_string())?;
                v.is_api.then(|| v.kind.clone())
            }
            Expr::Field(f) => {
                let name = match &f.member {
                    syn::Member::Named(i) => i.to_string(),
                    syn::Member::Unnamed(_) => return None,
                };
                self.api_fields.get(&name).map(|k| Some(k.clone()))
            }
            Expr::Reference(r) => self.api_receiver(&r.expr),
            Expr::Paren(p) => self.api_receiver(&p.expr),
            Expr::MethodCall(m) if m.method == "clone" || m.method == "as_ref" => {
                self.api_receiver(&m.receiver)
            }
            Expr::Call(c) => self.api_constructor(c),
            _ => None,
        }
    }

    /// `Api::namespaced(..)`, `Api::<K>::all(..)`, `Api::default_namespaced(..)`.
    pub(super) fn api_constructor(&self, c: &syn::ExprCall) -> Option<Option<String>> {
        let Expr::Path(p) = &*c.func else {
            return None;
        };
        let segs = &p.path.segments;
        if segs.len() < 2 {
            return None;
        }
        let api_seg = &segs[segs.len() - 2];
        if api_seg.ident != "Api" {
            return None;
        }
        let ctor = segs[segs.len() - 1].ident.to_string();
        if !ctor.starts_with("namespaced")
            && !ctor.starts_with("all")
            && !ctor.starts_with("default_namespaced")
        {
            return None;
        }
        Some(first_type_argument_kind(&api_seg.arguments))
    }

    /// Is `p` the path of the kube function `name` (e.g. `watcher`)?
    pub(super) fn is_kube_fn(&self, p: &syn::Path, names: &[&str]) -> bool {
        let Some(last) = p.segments.last() else {
            return false;
        };
        if !names.iter().any(|n| last.ident == n) {
            return false;
        }
        let resolved = self.resolve_call_path(p);
        if is_kube_path(&resolved) {
            return true;
        }
        let first = p.segments[0].ident.to_string();
        // A bare name or `watcher::watcher` with no explicit import may come in through a kube glob.
        !self.imports.is_imported(&first)
            && (p.segments.len() == 1 || first == "watcher" || first == "reflector")
            && self.imports.glob_from(&["kube", "kube_runtime"])
    }

    /// Records a call of a crate function by the name the crate join resolves, and returns that name.
    pub(super) fn record_call_name(&mut self, p: &syn::Path) -> Option<String> {
        let name = self.call_name(p)?;
        let type_args = p
            .segments
            .last()
            .map(|s| match &s.arguments {
                syn::PathArguments::AngleBracketed(a) => turbofish(&a.args),
                _ => Vec::new(),
            })
            .unwrap_or_default();
        self.push_call(Callee::Path(name.clone()), type_args, to_pos(p.span()));
        Some(name)
    }

    /// The name the crate join resolves a called path by; `None` for what is no crate function (an external
    /// crate's, a tuple struct or variant).
    pub(super) fn call_name(&self, p: &syn::Path) -> Option<String> {
        let segs = path_segments(p);
        let last = segs.last().cloned()?;
        let resolved = self.imports.resolve(&segs);
        let root = resolved.split("::").next().unwrap_or("");
        let external = segs.len() > 1 && EXTERNAL_ROOTS.contains(&root) && root != "crate";
        let is_type_ctor =
            segs.len() == 1 && last.chars().next().is_some_and(|c| c.is_ascii_uppercase());
        // `resources::deployment(..)` keeps its module, so that the crate join can tell it from another file's
        // `deployment` (see `Unit::resolve`); `super::f` keeps `super`: it is never this file's `f`.
        // A bare name imported from a module of the crate (`use crate::controller::common::patch_status;`) keeps
        // that module too, so that another file's `patch_status` is not taken for it.
        let imported: Vec<&str> = resolved.split("::").collect();
        // `T::reconcile_record(..)` on a type parameter: a trait method, answered by whichever impl of the crate
        // the instantiation picks (see `Unit::resolve`).
        if segs.len() == 2
            && self
                .fns
                .last()
                .is_some_and(|f| f.generics.contains(&segs[0]))
        {
            return Some(format!("{GENERIC}::{last}"));
        }
        let name = match segs.len() {
            n if n >= 2 && !matches!(segs[n - 2].as_str(), "Self" | "self" | "crate") => {
                format!("{}::{last}", segs[n - 2])
            }
            1 if imported.len() >= 2
                && matches!(imported[0], "crate" | "super" | "self")
                && !matches!(imported[imported.len() - 2], "crate" | "super" | "self") =>
            {
                format!("{}::{last}", imported[imported.len() - 2])
            }
            _ => last,
        };
        (!external && !is_type_ctor).then_some(name)
    }

    pub(super) fn handle_api_call(&mut self, m: &syn::ExprMethodCall) {
        let Some(method) = ApiMethod::named(&m.method.to_string()) else {
            return;
        };
        let args: Vec<&Expr> = m.args.iter().collect();
        let args_text = compact(&m.args);
        let mut kind_known = self.api_receiver(&m.receiver);
        if method == ApiMethod::Commit {
            let via_var = root_var(&m.receiver)
                .and_then(|n| self.var(&n))
                .and_then(|v| v.init)
                .is_some_and(|i| compact(i).contains(".entry("));
            if !compact(&m.receiver).contains(".entry(") && !via_var {
                return;
            }
            kind_known = Some(None);
        }
        let kind = match kind_known {
            Some(k) => k,
            None => {
                // An unknown receiver still counts when the arguments are kube's parameter types.
                let params = [
                    "PatchParams",
                    "PostParams",
                    "DeleteParams",
                    "ListParams",
                    "Patch::",
                ];
                if !params.iter().any(|p| args_text.contains(p)) {
                    // `ctx.process_api(ns).get(name)`: an API call if that function returns an `Api`.
                    if let Some(producer) = self.api_producer(&m.receiver, 0) {
                        let call = ApiCall {
                            via_producer: Some(producer),
                            ..self.api_call_here(
                                method,
                                start_end(self.path, m.method.span(), m.span()),
                                None,
                                false,
                                key(m.method.span()),
                                format!("{}.{}", compact(&m.receiver), method),
                            )
                        };
                        self.push_api_call(call);
                    }
                    return;
                }
                None
            }
        };
        let object_kind = self.fns.last().and_then(|f| f.model.object_kind.clone());
        // `let api = Api::namespaced(..)` without a type is inferred from use; in a reconcile
        // the object written is, as a rule, the reconciled one.
        let kind = kind.or(object_kind);
        let mk = key(m.method.span());
        let body_has_status = match method {
            ApiMethod::Patch | ApiMethod::Replace => {
                args.get(2).is_some_and(|b| self.has_status(b, 0))
            }
            _ => false,
        };
        let call = ApiCall {
            server_side_apply: method == ApiMethod::Patch
                && (args_text.contains("Patch::Apply") || args_text.contains("PatchParams::apply")),
            ..self.api_call_here(
                method,
                start_end(self.path, m.method.span(), m.span()),
                kind,
                body_has_status,
                mk,
                format!("{}.{}", compact(&m.receiver), method),
            )
        };
        let is_body_write = method.writes_body();
        if is_body_write && self.guards == 0 {
            let body: Vec<&Expr> = args.iter().skip(1).copied().collect();
            let found = self.find_volatile(&body);
            // Only a value the file sees to be volatile settles it; a helper's result may be plain.
            let settled = found.first().is_some_and(|v| v.via.is_none());
            let param = if settled {
                None
            } else {
                self.param_in(body.last().map(std::slice::from_ref).unwrap_or(&[]))
            };
            if let Some(f) = self.fns.last_mut() {
                f.model
                    .volatile_writes
                    .extend(found.into_iter().map(|v| VolatileWrite {
                        span: v.span,
                        source: v.source,
                        write: call.clone(),
                        key: v.key,
                        via: v.via,
                    }));
                if let Some(index) = param {
                    f.model.param_writes.push((index, call.clone()));
                }
            }
        } else if is_body_write
            && let Some(index) = self.param_in(args.last().map(std::slice::from_ref).unwrap_or(&[]))
            && self.only_self_compared(index)
            && let Some(f) = self.fns.last_mut()
        {
            // `if unchanged { return }` where `unchanged` compares the very value written: what the caller hands
            // in decides whether it holds anything back.
            f.model.param_writes.push((index, call.clone()));
        }
        self.push_api_call(call);
    }

    /// A write-like call in the innermost block: what follows in it comes after a change.
    pub(super) fn mark_write(&mut self, name: &str) {
        self.note_top_level_write();
        let level = if changes_state(name) {
            Written::StateChange
        } else {
            Written::Write
        };
        if let Some(b) = self.block_writes.last_mut() {
            *b = (*b).max(level);
        }
        if name.starts_with("delete")
            && let Some(arm) = self.fns.last_mut().and_then(|f| f.arms.last_mut())
        {
            arm.deleted = true;
        }
    }

    /// An API call at the node being visited, with where it stands: in a loop, on an error path, after a change.
    /// `at` is the key of the call's name, under which its `?`/`.await` were remembered.
    fn api_call_here<M>(
        &self,
        method: M,
        span: Span,
        kind: Option<String>,
        body_has_status: bool,
        at: (usize, usize),
        text: String,
    ) -> ApiCall<M> {
        let scope = self.current_scope();
        ApiCall {
            method,
            span,
            kind,
            body_has_status,
            awaited_in_iteration: self.awaited.contains(&at)
                && matches!(scope, Some(Scope::For | Scope::While)),
            in_retry: matches!(scope, Some(Scope::Loop | Scope::While)) || self.retry_closure > 0,
            propagated: self.propagated.contains(&at),
            on_error: self.error_path > 0,
            on_branch: self.branches > 0,
            on_deletion: self.deletion_path > 0,
            guard: self.innermost_guard(),
            after_change_on_branch: self.after_change_on_branch(),
            then_writes_on_branch: false,
            leaves_phase: self.phase_arms.iter().any(|(_, moved)| *moved),
            server_side_apply: false,
            one_page: false,
            unversioned: false,
            cached: false,
            client: None,
            text,
            via_producer: None,
        }
    }

    /// The function whose return value `e` is, when it may be an `Api` this file cannot type: named like one
    /// (`process_api`, `api_for`) — the crate join checks what it returns.
    fn api_producer(&self, e: &Expr, depth: usize) -> Option<(String, bool)> {
        let named_api = |n: &str| n.to_ascii_lowercase().contains("api");
        match e {
            Expr::MethodCall(m) => {
                let n = m.method.to_string();
                named_api(&n).then_some((n, true))
            }
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else {
                    return None;
                };
                let n = self.call_name(&p.path)?;
                named_api(&n).then_some((n, false))
            }
            Expr::Reference(r) => self.api_producer(&r.expr, depth),
            Expr::Paren(p) => self.api_producer(&p.expr, depth),
            Expr::Path(p) if depth == 0 => {
                let v = self.var(&p.path.get_ident()?.to_string())?;
                self.api_producer(v.init?, depth + 1)
            }
            _ => None,
        }
    }

    /// A call that hands a kube `Api` to a function (`self.apply(&api, obj)`), or calls a function through its
    /// module (`list::default(&pools)`, whose `pools` may come from anywhere): if the crate join finds that
    /// function to be a dependency's thin wrapper of one API call, this is that call.
    pub(super) fn record_api_arg_call<'e>(
        &mut self,
        callee: &str,
        method: bool,
        args: impl Iterator<Item = &'e Expr>,
        span: Span,
        at: (usize, usize),
    ) {
        // Once per deletion is not what the rules judge a call site for.
        if self.deletion_path > 0 {
            return;
        }
        let api = args.into_iter().find_map(|a| self.api_receiver(a));
        let passes_api = api.is_some();
        let kind = match api {
            Some(kind) => kind,
            None if !method && callee.contains("::") => None,
            None => return,
        };
        let call = self.api_call_here((), span, kind, false, at, format!("{callee}(..)"));
        if let Some(f) = self.fns.last_mut() {
            f.model.api_arg_calls.push(ApiArgCall {
                callee: if method {
                    Callee::Method(callee.to_string())
                } else {
                    Callee::Path(callee.to_string())
                },
                passes_api,
                call,
            });
        }
    }

    /// A call of a wrapper named in `[aliases]` counts as the kube call it wraps.
    pub(super) fn handle_alias_call(&mut self, c: &syn::ExprCall, resolved: &str, last: &str) {
        let method = self
            .aliases
            .get(resolved)
            .or_else(|| self.aliases.get(last))
            .or_else(|| {
                self.aliases
                    .iter()
                    .find(|(k, _)| k.rsplit("::").next() == Some(last))
                    .map(|(_, v)| v)
            });
        // A wrapper of a name kube-rs's `Api` does not have wraps no API call.
        let Some(method) = method.and_then(|m| ApiMethod::named(m)) else {
            return;
        };
        let args: Vec<&Expr> = c.args.iter().collect();
        let body_has_status = matches!(method, ApiMethod::Patch | ApiMethod::Replace)
            && args.last().is_some_and(|b| self.has_status(b, 0));
        let kind = self.fns.last().and_then(|f| f.model.object_kind.clone());
        let call = self.api_call_here(
            method,
            to_span(self.path, call_extent(c)),
            kind,
            body_has_status,
            key(c.func.span()),
            compact(&c.func),
        );
        self.push_api_call(call);
    }
}
