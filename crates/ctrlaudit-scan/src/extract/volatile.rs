//! Volatile values (`Utc::now()`, uuids, a crate's `fn now_rfc3339()`): the calls that make them, the functions
//! that return them, and where a file sees them carried: into bindings, write bodies, arguments and the closures
//! handed to helpers.

use super::*;

/// Calls that produce a new value every time they run.
pub(super) const VOLATILE: &[(&str, &str)] = &[
    ("Utc", "now"),
    ("Local", "now"),
    ("Timestamp", "now"),
    ("Zoned", "now"),
    ("SystemTime", "now"),
    ("OffsetDateTime", "now_utc"),
    ("Uuid", "new_v4"),
    ("Uuid", "now_v7"),
    ("rand", "random"),
    ("rand", "thread_rng"),
];
/// Whether `text` names a function of [`VOLATILE`]: one automaton searches a function body once, not once per
/// name (an automaton that could not be built says yes, and the body is walked).
pub(super) fn names_volatile(text: &str) -> bool {
    static NAMES: std::sync::LazyLock<Option<aho_corasick::AhoCorasick>> =
        std::sync::LazyLock::new(|| {
            aho_corasick::AhoCorasick::new(VOLATILE.iter().map(|(_, m)| m)).ok()
        });
    NAMES.as_ref().is_none_or(|n| n.is_match(text))
}
/// Methods whose arguments give a value only when there is none: what they stamp is not stamped on every call.
const FALLBACKS: &[&str] = &[
    "unwrap_or",
    "unwrap_or_else",
    "or",
    "or_else",
    "map_or",
    "map_or_else",
    "get_or_insert_with",
    "or_insert_with",
];
/// A method that takes a value only for when there is none: `unwrap_or_else`, `phase_since_or`.
pub(super) fn is_fallback(method: &str) -> bool {
    FALLBACKS.contains(&method) || method.ends_with("_or") || method.ends_with("_or_else")
}
/// At most this many calls of functions the file cannot see into are kept per value (see [`Vol::via`]).
pub(super) const MAX_CANDIDATES: usize = 4;
/// A call of a function the file cannot see into, met in a value: here, or earlier in a variable it reads.
pub(super) enum Cand {
    Call(proc_macro2::Span, String, Option<String>),
    Held(Vol),
}
/// Functions every type has: a call `x.default()` or `T::new()` says nothing about which one runs.
const EVERY_TYPE: &[&str] = &[
    "default",
    "new",
    "from",
    "into",
    "clone",
    "fmt",
    "with_capacity",
];
/// Keywords that a parenthesis may follow without being a call.
const NOT_CALLS: &[&str] = &[
    "match", "if", "while", "return", "in", "move", "for", "let", "as", "mut",
];
/// Finds a volatile call in a token stream: its span, text and the JSON key it sits under. Calls of functions this
/// file does not define (`crd::now_rfc3339()`, `Status::transition_now(..)`) go to `cands`, for the crate join
/// to judge.
pub(super) fn volatile_in_tokens(
    ts: TokenStream,
    vars: &HashMap<String, Var>,
    vfns: &HashMap<String, VolatileFn>,
    key: Option<&str>,
    cands: &mut Vec<Cand>,
) -> Option<(proc_macro2::Span, String, Option<String>, Option<Span>)> {
    let held = Names::of(vars, |v| (!v.volatile.is_empty()).then_some(0));
    volatile_in(ts, vars, &held, vfns, key, cands)
}
/// [`volatile_in_tokens`] with the variables that hold a volatile value (or may) named in `held`.
fn volatile_in(
    ts: TokenStream,
    vars: &HashMap<String, Var>,
    held: &Names,
    vfns: &HashMap<String, VolatileFn>,
    key: Option<&str>,
    cands: &mut Vec<Cand>,
) -> Option<(proc_macro2::Span, String, Option<String>, Option<Span>)> {
    // The key a value goes under: the last `"key":` string met at this level, else the enclosing one.
    let owned = |last: &Option<String>| last.clone().or_else(|| key.map(str::to_owned));
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut last_str: Option<String> = None;
    for (i, t) in toks.iter().enumerate() {
        match t {
            TokenTree::Literal(l) => {
                let s = l.to_string();
                if s.starts_with('"') && toks.get(i + 1).is_some_and(|n| is_punct(n, ':')) {
                    last_str = Some(s.trim_matches('"').to_string());
                }
                // `format!("{now}")`, `format!("{year:04}-..")`: a binding named inside the format string.
                if s.starts_with('"') {
                    for held in inline_format_args(&s).filter_map(|name| vars.get(name)) {
                        match held.volatile.first() {
                            Some(vol) if vol.via.is_none() => {
                                return Some((
                                    l.span(),
                                    vol.source.clone(),
                                    vol.key.clone().or_else(|| key.map(str::to_owned)),
                                    Some(vol.span.clone()),
                                ));
                            }
                            _ => {
                                for vol in &held.volatile {
                                    if cands.len() < MAX_CANDIDATES {
                                        cands.push(Cand::Held(vol.clone()));
                                    }
                                }
                            }
                        }
                    }
                }
            }
            TokenTree::Group(g) => {
                // `.observed_since_or(Utc::now())`, `.unwrap_or_else(|| Utc::now())`: a fallback for a value
                // that is kept when there is one.
                if i >= 2
                    && is_punct(&toks[i - 2], '.')
                    && let TokenTree::Ident(m) = &toks[i - 1]
                    && is_fallback(&m.to_string())
                {
                    continue;
                }
                let k = last_str.as_deref().or(key);
                if let Some(hit) = volatile_in(g.stream(), vars, held, vfns, k, cands) {
                    return Some(hit);
                }
            }
            TokenTree::Ident(id) => {
                let after_dot = i > 0 && is_punct(&toks[i - 1], '.');
                let called = matches!(toks.get(i + 1), Some(TokenTree::Group(g))
                    if g.delimiter() == proc_macro2::Delimiter::Parenthesis);
                let path_follows = toks.get(i + 1).is_some_and(|t| is_punct(t, ':'));
                // A field (`obj.metadata`, `.await`) is none of what is looked for below: no name is made.
                if after_dot && !called && !path_follows {
                    continue;
                }
                // Neither called nor a path's head: only a variable that holds a volatile value is of interest.
                if !called && !path_follows && held.find(id).is_none() {
                    continue;
                }
                let name = id.to_string();
                // `Utc :: now`: ident, ':', ':', ident
                if path_follows && let Some(TokenTree::Ident(f)) = toks.get(i + 3) {
                    let fname = f.to_string();
                    if VOLATILE.iter().any(|(t, m)| *t == name && *m == fname) {
                        // From `Utc` to the call's closing parenthesis, so the whole call is underlined.
                        let whole = match toks.get(i + 4) {
                            Some(TokenTree::Group(args)) => id.span().join(args.span()),
                            _ => id.span().join(f.span()),
                        };
                        return Some((
                            whole.unwrap_or_else(|| id.span()),
                            format!("{name}::{fname}()"),
                            owned(&last_str),
                            None,
                        ));
                    }
                }
                // A call of this file's function that returns a volatile value: `build_status(&obj)`.
                // A clock (`fn now_rfc3339() -> String`) stamps nothing of its own: the call is the source.
                if called && let Some(f) = vfns.get(&name) {
                    return Some((
                        id.span(),
                        format!("{} (in {name})", f.source),
                        owned(&last_str),
                        (!f.clock).then(|| f.span.clone()),
                    ));
                }
                // A function of another file or crate, by its last qualifier: `Status::transition_now`. Tuple
                // structs and variants (`Some(..)`, `Patch::Merge(..)`) start upper-case; methods follow a dot.
                if called
                    && !after_dot
                    && cands.len() < MAX_CANDIDATES
                    && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
                    && !NOT_CALLS.contains(&name.as_str())
                    && !EVERY_TYPE.contains(&name.as_str())
                {
                    let qualifier = match (i.checked_sub(3).map(|q| &toks[q]), i.checked_sub(1)) {
                        (Some(TokenTree::Ident(q)), Some(c)) if is_punct(&toks[c], ':') => {
                            Some(q.to_string())
                        }
                        _ => None,
                    };
                    let callee = match qualifier {
                        Some(q) if q != "crate" && q != "self" => format!("{q}::{name}"),
                        _ => name.clone(),
                    };
                    cands.push(Cand::Call(id.span(), callee, owned(&last_str)));
                }
                if !after_dot && let Some(v) = vars.get(&name) {
                    match v.volatile.first() {
                        Some(vol) if vol.via.is_none() => {
                            return Some((
                                id.span(),
                                vol.source.clone(),
                                vol.key.clone().or_else(|| owned(&last_str)),
                                Some(vol.span.clone()),
                            ));
                        }
                        _ => {
                            for vol in &v.volatile {
                                if cands.len() < MAX_CANDIDATES {
                                    let mut vol = vol.clone();
                                    vol.key = vol.key.or_else(|| owned(&last_str));
                                    cands.push(Cand::Held(vol));
                                }
                            }
                        }
                    }
                }
            }
            TokenTree::Punct(_) => {}
        }
    }
    None
}
impl PrePass<'_, '_, '_> {
    /// Records `name` when its body calls a volatile source and it returns something that can carry the value
    /// (not `()`, `bool`, an `Action` or a duration).
    pub(super) fn volatile_fn(&mut self, name: String, sig: &syn::Signature, block: &syn::Block) {
        if !self.ex.file_names_volatile || EVERY_TYPE.contains(&name.as_str()) {
            return;
        }
        let syn::ReturnType::Type(_, ret) = &sig.output else {
            return;
        };
        // What the walk below can find is named in the body's text: a body that names no volatile source and no
        // function known to return one is not walked (nor its macros parsed), on each of the three passes.
        if let Some(text) = self.ex.block_source(block)
            && !names_volatile(text)
            && !self
                .ex
                .volatile_fns
                .keys()
                .any(|k| text.contains(k.as_str()))
        {
            return;
        }
        let ret = compact(ret);
        if ret == "bool"
            || ["Action", "Duration", "Instant"]
                .iter()
                .any(|t| ret.contains(t))
        {
            return;
        }
        let mut v = UnconditionalVolatile {
            branches: 0,
            found: None,
            known: &self.ex.volatile_fns,
        };
        v.visit_block(block);
        let (span, source) = match v.found {
            Some(Found::Source(sp, src)) => (self.ex.span(sp), src),
            Some(Found::Known(span, src)) => (span, src),
            None => return,
        };
        let clock = sig.inputs.is_empty();
        self.ex.volatile_fns.insert(
            name,
            VolatileFn {
                span,
                source,
                clock,
            },
        );
    }
}

/// Runs [`PrePass::volatile_fn`] over every function again, so that a function returning what another one
/// stamped (`generate_status` → `conditions` → `Utc::now()`) is known too.
pub(super) struct VolatileFnPass<'x, 'a, 'ast> {
    pub(super) pre: PrePass<'x, 'a, 'ast>,
}
impl VolatileFnPass<'_, '_, '_> {
    fn again(&mut self, sig: &syn::Signature, block: &syn::Block) {
        let name = sig.ident.to_string();
        if !self.pre.ex.volatile_fns.contains_key(&name) {
            self.pre.volatile_fn(name, sig, block);
        }
    }
}
impl<'ast> Visit<'ast> for VolatileFnPass<'_, '_, 'ast> {
    fn visit_expr(&mut self, e: &'ast Expr) {
        if !self.pre.ex.budget.spent() {
            visit::visit_expr(self, e);
        }
    }

    fn visit_item(&mut self, i: &'ast syn::Item) {
        if !self.pre.ex.budget.spent() {
            visit::visit_item(self, i);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_code(&f.attrs) {
            self.again(&f.sig, &f.block);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.again(&f.sig, &f.block);
    }
}

/// A function of this file that returns a volatile value (see `FnModel::returns_volatile`).
#[derive(Debug)]
pub(super) struct VolatileFn {
    /// Where the volatile source is called.
    pub(super) span: Span,
    /// The producing expression: `Utc::now()`.
    pub(super) source: String,
    /// Takes no parameters: a clock, whose callers' values are their own.
    pub(super) clock: bool,
}
/// What [`UnconditionalVolatile`] found: a volatile source itself, or a call of a function known to return one.
pub(super) enum Found {
    Source(proc_macro2::Span, String),
    Known(Span, String),
}
/// The first volatile call of a function body that runs whatever the branch: one inside an `if` or `match` arm is
/// how a value is kept unless something changed (a condition's transition time), so it does not count.
pub(super) struct UnconditionalVolatile<'k> {
    branches: usize,
    found: Option<Found>,
    /// This file's functions already known to return a volatile value.
    known: &'k HashMap<String, VolatileFn>,
}
impl UnconditionalVolatile<'_> {
    /// A call of a function known to return a volatile value, at `at`: a clock's value is stamped here.
    fn known_call(&mut self, name: &str, at: proc_macro2::Span) {
        if self.found.is_none()
            && self.branches == 0
            && let Some(f) = self.known.get(name)
        {
            let source = format!("{} (in {name})", f.source);
            self.found = Some(if f.clock {
                Found::Source(at, source)
            } else {
                Found::Known(f.span.clone(), source)
            });
        }
    }
}
impl<'ast> Visit<'ast> for UnconditionalVolatile<'_> {
    // `vec![condition(..)]`, `format!("{}", Utc::now())`: a macro whose body is expressions is looked into.
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        use syn::punctuated::Punctuated;
        if let Ok(args) = m.parse_body_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated) {
            for a in &args {
                self.visit_expr(a);
            }
        }
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let method = m.method.to_string();
        self.known_call(&method, m.method.span());
        // `.unwrap_or_else(|| Time(Timestamp::now()))`: the stamp is the fallback when no earlier one is kept.
        if is_fallback(&method) {
            self.visit_expr(&m.receiver);
            self.branches += 1;
            for a in &m.args {
                self.visit_expr(a);
            }
            self.branches -= 1;
            return;
        }
        visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let Expr::Path(p) = &*c.func
            && let Some(last) = p.path.segments.last()
        {
            self.known_call(&last.ident.to_string(), last.ident.span());
        }
        if self.found.is_none()
            && self.branches == 0
            && let Expr::Path(p) = &*c.func
            && p.path.segments.len() >= 2
        {
            let n = p.path.segments.len();
            let (ty, f) = (
                p.path.segments[n - 2].ident.to_string(),
                p.path.segments[n - 1].ident.to_string(),
            );
            if VOLATILE.iter().any(|(t, m)| *t == ty && *m == f) {
                let span = c
                    .func
                    .span()
                    .join(c.paren_token.span.close())
                    .unwrap_or_else(|| c.func.span());
                self.found = Some(Found::Source(span, format!("{ty}::{f}()")));
            }
        }
        visit::visit_expr_call(self, c);
    }

    fn visit_expr_if(&mut self, i: &'ast syn::ExprIf) {
        self.visit_expr(&i.cond);
        self.branches += 1;
        self.visit_block(&i.then_branch);
        if let Some((_, e)) = &i.else_branch {
            self.visit_expr(e);
        }
        self.branches -= 1;
    }

    fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
        self.visit_expr(&m.expr);
        // Every arm stamps it (`true => Condition { .., now }`, `false => Condition { .., now }`): it is stamped
        // whatever the branch.
        if self.found.is_none() && self.branches == 0 && !m.arms.is_empty() {
            let per_arm: Vec<Option<Found>> = m
                .arms
                .iter()
                .map(|arm| {
                    let mut v = UnconditionalVolatile {
                        branches: 0,
                        found: None,
                        known: self.known,
                    };
                    v.visit_expr(&arm.body);
                    v.found
                })
                .collect();
            if per_arm.iter().all(Option::is_some) {
                self.found = per_arm.into_iter().flatten().next();
                return;
            }
        }
        self.branches += 1;
        for arm in &m.arms {
            self.visit_expr(&arm.body);
        }
        self.branches -= 1;
    }

    fn visit_item_fn(&mut self, _: &'ast syn::ItemFn) {}
}
impl<'ast> Extractor<'_, 'ast> {
    /// What a closure (`arg`, which is `c`) handed to a helper puts into what the helper gives it: a volatile value
    /// anywhere in it, or what its assignments to its own parameters call (`|status| status.last_seen =
    /// Some(now_rfc3339())`). Other calls in it (`status.set_condition(ready(..))`) may keep an earlier value: not
    /// followed.
    fn closure_volatiles(&self, arg: TokenStream, c: &syn::ExprClosure) -> Vec<Vol> {
        let all = self.find_volatile_in([arg]);
        if all.first().is_some_and(|v| v.via.is_none()) {
            return all;
        }
        struct Assigned<'c> {
            params: Vec<String>,
            rhs: Vec<&'c Expr>,
        }
        impl<'c> Visit<'c> for Assigned<'c> {
            fn visit_expr_assign(&mut self, a: &'c syn::ExprAssign) {
                if root_var(&a.left).is_some_and(|r| self.params.contains(&r)) {
                    self.rhs.push(&a.right);
                }
                visit::visit_expr_assign(self, a);
            }
        }
        let mut params = Vec::new();
        for input in &c.inputs {
            pat_idents(input, &mut params);
        }
        let mut v = Assigned {
            params,
            rhs: Vec::new(),
        };
        v.visit_expr(&c.body);
        self.find_volatile(&v.rhs)
    }

    /// The volatile value one of `nodes` carries: the first one the file can see, else up to
    /// [`MAX_CANDIDATES`] calls of functions it cannot see into (each with `via` set).
    pub(super) fn find_volatile(&self, nodes: &[&Expr]) -> Vec<Vol> {
        self.find_volatile_in(nodes.iter().map(|n| n.to_token_stream()))
    }

    /// [`Extractor::find_volatile`] of nodes already printed to tokens.
    pub(super) fn find_volatile_in(
        &self,
        nodes: impl IntoIterator<Item = TokenStream>,
    ) -> Vec<Vol> {
        let Some(f) = self.fns.last() else {
            return Vec::new();
        };
        let mut cands = Vec::new();
        for n in nodes {
            if let Some((sp, src, k, origin)) =
                volatile_in_tokens(n, &f.vars, &self.volatile_fns, None, &mut cands)
            {
                let span = origin.unwrap_or_else(|| self.span(sp));
                return vec![Vol {
                    span,
                    source: src,
                    key: k,
                    via: None,
                }];
            }
        }
        cands
            .into_iter()
            .map(|c| match c {
                Cand::Call(sp, callee, key) => Vol {
                    span: self.span(sp),
                    source: callee.clone(),
                    key,
                    via: Some(callee),
                },
                Cand::Held(v) => v,
            })
            .collect()
    }

    /// Volatile values among a call's arguments, for the crate join to follow into the callee's writes. Not for
    /// kube's own verbs (their bodies are judged where they stand), not behind a compare-before-write guard, and on
    /// a branch only when a helper built the value (`build_status(..)`, which stamps it on every call).
    pub(super) fn record_volatile_args<'e>(
        &mut self,
        callee: String,
        args: impl Iterator<Item = &'e Expr>,
    ) {
        if self.guards > 0 || ApiMethod::named(&callee).is_some() {
            return;
        }
        let branches = self.branches;
        let mut found: Vec<VolatileArg> = Vec::new();
        let mut passes: Vec<ParamPass> = Vec::new();
        let takes_params = self.fns.last().is_some_and(|f| !f.params.is_empty());
        for (index, a) in args.enumerate() {
            let (param, vols) = match plain_arg(a) {
                Some(PlainArg::Inert) => continue,
                // A variable passed as it is carries what its binding holds: looked up, not searched for.
                Some(PlainArg::Var(name)) => {
                    let var = self.var(&name.to_string());
                    let param = var.and_then(|v| v.from_param).filter(|_| takes_params);
                    (param, var.map(Var::held).unwrap_or_default())
                }
                None => {
                    // The argument printed once for both token searches.
                    let tokens = a.to_token_stream();
                    let param = self
                        .fns
                        .last()
                        .filter(|_| takes_params)
                        .and_then(|f| param_in_tokens(tokens.clone(), &f.vars));
                    let vols = match a {
                        Expr::Closure(c) => self.closure_volatiles(tokens, c),
                        _ => self.find_volatile_in([tokens]),
                    };
                    (param, vols)
                }
            };
            if let Some(param) = param {
                passes.push(ParamPass {
                    param,
                    callee: callee.clone(),
                    index,
                });
            }
            for v in vols {
                if branches > 0 && v.via.is_none() && !v.source.contains(" (in ") {
                    continue;
                }
                found.push(VolatileArg {
                    callee: callee.clone(),
                    index,
                    span: v.span,
                    source: v.source,
                    key: v.key,
                    via: v.via,
                });
            }
        }
        if let Some(f) = self.fns.last_mut() {
            f.model.volatile_args.extend(found);
            f.model.param_passes.extend(passes);
        }
    }
}
