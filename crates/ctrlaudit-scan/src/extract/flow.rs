//! Values and their flow within a file: what a binding or parameter carries into a write body, the guards that
//! hold a write back, and the pre-pass over the file (consts, CRD types, `Api<K>` fields, functions that return
//! volatile values).

use super::*;

/// An `if` condition that guards a write: compares old with new or checks presence, and is not a plain count
/// against a number (`if pool.spec.desired > 0`) or an emptiness test, which say which path runs, not whether
/// anything changed.
pub(super) fn is_write_guard(cond: &Expr) -> bool {
    is_write_guard_text(cond, &compact(cond))
}
/// [`is_write_guard`] of a condition whose compact text is at hand.
pub(super) fn is_write_guard_text(cond: &Expr, text: &str) -> bool {
    let number = |e: &Expr| matches!(e, Expr::Lit(l) if matches!(l.lit, syn::Lit::Int(_) | syn::Lit::Float(_)));
    // `if !preconditions.is_empty()`: whether there is anything to do, not whether it changed.
    let inner = match cond {
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => &*u.expr,
        other => other,
    };
    if matches!(inner, Expr::MethodCall(m) if m.method == "is_empty") {
        return false;
    }
    if let Expr::Binary(b) = cond
        && matches!(
            b.op,
            syn::BinOp::Gt(_) | syn::BinOp::Lt(_) | syn::BinOp::Ge(_) | syn::BinOp::Le(_)
        )
        && (number(&b.left) || number(&b.right))
    {
        return false;
    }
    is_change_guard(text)
}
/// A condition that compares old with new, or checks presence: the shape of a write guard.
pub(super) fn is_change_guard(cond: &str) -> bool {
    ["==", "!=", "is_none", "is_some", "contains_key", "<", ">"]
        .iter()
        .any(|t| cond.contains(t))
        || [
            "changed", "differ", "needs", "should", "stale", "outdated", "expired", "elapsed",
        ]
        .iter()
        .any(|w| cond.to_ascii_lowercase().contains(w))
}
/// The variables a token search looks for, by name: an identifier is compared with them in place rather than
/// printed to a `String` for a map lookup (printing every identifier was most of the searches' cost). Past a few
/// dozen names the map is asked instead.
pub(super) struct Names<'v> {
    wanted: Vec<(&'v str, usize)>,
    /// The map and what is picked from each variable, when there are too many names to compare one by one.
    many: Option<(&'v HashMap<String, Var<'v>>, Pick)>,
}
/// What a token search takes from a variable (see [`Names::of`]).
type Pick = fn(&Var) -> Option<usize>;
impl<'v> Names<'v> {
    const MAX_LINEAR: usize = 24;

    /// The variables of `vars` for which `pick` gives a value.
    pub(super) fn of(vars: &'v HashMap<String, Var<'v>>, pick: Pick) -> Self {
        let wanted: Vec<(&str, usize)> = vars
            .iter()
            .filter_map(|(n, v)| pick(v).map(|p| (n.as_str(), p)))
            .collect();
        let many = (wanted.len() > Self::MAX_LINEAR).then_some((vars, pick));
        Self { wanted, many }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.wanted.is_empty()
    }

    /// The value picked for the variable `id` names, if it is one of them.
    pub(super) fn find(&self, id: &proc_macro2::Ident) -> Option<usize> {
        match self.many {
            Some((vars, pick)) => vars.get(&id.to_string()).and_then(pick),
            None => self.wanted.iter().find(|(n, _)| id == n).map(|(_, p)| *p),
        }
    }
}
/// The first variable in a token stream that comes from a parameter (not a field or method name after a `.`).
pub(super) fn param_in_tokens(ts: TokenStream, vars: &HashMap<String, Var>) -> Option<usize> {
    let names = Names::of(vars, |v| v.from_param);
    if names.is_empty() {
        return None;
    }
    param_in(ts, &names)
}
fn param_in(ts: TokenStream, names: &Names) -> Option<usize> {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    for (i, t) in toks.iter().enumerate() {
        match t {
            TokenTree::Group(g) => {
                if let Some(p) = param_in(g.stream(), names) {
                    return Some(p);
                }
            }
            TokenTree::Ident(id) => {
                let after_dot = i > 0 && is_punct(&toks[i - 1], '.');
                if !after_dot && let Some(p) = names.find(id) {
                    return Some(p);
                }
            }
            _ => {}
        }
    }
    None
}
/// The first variable in a token stream that holds a parameter's whole value and is used whole: not followed by
/// a field (`status.phase`), though a method call (`status.clone()`) keeps it whole.
pub(super) fn whole_param_in_tokens(ts: TokenStream, vars: &HashMap<String, Var>) -> Option<usize> {
    let names = Names::of(vars, |v| v.whole_param);
    if names.is_empty() {
        return None;
    }
    whole_param_in(ts, &names)
}
fn whole_param_in(ts: TokenStream, names: &Names) -> Option<usize> {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    for (i, t) in toks.iter().enumerate() {
        match t {
            TokenTree::Group(g) => {
                if let Some(p) = whole_param_in(g.stream(), names) {
                    return Some(p);
                }
            }
            TokenTree::Ident(id) => {
                let after_dot = i > 0 && is_punct(&toks[i - 1], '.');
                let field_follows = toks.get(i + 1).is_some_and(|n| is_punct(n, '.'))
                    && matches!(toks.get(i + 2), Some(TokenTree::Ident(_)))
                    && !matches!(toks.get(i + 3), Some(TokenTree::Group(g))
                        if g.delimiter() == proc_macro2::Delimiter::Parenthesis);
                if !after_dot
                    && !field_follows
                    && let Some(p) = names.find(id)
                {
                    return Some(p);
                }
            }
            _ => {}
        }
    }
    None
}
/// An `if` condition that says the branch runs because something was just written or changed: a write-like call
/// in it (`if ensure_admin_secret(..).await? {`) or a flag named for it (`if require_status_update {`).
pub(super) fn signals_change(cond_text: &str) -> bool {
    let text = cond_text.to_ascii_lowercase();
    let flag = [
        "changed",
        "require_status_update",
        "updated",
        "modified",
        "created",
        "applied",
    ]
    .iter()
    .any(|w| text.contains(w));
    let calls = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '('))
        .filter_map(|w| w.split_once('(').map(|(name, _)| name))
        .any(|name| !name.is_empty() && is_write_like(name));
    flag || calls
}
pub(super) fn macro_has_status_key(m: &syn::Macro) -> bool {
    let last = last_ident(&m.path);
    if last != "json" {
        return false;
    }
    // The body is `{ "k": v, ... }`: look at the top level keys of the outermost object.
    let toks: Vec<TokenTree> = m.tokens.clone().into_iter().collect();
    let obj = match toks.as_slice() {
        [TokenTree::Group(g)] if g.delimiter() == proc_macro2::Delimiter::Brace => g.stream(),
        _ => return false,
    };
    let toks: Vec<TokenTree> = obj.into_iter().collect();
    let mut at_key = true;
    for (i, t) in toks.iter().enumerate() {
        match t {
            TokenTree::Punct(p) if p.as_char() == ',' => at_key = true,
            TokenTree::Literal(l) if at_key => {
                if l.to_string() == "\"status\""
                    && toks.get(i + 1).is_some_and(|n| is_punct(n, ':'))
                {
                    return true;
                }
                at_key = false;
            }
            _ => at_key = false,
        }
    }
    false
}
/// Collects what needs the whole file before the main walk: consts, CRD types, `Api<K>` fields.
pub(super) struct PrePass<'x, 'a, 'ast> {
    pub(super) ex: &'x mut Extractor<'a, 'ast>,
}
impl<'ast> Visit<'ast> for PrePass<'_, '_, '_> {
    fn visit_expr(&mut self, e: &'ast Expr) {
        if !self.ex.budget.spent() {
            visit::visit_expr(self, e);
        }
    }

    fn visit_item(&mut self, i: &'ast syn::Item) {
        if !self.ex.budget.spent() {
            visit::visit_item(self, i);
        }
    }

    fn visit_item_const(&mut self, c: &'ast syn::ItemConst) {
        let v = lower::value(&c.expr, &lower::no_locals);
        let v = v
            .number(&self.ex.consts, &unbound)
            .or_else(|| v.secs(&self.ex.consts, &unbound));
        if let Some(v) = v {
            self.ex.consts.insert(c.ident.to_string(), v);
        }
    }
    fn visit_item_static(&mut self, c: &'ast syn::ItemStatic) {
        if let Some(v) = lower::value(&c.expr, &lower::no_locals).secs(&self.ex.consts, &unbound) {
            self.ex.consts.insert(c.ident.to_string(), v);
        }
    }
    fn visit_item_enum(&mut self, e: &'ast syn::ItemEnum) {
        self.ex.local_types.insert(e.ident.to_string());
        visit::visit_item_enum(self, e);
    }
    fn visit_item_type(&mut self, t: &'ast syn::ItemType) {
        self.ex.local_types.insert(t.ident.to_string());
        visit::visit_item_type(self, t);
    }
    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        self.ex.local_types.insert(s.ident.to_string());
        for f in &s.fields {
            if let (Some(name), Some(Some(kind))) = (&f.ident, api_kind_of_type(&f.ty)) {
                self.ex.api_fields.insert(name.to_string(), kind);
            }
        }
        let derives_cr = s
            .attrs
            .iter()
            .any(|a| a.path().is_ident("derive") && compact(&a.meta).contains("CustomResource"));
        if derives_cr {
            let mut kind = None;
            let mut has_status = false;
            for a in s.attrs.iter().filter(|a| a.path().is_ident("kube")) {
                let t = a.meta.to_token_stream().to_string();
                if let Some(k) = attr_value(&t, "kind") {
                    kind = Some(k);
                }
                if attr_value(&t, "status").is_some() {
                    has_status = true;
                }
            }
            if let Some(kind) = kind {
                let span = self.ex.span(s.ident.span());
                self.ex.model.crds.push(CrdDecl {
                    kind,
                    has_status,
                    span,
                });
            }
        }
        visit::visit_item_struct(self, s);
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_code(&f.attrs) {
            self.volatile_fn(f.sig.ident.to_string(), &f.sig, &f.block);
        }
        let ret = compact(&f.sig.output);
        if ret.starts_with("->Controller<") || ret.contains("::Controller<") {
            let body = self.ex.block_text(&f.block);
            let params: Vec<String> = f
                .sig
                .inputs
                .iter()
                .filter_map(|i| match i {
                    FnArg::Typed(pt) => pat_ident(&pt.pat),
                    FnArg::Receiver(_) => None,
                })
                .collect();
            let stream_param = body.split("for_stream(").nth(1).and_then(|rest| {
                let arg = rest.split([',', ')']).next()?;
                params.iter().position(|p| p == arg)
            });
            self.ex.controller_builders.insert(
                f.sig.ident.to_string(),
                ControllerBuilder {
                    steps: stream_steps([StreamNode::Block(&f.block)]),
                    configured: body.contains(".with_config("),
                    stream_param,
                },
            );
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.volatile_fn(f.sig.ident.to_string(), &f.sig, &f.block);
    }
}

impl<'ast> Extractor<'_, 'ast> {
    pub(super) fn has_status(&self, e: &Expr, depth: usize) -> bool {
        if depth > 4 {
            return false;
        }
        match e {
            Expr::Reference(r) => self.has_status(&r.expr, depth + 1),
            Expr::Paren(p) => self.has_status(&p.expr, depth + 1),
            Expr::Macro(m) => macro_has_status_key(&m.mac),
            Expr::Call(c) => c.args.iter().any(|a| self.has_status(a, depth + 1)),
            Expr::MethodCall(m) => self.has_status(&m.receiver, depth + 1),
            Expr::Struct(s) => s.fields.iter().any(|f| {
                matches!(&f.member, syn::Member::Named(i) if i == "status")
                    && compact(&f.expr) != "None"
            }),
            Expr::Path(p) if p.path.segments.len() == 1 => {
                let Some(v) = self.var(&p.path.segments[0].ident.to_string()) else {
                    return false;
                };
                v.status_set
                    || v.init
                        .as_ref()
                        .is_some_and(|i| self.has_status(i, depth + 1))
            }
            _ => false,
        }
    }

    /// The parameter whose whole value one of `nodes` holds (see `Var::whole_param`).
    pub(super) fn whole_param_in(&self, nodes: &[&Expr]) -> Option<usize> {
        let vars = &self.fns.last()?.vars;
        nodes
            .iter()
            .find_map(|n| whole_param_in_tokens(n.to_token_stream(), vars))
    }

    /// A guard on the path to what follows: `guards` counts it, `guard_params` says what it compares.
    pub(super) fn push_guard(&mut self, cond: &Expr) {
        self.guards += 1;
        let whole = self.whole_param_in(&[cond]);
        self.guard_params.push(whole);
    }

    pub(super) fn pop_guard(&mut self) {
        self.guards -= 1;
        self.guard_params.pop();
    }

    /// Every guard around the node being visited compares the whole value of parameter `param`: a value handed
    /// in with a fresh timestamp makes each of them differ, so they hold nothing back.
    pub(super) fn only_self_compared(&self, param: usize) -> bool {
        self.guards > 0 && self.guard_params.iter().all(|g| *g == Some(param))
    }

    /// `mutate(&mut status)` where `mutate` is a parameter (a closure the caller hands in): what the call fills
    /// in comes from that parameter, whatever it was built from before.
    pub(super) fn note_param_call<'e>(
        &mut self,
        p: &syn::Path,
        args: impl Iterator<Item = &'e Expr>,
    ) {
        let Some(name) = p.get_ident().map(|i| i.to_string()) else {
            return;
        };
        let Some(f) = self.fns.last_mut() else {
            return;
        };
        let Some(param) = f
            .vars
            .get(&name)
            .filter(|v| !v.is_api && f.params.contains(&name))
            .and_then(|v| v.from_param)
        else {
            return;
        };
        for a in args {
            if let Some(v) = root_var(a).and_then(|n| f.vars.get_mut(&n)) {
                v.from_param = Some(param);
                v.whole_param = Some(param);
            }
        }
    }

    /// The parameter (by position) that one of `nodes` is built from, through `let` bindings.
    pub(super) fn param_in(&self, nodes: &[&Expr]) -> Option<usize> {
        let vars = &self.fns.last()?.vars;
        nodes
            .iter()
            .find_map(|n| param_in_tokens(n.to_token_stream(), vars))
    }
}

impl Extractor<'_, '_> {
    /// A struct literal: `Self { .. }` may store a Controller in the type (see `note_stored_controller`), and the
    /// fields of a `…Spec`/`…Reference` literal are what CA206 compares between writers.
    pub(super) fn note_struct_literal(&mut self, s: &syn::ExprStruct) {
        let ty = last_ident(&s.path);
        if ty == "Self" {
            let values: Vec<&Expr> = s.fields.iter().map(|f| &f.expr).collect();
            self.note_stored_controller(&values);
        }
        if ty.ends_with("Spec") || ty.ends_with("Reference") {
            let fields: Vec<FieldInit> = s
                .fields
                .iter()
                .filter_map(|f| match &f.member {
                    syn::Member::Named(n) => Some(FieldInit {
                        ty: ty.clone(),
                        field: n.to_string(),
                        value: compact(&f.expr).chars().take(120).collect(),
                        span: to_span(self.path, f.span()),
                    }),
                    syn::Member::Unnamed(_) => None,
                })
                .collect();
            if let Some(f) = self.fns.last_mut() {
                f.model.spec_fields.extend(fields);
            }
        }
    }
}
